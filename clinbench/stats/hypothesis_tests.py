"""Two-sample tests between agents: Welch, paired t on per-seed differences, Mann-Whitney.

Named ``hypothesis_tests`` so it is never mistaken for a test module.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats as sps

from clinbench.stats._arrays import as_sample, check_confidence, is_constant


def _t_result(res: Any, diff: float, confidence: float) -> dict[str, float]:
    ci = res.confidence_interval(confidence_level=confidence)
    return {
        "t": float(res.statistic),
        "df": float(res.df),
        "p": float(res.pvalue),
        "diff": float(diff),
        "lo": float(ci.low),
        "hi": float(ci.high),
    }


def _no_spread(diff: float, df: float) -> dict[str, float]:
    """Result when the standard error is exactly 0: the limit of the t-test.

    ``t = ±inf`` and ``p = 0`` if the means differ; ``t`` and ``p`` NaN if they are equal;
    the interval is the difference itself. scipy instead divides rounding noise by itself.
    """
    if diff == 0:
        return {"t": math.nan, "df": df, "p": math.nan, "diff": 0.0, "lo": 0.0, "hi": 0.0}
    t = math.copysign(math.inf, diff)
    return {"t": t, "df": df, "p": 0.0, "diff": diff, "lo": diff, "hi": diff}


def welch(x: Any, y: Any, confidence: float = 0.95) -> dict[str, float]:
    """Welch's two-sided t-test of mean(x) = mean(y), unequal variances.

    ``t = (x̄ - ȳ) / se`` with ``se = sqrt(s_x²/n + s_y²/m)`` and Welch-Satterthwaite
    ``df = se⁴ / ((s_x²/n)² / (n-1) + (s_y²/m)² / (m-1))``; the interval of the mean
    difference is ``x̄ - ȳ ± t_{df,(1+c)/2} · se`` from the same df.
    Reference: Welch, "The Generalization of 'Student's' Problem when Several Different
    Population Variances are Involved", Biometrika 34 (1947).
    When both samples are constant, df is 0 / 0: NaN (scipy reports a placeholder 1),
    and t, p and the interval are as in ``_no_spread``.
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    c = check_confidence(confidence)
    if is_constant(a) and is_constant(b):
        return _no_spread(float(a[0] - b[0]), math.nan)
    res = sps.ttest_ind(a, b, equal_var=False)
    return _t_result(res, a.mean() - b.mean(), c)


def paired(x: Any, y: Any, confidence: float = 0.95) -> dict[str, float]:
    """Paired two-sided t-test on per-seed differences ``d = x - y``.

    ``t = d̄ / (s_d / sqrt(n))`` with ``df = n - 1``;
    interval ``d̄ ± t_{n-1,(1+c)/2} s_d / sqrt(n)``.
    ``x[i]`` and ``y[i]`` must come from the same seed (same evaluation worlds).
    Reference: Casella & Berger, *Statistical Inference*, 2nd ed., section 8.3 / 9.2.
    When every difference is the same, t, p and the interval are as in ``_no_spread``.
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    c = check_confidence(confidence)
    d = a - b
    if is_constant(d):
        return _no_spread(float(d[0]), float(d.size - 1))
    res = sps.ttest_rel(a, b)
    return _t_result(res, d.mean(), c)


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
