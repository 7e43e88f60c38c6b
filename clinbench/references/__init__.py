"""The references of the normalised score: the random floor and the oracle planner,
per task, computed by ``experiments/compute_reference_scores.py``. Kept outside
``clinbench.env`` so that no environment package imports an agent."""
