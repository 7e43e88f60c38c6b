"""Power of the two-sided t-tests, exact through the noncentral t distribution.

A design maps the number of seeds ``n`` to the t-test's degrees of freedom and the
factor turning the standardised effect into the noncentrality parameter:
two independent groups of ``n`` (``df = 2n - 2``, ``nc = d sqrt(n/2)``) or ``n`` pairs
(``df = n - 1``, ``nc = d_z sqrt(n)``, ``d_z`` = mean difference / sd of differences).
Reference: Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.
(1988), chapter 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import optimize
from scipy import stats as sps

Design = Callable[[int], tuple[int, float]]


def _two_sample(n: int) -> tuple[int, float]:
    return 2 * n - 2, math.sqrt(n / 2)


def _paired(n: int) -> tuple[int, float]:
    return n - 1, math.sqrt(n)


def _check(alpha: float, power: float | None = None) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if power is not None and not alpha < power < 1.0:
        raise ValueError(f"power must lie in (alpha, 1), got {power}")


def _power(design: Design, d: float, n: int, alpha: float) -> float:
    """``P(|T| > t_{df,1-alpha/2})`` for ``T ~ nct(df, nc)``.

    The lower tail is taken as ``P(T' > t)`` with ``T' ~ nct(df, -nc)``: scipy's
    ``nct.cdf(-t, df, nc)`` returns NaN for large ``nc``, the mirrored form does not.
    """
    _check(alpha)
    if n < 2:
        raise ValueError(f"need at least 2 seeds, got {n}")
    df, scale = design(n)
    crit = sps.t.isf(alpha / 2, df)  # not ppf(1 - alpha / 2): 1 - 1e-17 rounds to 1
    nc = abs(d) * scale
    result = float(sps.nct.sf(crit, df, nc) + sps.nct.sf(crit, df, -nc))
    if not math.isfinite(result) and nc > 10 * crit + 40:
        return (
            1.0  # scipy's nct fails far out in the tail, where the power is 1 to double precision
        )
    if not math.isfinite(result):
        raise FloatingPointError(f"power is not finite at d={d}, n={n}, alpha={alpha}")
    return min(result, 1.0)


def _minimum_detectable_effect(design: Design, n: int, alpha: float, power: float) -> float:
    """Smallest standardised effect reaching ``power``, by Brent's root search."""
    _check(alpha, power)

    def gap(d: float) -> float:
        return _power(design, d, n, alpha) - power

    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 1e12:
            raise FloatingPointError(
                f"no effect below 1e12 reaches power {power} at n={n}, alpha={alpha}"
            )
    return float(optimize.brentq(gap, 0.0, hi, xtol=1e-12))


def _seeds_needed(design: Design, d: float, alpha: float, power: float, max_n: int) -> int | None:
    """Smallest ``n`` with power >= target: doubling from 2 to bracket it, then bisection
    (power grows with ``n``; a large effect is settled in a few steps)."""
    _check(alpha, power)
    if math.isnan(d) or d == 0:
        return None
    if math.isinf(d):
        return 2
    lo, hi = 1, 2  # power(lo) < target (or lo below the minimum); hi is the candidate
    while _power(design, d, hi, alpha) < power:
        if hi >= max_n:
            return None
        lo, hi = hi, min(2 * hi, max_n)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 2 and _power(design, d, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def two_sample_power(d: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided two-sample t-test with ``n`` seeds per agent at effect ``d``."""
    return _power(_two_sample, d, n, alpha)


def minimum_detectable_effect(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest Cohen's d the two-sample t-test detects with ``power`` at ``n`` seeds per agent."""
    return _minimum_detectable_effect(_two_sample, n, alpha, power)


def seeds_needed(
    d: float, alpha: float = 0.05, power: float = 0.8, max_n: int = 100_000
) -> int | None:
    """Seeds per agent for the two-sample t-test to detect ``d`` with ``power``.

    None when ``d`` is 0 or NaN, or when even ``max_n`` seeds are not enough.
    """
    return _seeds_needed(_two_sample, d, alpha, power, max_n)


def paired_power(d_z: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with ``n`` pairs at effect ``d_z``."""
    return _power(_paired, d_z, n, alpha)


def paired_minimum_detectable_effect(n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest ``d_z`` the paired t-test detects with ``power`` at ``n`` pairs."""
    return _minimum_detectable_effect(_paired, n, alpha, power)


def paired_seeds_needed(
    d_z: float, alpha: float = 0.05, power: float = 0.8, max_n: int = 100_000
) -> int | None:
    """Pairs (seeds) for the paired t-test to detect ``d_z``; None as in ``seeds_needed``."""
    return _seeds_needed(_paired, d_z, alpha, power, max_n)


#: Power figures of each t-test of ``hypothesis_tests.T_TESTS``: (power, smallest
#: detectable effect, seeds needed), in the effect size that test's power depends on
#: (d_z for the paired test, Cohen's d for Welch, planned as a two-sample t-test).
PLANNING = {
    "paired": (paired_power, paired_minimum_detectable_effect, paired_seeds_needed),
    "welch": (two_sample_power, minimum_detectable_effect, seeds_needed),
}
