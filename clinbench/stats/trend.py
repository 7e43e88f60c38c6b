"""The trend at the end of a learning curve: is it still rising?

A budget is long enough when the curve is flat at its end. Each seed's curve gives
one least-squares slope over the points in the last ``share`` of the budget; seeds
are independent, so the Student-t interval of the mean slope across seeds says whether
the curve still rises ("still improving": the interval lies above 0), falls
("declining": below 0) or is flat at this resolution (the interval holds 0).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from clinbench.stats.intervals import t_interval


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
