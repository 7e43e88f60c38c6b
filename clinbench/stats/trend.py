"""The trend at the end of a learning curve: is it still rising?

A budget is long enough when the curve is flat at its end. Each seed's curve gives
one least-squares slope over the points in the last ``share`` of the budget; seeds
are independent, so the Student-t interval of the mean slope across seeds says whether
the curve still rises ("still improving": the interval lies above 0), falls
("declining": below 0) or is flat at this resolution (the interval holds 0).

Where a learner trails a reference agent, :func:`budget_to_beat` extrapolates from two
budgets, per seed on the same evaluation worlds, how much larger a budget would have
to be for it to win a paired test: an extrapolation under a stated model, not a
measurement.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clinbench.stats.intervals import t_interval
from clinbench.stats.power import paired_minimum_detectable_effect


def ols_slope(x: Any, y: Any) -> float:
    """The least-squares slope of ``y`` on ``x`` (NaN with fewer than two distinct x)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.size < 2 or np.ptp(xa) == 0:
        return math.nan
    dx = xa - xa.mean()
    return float(dx @ (ya - ya.mean()) / (dx @ dx))


def end_trend(
    curves: list[tuple[list[float], list[float]]],
    budget: float,
    share: float = 0.2,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The change over the last ``share`` of the budget implied by each seed's slope
    there (slope x share x budget, in score units), its mean over seeds with a
    Student-t interval, and the verdict: ``still improving``, ``declining``, ``flat``,
    or ``undetermined`` (fewer than two seeds with two points in the window)."""
    start = (1.0 - share) * budget
    per_seed = []
    for steps, scores in curves:
        x = [s for s in steps if s >= start - 1e-9]
        y = [v for s, v in zip(steps, scores, strict=True) if s >= start - 1e-9]
        slope = ols_slope(x, y)
        if not math.isnan(slope):
            per_seed.append(slope * share * budget)
    if len(per_seed) < 2:
        return {
            "change": None,
            "lo": None,
            "hi": None,
            "seeds": len(per_seed),
            "verdict": "undetermined",
        }
    mean, lo, hi = t_interval(np.asarray(per_seed), confidence)
    verdict = "still improving" if lo > 0 else "declining" if hi < 0 else "flat"
    return {"change": mean, "lo": lo, "hi": hi, "seeds": len(per_seed), "verdict": verdict}


def budget_to_beat(
    reference: Any,
    short: Any,
    long: Any,
    factor: float,
    alpha: float = 0.05,
    power: float = 0.8,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """How many more decades of training budget a learner would need to beat a
    reference agent in a paired test, extrapolated from two budgets.

    Per seed: ``reference`` is the reference agent's score, ``short`` and ``long`` the
    learner's after training budgets ``B`` and ``factor x B``, all on the same
    evaluation worlds. The learner's gain per decade of budget is ``(long - short) /
    log10(factor)`` per seed (the score assumed linear in log budget, the usual form of
    a scaling law), with a Student-t interval over seeds. To beat the reference the
    learner must close the gap ``reference - long`` and add a margin: the difference a
    paired t-test at ``alpha`` detects with ``power`` (its smallest detectable d_z at
    these seeds times the sd of the per-seed gaps, assumed to stay as they are).

    Returns the mean gap, the margin, the gain per decade (mean, lo, hi) and the decades
    beyond ``factor x B``: ``point`` at the mean gain, ``low`` at its upper end and
    ``high`` at its lower end, each ``None`` where that gain is not positive (no
    budget). ``verdict``: ``beaten`` (the gap plus margin is already closed), ``reached
    at`` (every end of the gain's interval is positive), ``no upper bound`` (the mean
    gain is positive, the interval holds 0) or ``not rising`` (the mean gain is not
    positive). Only the gain's uncertainty enters the range, not the gap's.
    """
    ref, lo_b, hi_b = (np.asarray(v, dtype=float) for v in (reference, short, long))
    if not ref.shape == lo_b.shape == hi_b.shape or ref.ndim != 1 or ref.size < 2:
        raise ValueError("reference, short and long need one score per seed, at least two seeds")
    if not factor > 1:
        raise ValueError(f"factor must exceed 1, got {factor}")
    gaps = ref - hi_b
    sd = float(gaps.std(ddof=1))
    margin = paired_minimum_detectable_effect(ref.size, alpha, power) * sd
    gain, gain_lo, gain_hi = t_interval((hi_b - lo_b) / math.log10(factor), confidence)
    need = float(gaps.mean()) + margin

    def decades(per_decade: float) -> float | None:
        return need / per_decade if per_decade > 0 else None

    if need <= 0:
        verdict, point, low, high = "beaten", 0.0, 0.0, 0.0
    else:
        point, low, high = decades(gain), decades(gain_hi), decades(gain_lo)
        verdict = (
            "not rising" if point is None else "no upper bound" if high is None else "reached at"
        )
    return {
        "seeds": int(ref.size),
        "gap": float(gaps.mean()),
        "margin": margin,
        "gain_per_decade": {"mean": gain, "lo": gain_lo, "hi": gain_hi},
        "decades": {"point": point, "low": low, "high": high},
        "verdict": verdict,
    }
