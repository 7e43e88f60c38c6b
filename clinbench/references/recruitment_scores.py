"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``. Each reference
is a policy's mean score over world seeds 100000..100999 (1000 worlds),
with its standard error (``<policy>_se``) and the number of worlds (``worlds``):
0 on the normalised scale is random's mean on these worlds, 1 the planner's.
"""

TASK_VERSION = 2
#: clinbench's version and a hash of the sources that computed these numbers
CODE = '0.1.0+9a3eaccd1137'

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'easy_bench': {
        'random': 0.040501841071428575,
        'reference_planner': 0.8063870244047618,
        'random_se': 0.0009839312115782091,
        'reference_planner_se': 0.0006247863786573161,
        'worlds': 1000,
    },
    'medium_bench': {
        'random': 0.01833921625,
        'reference_planner': 0.73663254625,
        'random_se': 0.0005860654016205445,
        'reference_planner_se': 0.0018910980417017453,
        'worlds': 1000,
    },
    'hard_bench': {
        'random': 0.007731756787330317,
        'reference_planner': 0.7455004182063851,
        'random_se': 0.00042026281156235694,
        'reference_planner_se': 0.0015566736410675434,
        'worlds': 1000,
    },
}
