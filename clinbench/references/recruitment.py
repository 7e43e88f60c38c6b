"""The recruitment family's reference planner for the normalisation references.

The references are the mean scores of ``random`` and of this planner over
``REFERENCE_SEEDS``, with their standard errors
(:func:`clinbench.references.reference_scores`), stored in ``recruitment_scores.py``
with the task version they belong to.
"""

from __future__ import annotations

from typing import Any

from clinbench.agents.context import AgentContext
from clinbench.agents.reference_planner import ReferencePlanner


def PLANNER(context: AgentContext, env: Any) -> ReferencePlanner:
    """The oracle planner, handed the episode's hidden world explicitly."""
    return ReferencePlanner(context, world=lambda: env.world)
