"""The portfolio family's reference planner for the normalisation references.

The references are the mean scores of ``random`` and of this planner over
``REFERENCE_SEEDS``, with their standard errors
(:func:`clinbench.references.reference_scores`), stored in ``portfolio_scores.py``
with the task version they belong to.
"""

from __future__ import annotations

from typing import Any

from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio.reference_planner import PortfolioReferencePlanner


def PLANNER(context: AgentContext, env: Any) -> PortfolioReferencePlanner:
    """The expected-value planner, handed the episode's hidden program explicitly."""
    return PortfolioReferencePlanner(context, world=lambda: env.world)
