"""The recruitment score (spec section 6), one pure function.

The per-step reward is the change of this same function evaluated on the current
state, so the undiscounted return of an episode equals its final score.
"""

from __future__ import annotations


def score_parts(
    net_enrolled: int,
    target: int,
    budget_remaining: float,
    initial_budget: float,
    day_target_reached: int | None,
    horizon: int,
) -> dict[str, float]:
    """E, B, T and the score ``E * (0.75 + 0.15 B + 0.10 T)``.

    E = min(1, net / target); B = budget left / initial budget; T = 1 - day / horizon
    where ``day_target_reached`` is the day the net count last rose to the target while
    it is still at or above it (None otherwise), so T is earned only by a target held.
    """
    e = min(1.0, max(net_enrolled, 0) / target)
    b = budget_remaining / initial_budget
    t = 1.0 - day_target_reached / horizon if day_target_reached is not None else 0.0
    return {"enrolment": e, "budget": b, "time": t, "score": e * (0.75 + 0.15 * b + 0.10 * t)}


def score(
    net_enrolled: int,
    target: int,
    budget_remaining: float,
    initial_budget: float,
    day_target_reached: int | None,
    horizon: int,
) -> float:
    """The scalar score in [0, 1] of :func:`score_parts`, without building a dict."""
    if net_enrolled <= 0:
        return 0.0
    return score_parts(
        net_enrolled, target, budget_remaining, initial_budget, day_target_reached, horizon
    )["score"]
