"""The online score: the program's risk-adjusted value on its own scale, in [0, 1].

``value`` is the discounted value of the approvals won and ``cost`` the discounted
trial costs (at the program's start, annual rate ``discount_rate``); ``npv`` their
difference, the realised value. The score replaces each Phase III's realised verdict
by its chance under the truth (``rvalue``: every Phase III started credits
P(success) x P(approval) x the indication's value, discounted to its realised
decision date), as risk-adjusted NPV does. Since a trial's luck is independent of the
decision to start it, ``rnpv = rvalue - cost`` has the same expectation as ``npv``
under any policy, without the coin flips of the last two steps.

``score = clip(rnpv / (ev + score_floor), 0, 1)``: ``ev`` is the value a developer who
knew the truth would expect at the start (``value.expected_value``: 0 for a program
not worth developing), ``score_floor`` ($M) keeps programs of almost no value from
inflating the ratio. So each program counts on its own scale (a breast cancer
first-line approval does not drown the rest), a loss scores 0, and doing nothing or
stopping at once scores exactly 0. Everything the score reads from the truth is paid
at the end of the episode (:mod:`clinbench.env.portfolio.simulator`), so no reward
reveals it mid-episode.
"""

from __future__ import annotations

from clinbench.env.portfolio.calendar import discount
from clinbench.env.portfolio.state import ProgramState
from clinbench.env.portfolio.value import approval_probability, pass_probability


def risk_adjusted_value(state: ProgramState) -> float:
    """Every Phase III's chance of approval times its indication's discounted value."""
    program, total = state.program, 0.0
    p, start = program.params, program.start_month
    for t in state.trials:
        d = t.design
        if d.phase != 3:
            continue
        chance = pass_probability(program, d, t.start_month) * approval_probability(
            program, d, t.start_month)
        ind = program.indications[program.index_of[d.indication]]
        when = t.outcome.readout_month + t.outcome.review_months
        total += chance * ind.value * discount(when - start, p.discount_rate)
    return total


def score_parts(state: ProgramState, ev: float) -> dict[str, float]:
    """Value, cost, npv, their risk-adjusted forms and the score, once every pending
    readout and review is played out (``ev``: ``value.expected_value`` of the program)."""
    parts = state.value_parts()
    npv = parts["value"] - parts["cost"]
    rvalue = risk_adjusted_value(state)
    rnpv = rvalue - parts["cost"]
    scale = ev + state.program.params.score_floor
    return {
        **parts,
        "npv": npv,
        "rvalue": rvalue,
        "rnpv": rnpv,
        "ev": ev,
        "score": min(1.0, max(0.0, rnpv / scale)),
    }
