"""The online score: risk-adjusted value of the program, in [0, 1].

``npv`` = discounted value of the approvals won minus discounted trial costs (at the
program's start, annual rate ``discount_rate``). The score is ``max(0, npv) / v_max``,
with ``v_max`` the value of approving every candidate indication as early as the
fastest trials allow at no cost: an upper bound no policy reaches, so the score is in
[0, 1]. Doing nothing (or stopping at once) scores exactly 0; the report normalises
between ``random`` and the planner that reads the latent truth.
"""

from __future__ import annotations

from clinbench.env.portfolio.calendar import discount
from clinbench.env.portfolio.state import ProgramState
from clinbench.env.portfolio.world import Program


def fastest_approval_months(program: Program) -> int:
    """Months from the start to the earliest possible approval (shortest phases, review)."""
    p = program.params
    return sum(lo for lo, _ in p.duration_months) + p.review_months[0]


def v_max(program: Program) -> float:
    p = program.params
    d = discount(fastest_approval_months(program), p.discount_rate)
    return sum(ind.value for ind in program.indications) * d


def score_parts(state: ProgramState, month: int | None = None) -> dict[str, float]:
    """Value, cost, npv and score of the program as it stands at ``month``."""
    parts = state.value_parts(month)
    npv = parts["value"] - parts["cost"]
    return {**parts, "npv": npv, "score": max(0.0, npv) / v_max(state.program)}
