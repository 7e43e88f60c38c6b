"""Per-sample summaries: Student-t confidence interval, quartiles, percentile interval,
and the exact binomial (Clopper-Pearson) interval of a proportion."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import as_sample, check_confidence


def t_interval(x: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval ``mean ± t_{n-1,(1+c)/2} · s / sqrt(n)``.

    ``s`` is the sample standard deviation (ddof = 1). Preferred over a percentile
    bootstrap at a handful of seeds, where the bootstrap under-covers.
    Reference: Student, "The Probable Error of a Mean", Biometrika 6 (1908);
    Casella & Berger, *Statistical Inference*, 2nd ed., section 9.2.
    With one value the interval is undefined and both ends are NaN.
    """
    a = as_sample(x)
    c = check_confidence(confidence)
    m = float(a.mean())
    if a.size < 2:
        return m, math.nan, math.nan
    half = sps.t.ppf((1 + c) / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)
    return m, float(m - half), float(m + half)


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """Proportion ``k / n`` and its exact binomial interval.

    The ends are Beta quantiles: ``Beta((1-c)/2; k, n-k+1)`` and ``Beta((1+c)/2; k+1, n-k)``,
    0 at ``k = 0`` and 1 at ``k = n``; the coverage is at least ``c`` for every true
    proportion. Reference: Clopper & Pearson, "The use of confidence or fiducial limits
    illustrated in the case of the binomial", Biometrika 26 (1934). Without trials the
    proportion and both ends are NaN.
    """
    c = check_confidence(confidence)
    if isinstance(k, bool) or isinstance(n, bool) or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k!r}, n={n!r}")
    if n == 0:
        return math.nan, math.nan, math.nan
    tail = (1 - c) / 2
    lo = 0.0 if k == 0 else float(sps.beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(sps.beta.ppf(1 - tail, k + 1, n - k))
    return k / n, lo, hi


def summary(x: Any, confidence: float = 0.95) -> dict[str, float | int]:
    """n, mean, sd (ddof = 1), t interval ``lo``/``hi``, median, quartiles and IQR.

    Quartiles use numpy's default (linear, type 7 of Hyndman & Fan,
    "Sample Quantiles in Statistical Packages", The American Statistician 1996).
    """
    a = as_sample(x)
    m, lo, hi = t_interval(a, confidence)
    q25, med, q75 = (float(v) for v in np.quantile(a, [0.25, 0.5, 0.75]))
    return {
        "n": int(a.size),
        "mean": m,
        "sd": float(a.std(ddof=1)) if a.size > 1 else math.nan,
        "lo": lo,
        "hi": hi,
        "median": med,
        "q25": q25,
        "q75": q75,
        "iqr": q75 - q25,
    }


def percentile_interval(replicates: Any, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval: the (1-c)/2 and (1+c)/2 quantiles of the replicates.

    Reference: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), chapter 13.
    """
    c = check_confidence(confidence)
    r = as_sample(replicates, "replicates")
    lo, hi = np.quantile(r, [(1 - c) / 2, (1 + c) / 2])
    return float(lo), float(hi)
