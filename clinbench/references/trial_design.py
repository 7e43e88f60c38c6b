"""The trial_design family's reference planner for the normalisation references.

The references are the mean scores of ``random`` and of this planner over
``REFERENCE_SEEDS``, with their standard errors
(:func:`clinbench.references.reference_scores`), stored in ``trial_design_scores.py``
with the task version they belong to.
"""

from __future__ import annotations

from typing import Any

from clinbench.agents.context import AgentContext
from clinbench.agents.trial_design.reference_planner import TrialReferencePlanner


def PLANNER(context: AgentContext, env: Any) -> TrialReferencePlanner:
    """The oracle planner, handed the episode's hidden world explicitly."""
    return TrialReferencePlanner(context, world=lambda: env.world)
