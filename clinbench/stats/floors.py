"""The smallest p-value an exact rank test can return, and whether a Holm family can pass.

With few seeds an exact rank test has a floor: no data, however extreme, give a smaller
p. If that floor exceeds Holm's first threshold ``alpha / m`` nothing in the family can
ever be significant, and the report must say so rather than print "no difference".
Floors assume no ties (ties make the test fall back to an approximation).
"""

from __future__ import annotations

import math


def wilcoxon_floor(n_pairs: int) -> float:
    """Two-sided exact signed-rank floor ``2 / 2^n``: all differences of one sign (n = 5 -> 0.0625).

    Reference: Wilcoxon, "Individual Comparisons by Ranking Methods", Biometrics Bulletin 1 (1945).
    """
    if n_pairs < 1:
        raise ValueError(f"need at least one pair, got {n_pairs}")
    return min(1.0, 2.0 / 2.0**n_pairs)


def mann_whitney_floor(n: int, m: int) -> float:
    """Two-sided exact Mann-Whitney floor ``2 / C(n+m, n)``, reached at complete separation.

    5 vs 5 -> 2 / 252 = 0.0079.
    """
    if n < 1 or m < 1:
        raise ValueError(f"need at least one value per group, got {n} and {m}")
    return min(1.0, 2.0 / math.comb(n + m, n))


def family_can_reach_alpha(floor: float, m: int, alpha: float = 0.05) -> bool:
    """Whether Holm over ``m`` comparisons can reject anything (smallest p ``<= alpha / m``)."""
    if m < 1:
        raise ValueError(f"a family needs at least one comparison, got {m}")
    return floor <= alpha / m


def floor_warning(test: str, floor: float, m: int, alpha: float = 0.05) -> str | None:
    """A sentence for the report when ``test`` can never pass Holm over ``m`` comparisons."""
    if family_can_reach_alpha(floor, m, alpha):
        return None
    if m == 1:
        return (
            f"{test} cannot give p below {floor:.4g}, above alpha = {alpha:g}: "
            "it can never be significant with this many seeds."
        )
    return (
        f"{test} cannot give p below {floor:.4g}, but Holm over {m} comparisons needs "
        f"p <= {alpha / m:.4g} (alpha = {alpha:g}) for the smallest p: "
        "no comparison in this family can be significant with this many seeds."
    )
