"""The trend at the end of a learning curve: is it still rising?

A budget is long enough when the curve is flat at its end. Each seed's curve gives
one least-squares slope over the points in the last ``share`` of the budget; seeds
are independent, so the Student-t interval of the mean slope across seeds says whether
the curve still rises ("still improving": the interval lies above 0), falls
("declining": below 0) or is flat at this resolution (the interval holds 0).

Where a learner trails a reference agent, :func:`budget_to_beat` extrapolates
log-linearly from two budgets, per seed on the same evaluation worlds, how much larger
a budget would have to be for a paired test to find it ahead with 80 % power: an
extrapolation under stated assumptions, not a measurement.
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
    ceiling: float | None = None,
) -> dict[str, Any]:
    """How many more decades of training budget a learner would need to beat a
    reference agent in a paired t-test, extrapolated log-linearly from two budgets.

    Per seed: ``reference`` is the reference agent's score, ``short`` and ``long`` the
    learner's after training budgets ``B`` and ``factor x B``, all on the same
    evaluation worlds. The learner's gain per decade of budget is ``(long - short) /
    log10(factor)`` per seed, its mean with a Student-t interval over seeds, and the
    score is assumed to keep rising by the mean gain per decade (no ceiling but
    ``ceiling``, e.g. the reference planner's score). The learner must close the gap
    ``reference - long`` and add a margin: the difference a paired t-test at ``alpha``
    detects with ``power`` (its smallest detectable d_z at these seeds times the sd of
    the per-seed gaps, assumed to stay as it is at ``factor x B``). That assumption is
    what makes a budget finite: if each seed kept its own gain, the sd of the gaps
    would grow with the budget, and the test would never reach ``power`` unless the
    mean gain exceeds the margin's d_z times the sd of the gains
    (``per_seed_gains_reach``). Neither the gap's nor the margin's sampling error enters
    the range.

    Returns the mean gap, the margin, the target (the reference's mean plus the
    margin), the gain per decade (mean, lo, hi) and the decades beyond ``factor x B``:
    ``point`` at the mean gain, ``low`` at its upper end and ``high`` at its lower end,
    each ``None`` where that gain is not positive. ``verdict``: ``beaten`` (gap plus
    margin already closed), ``above the ceiling`` (the target exceeds ``ceiling``: no
    budget), ``reached at`` (the gain's interval lies above 0), ``no upper bound``
    (mean gain positive, interval holds 0), ``undetermined`` (mean gain not positive,
    interval holds 0) or ``not rising`` (interval at or below 0).
    """
    ref, lo_b, hi_b = (np.asarray(v, dtype=float) for v in (reference, short, long))
    if not ref.shape == lo_b.shape == hi_b.shape or ref.ndim != 1 or ref.size < 2:
        raise ValueError("reference, short and long need one score per seed, at least two seeds")
    if not factor > 1:
        raise ValueError(f"factor must exceed 1, got {factor}")
    gaps = ref - hi_b
    d_z = paired_minimum_detectable_effect(ref.size, alpha, power)
    margin = d_z * float(gaps.std(ddof=1))
    gains = (hi_b - lo_b) / math.log10(factor)
    gain, gain_lo, gain_hi = t_interval(gains, confidence)
    need = float(gaps.mean()) + margin
    target = float(ref.mean()) + margin

    def decades(per_decade: float) -> float | None:
        return need / per_decade if per_decade > 0 else None

    point, low, high = decades(gain), decades(gain_hi), decades(gain_lo)
    if need <= 0:
        verdict, point, low, high = "beaten", 0.0, 0.0, 0.0
    elif ceiling is not None and target > ceiling:
        verdict, point, low, high = "above the ceiling", None, None, None
    elif gain_lo > 0:
        verdict = "reached at"
    elif gain > 0:
        verdict = "no upper bound"
    elif gain_hi > 0:
        verdict = "undetermined"
    else:
        verdict = "not rising"
    return {
        "seeds": int(ref.size),
        "gap": float(gaps.mean()),
        "margin": margin,
        "target": target,
        "gain_per_decade": {"mean": gain, "lo": gain_lo, "hi": gain_hi},
        "per_seed_gains_reach": bool(gain > d_z * float(gains.std(ddof=1))),
        "decades": {"point": point, "low": low, "high": high},
        "verdict": verdict,
    }
