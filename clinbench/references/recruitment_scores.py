"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``; the means are
over world seeds 100000..100099 (100 seeds).
"""

TASK_VERSION = 2

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'easy_bench': {
        'random': 0.03683153571428571,
        'reference_planner': 0.8067148214285714,
    },
    'medium_bench': {
        'random': 0.0177181,
        'reference_planner': 0.7352638611111111,
    },
    'hard_bench': {
        'random': 0.008951012443438914,
        'reference_planner': 0.7444155191050781,
    },
}
