"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``; the means are
over world seeds 100000..100099 (100 seeds).
"""

TASK_VERSION = 1

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'effective_drug': {
        'random': 0.1381391201646078,
        'reference_planner': 0.7486112499999998,
    },
    'efficacy_safety': {
        'random': 0.09697325058606517,
        'reference_planner': 0.7542977924701562,
    },
    'rare_disease': {
        'random': 0.1513653347892655,
        'reference_planner': 0.4186533333333333,
    },
}
