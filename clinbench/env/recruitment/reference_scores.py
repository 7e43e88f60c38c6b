"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``; the means are
over world seeds 100000..100099 (100 seeds).
"""

TASK_VERSION = 1

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'easy_bench': {
        'random': 0.08217298214285712,
        'reference_planner': 0.804595890873016,
    },
    'medium_bench': {
        'random': 0.028465600000000008,
        'reference_planner': 0.7587743652777778,
    },
    'hard_bench': {
        'random': 0.0171013125,
        'reference_planner': 0.46901925000000005,
    },
}
