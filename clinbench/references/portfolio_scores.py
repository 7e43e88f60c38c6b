"""Normalisation references per task (generated: do not edit by hand).

Regenerate with ``python experiments/compute_reference_scores.py``. Each reference
is a policy's mean score over world seeds 100000..100999 (1000 worlds),
with its standard error (``<policy>_se``) and the number of worlds (``worlds``):
0 on the normalised scale is random's mean on these worlds, 1 the planner's.
"""

TASK_VERSION = 1
#: clinbench's version and a hash of the sources that computed these numbers
CODE = '0.1.0+58495f2df830'

REFERENCE_SCORES: dict[str, dict[str, float]] = {
    'develop': {
        'random': 0.030251548642686026,
        'reference_planner': 0.16656545879669207,
        'random_se': 0.0042075259601233594,
        'reference_planner_se': 0.010623321380276649,
        'worlds': 1000,
    },
    'develop_post_cutoff': {
        'random': 0.023145826343291553,
        'reference_planner': 0.15112717469966752,
        'random_se': 0.0036234217064971125,
        'reference_planner_se': 0.010206952766727676,
        'worlds': 1000,
    },
}
