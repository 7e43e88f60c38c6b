"""Tests between two agents: paired t on per-seed differences, Welch, Wilcoxon, Mann-Whitney.

Named ``hypothesis_tests`` so it is never mistaken for a test module.

Degenerate inputs are decided here, not left to numpy. A t statistic needs spread: when
the standard error is exactly zero (two constant samples for Welch, a constant
difference for the paired test) and the means differ, the t-test is *not testable*:
``testable`` is False and ``t``, ``p`` and the interval are NaN (scipy would divide
rounding noise by itself and print p = 0). When the means are equal as well the data
show no difference at all: ``p = 1`` and the interval is the point 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import (
    ROUNDING,
    as_sample,
    check_confidence,
    is_constant,
    magnitude,
    snap_zero,
)

#: Why a t-test with zero standard error and different means has no result.
NO_VARIANCE = "not testable (no variance)"


def _scale(a: np.ndarray, b: np.ndarray) -> float:
    """The magnitude of two samples: what their rounding noise is relative to."""
    return magnitude(a, b)


def _t_result(res: Any, diff: float, confidence: float) -> dict[str, Any]:
    ci = res.confidence_interval(confidence_level=confidence)
    return {
        "t": float(res.statistic),
        "df": float(res.df),
        "p": float(res.pvalue),
        "diff": float(diff),
        "lo": float(ci.low),
        "hi": float(ci.high),
        "testable": True,
    }


def _no_spread(diff: float, df: float, scale: float) -> dict[str, Any]:
    """The result when the standard error is 0 up to rounding (see the module docstring)."""
    if abs(diff) <= ROUNDING * scale:
        return {
            "t": math.nan,
            "df": df,
            "p": 1.0,
            "diff": 0.0,
            "lo": 0.0,
            "hi": 0.0,
            "testable": True,
        }
    return {
        "t": math.nan,
        "df": df,
        "p": math.nan,
        "diff": diff,
        "lo": math.nan,
        "hi": math.nan,
        "testable": False,
    }


def welch(x: Any, y: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Welch's two-sided t-test of mean(x) = mean(y), unequal variances.

    ``t = (x̄ - ȳ) / se`` with ``se = sqrt(s_x²/n + s_y²/m)`` and Welch-Satterthwaite
    ``df = se⁴ / ((s_x²/n)² / (n-1) + (s_y²/m)² / (m-1))``; the interval of the mean
    difference is ``x̄ - ȳ ± t_{df,(1+c)/2} · se`` from the same df.
    Reference: Welch, "The Generalization of 'Student's' Problem when Several Different
    Population Variances are Involved", Biometrika 34 (1947).
    When both samples are constant, df is 0 / 0: NaN (scipy reports a placeholder 1).
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    c = check_confidence(confidence)
    if is_constant(a) and is_constant(b):
        return _no_spread(float(a.mean() - b.mean()), math.nan, _scale(a, b))
    res = sps.ttest_ind(a, b, equal_var=False)
    return _t_result(res, a.mean() - b.mean(), c)


def paired(x: Any, y: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Paired two-sided t-test on per-seed differences ``d = x - y``.

    ``t = d̄ / (s_d / sqrt(n))`` with ``df = n - 1``;
    interval ``d̄ ± t_{n-1,(1+c)/2} s_d / sqrt(n)``.
    ``x[i]`` and ``y[i]`` must come from the same seed (same evaluation worlds).
    Reference: Casella & Berger, *Statistical Inference*, 2nd ed., section 8.3 / 9.2.
    When every difference is the same there is no spread (see the module docstring).
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    c = check_confidence(confidence)
    d = a - b
    if is_constant(d, _scale(a, b)):
        return _no_spread(float(d.mean()), float(d.size - 1), _scale(a, b))
    res = sps.ttest_rel(a, b)
    return _t_result(res, d.mean(), c)


#: The two t-tests by the name ``report.test`` uses.
T_TESTS = {"paired": paired, "welch": welch}


def wilcoxon(x: Any, y: Any) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test on the differences ``x - y``.

    scipy's defaults: zero differences are dropped (``zero_method="wilcox"``), the exact
    null distribution is used for small samples without ties or zeros, the normal
    approximation otherwise. Differences within rounding of zero count as zero (the one
    tolerance of ``_arrays.ROUNDING``). All differences zero: no evidence of a
    difference, p = 1. The same non-zero difference in every block: *not testable*, as
    for the t-tests (``testable`` False, p NaN), so a rank test never calls significant
    what the t-test of the same pair cannot test.
    Reference: Wilcoxon, "Individual Comparisons by Ranking Methods", Biometrics Bulletin 1 (1945).
    """
    a, b = as_sample(x, "x"), as_sample(y, "y")
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    scale = _scale(a, b)
    d = snap_zero(a - b, scale)
    if np.all(d == 0):
        return {"statistic": math.nan, "p": 1.0, "testable": True}
    if is_constant(d, scale):
        return {"statistic": math.nan, "p": math.nan, "testable": False}
    res = sps.wilcoxon(d)
    return {"statistic": float(res.statistic), "p": float(res.pvalue), "testable": True}


def mann_whitney(x: Any, y: Any) -> dict[str, float]:
    """Two-sided Mann-Whitney U test; ``u`` is the statistic of ``x``.

    ``U_x = #{(i, j): x_i > y_j} + ½ #{(i, j): x_i = y_j}``. scipy picks the exact null
    distribution for small samples without ties and the normal approximation otherwise.
    Reference: Mann & Whitney, "On a Test of Whether one of Two Random Variables is
    Stochastically Larger than the Other", Ann. Math. Statist. 18 (1947).
    """
    a, b = as_sample(x, "x"), as_sample(y, "y")
    res = sps.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    return {"u": float(res.statistic), "p": float(res.pvalue)}
