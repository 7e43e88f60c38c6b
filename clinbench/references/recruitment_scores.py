"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``; the means are
over world seeds 100000..100099 (100 seeds).
"""

TASK_VERSION = 1

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'easy_bench': {
        'random': 0.08992839285714287,
        'reference_planner': 0.8042774246031746,
    },
    'medium_bench': {
        'random': 0.035549487500000004,
        'reference_planner': 0.7584076513888889,
    },
    'hard_bench': {
        'random': 0.0175222875,
        'reference_planner': 0.46922934374999997,
    },
}
