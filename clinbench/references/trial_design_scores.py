"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``. Each reference
is a policy's mean score over world seeds 100000..100999 (1000 worlds),
with its standard error (``<policy>_se``) and the number of worlds (``worlds``):
0 on the normalised scale is random's mean on these worlds, 1 the planner's.
"""

TASK_VERSION = 2
#: clinbench's version and a hash of the sources that computed these numbers
CODE = '0.1.0+832fce593587'

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'effective_drug': {
        'random': 0.15875755994439789,
        'reference_planner': 0.7467451250000001,
        'random_se': 0.008590238230405991,
        'reference_planner_se': 0.004904345844505859,
        'worlds': 1000,
    },
    'efficacy_safety': {
        'random': 0.08865003379424016,
        'reference_planner': 0.7215891673094582,
        'random_se': 0.006621055823988442,
        'reference_planner_se': 0.007027168419684478,
        'worlds': 1000,
    },
    'rare_disease': {
        'random': 0.09861120370396782,
        'reference_planner': 0.40032999999999996,
        'random_se': 0.007079043195610646,
        'reference_planner_se': 0.011883757538661,
        'worlds': 1000,
    },
}
