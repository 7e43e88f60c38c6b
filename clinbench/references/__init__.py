"""The references of the normalised score, and its one formula.

Each environment family stores the random floor and its oracle planner's mean score per
task (``Family.references`` names the module; e.g. ``recruitment_scores.py``, computed by
``experiments/compute_reference_scores.py``). Kept outside ``clinbench.env`` so that no
environment package imports an agent.
"""

from __future__ import annotations

from typing import Any

#: How a score is normalised (the report states it).
FORMULA = "(score - random) / (reference_planner - random), fixed per task version"


def normalise(score: Any, random: Any, planner: Any) -> Any:
    """``(score - random) / (planner - random)``: 0 is the random floor, 1 the planner.

    Works on floats and element-wise on arrays or pandas Series; never a min-max over
    the agents being compared.
    """
    return (score - random) / (planner - random)
