"""Whether a pair's difference depends on the group of tasks: a repeated-measures F test.

A cross-family aggregate averages a pair's difference over environment families; when
the difference changes with the family (one agent ahead on one family, behind on the
other) the average describes neither. The test: per seed, the pair's difference on each
family (``d[seed, family]``); a one-way repeated-measures ANOVA of family with seeds as
subjects, ``F = MS_family / MS_error`` on ``(k - 1, (k - 1)(n - 1))`` degrees of freedom.
With two families it is the paired t-test of the two families' differences (F = t²).
Reference: Maxwell and Delaney, *Designing Experiments and Analyzing Data*, 2nd ed.
(2004), chapter 11; checked against statsmodels' ``AnovaRM``.

Degenerate inputs follow the t-tests: no residual spread (up to rounding) with equal
family means gives p = 1; with different family means the test is *not testable*.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import ROUNDING, is_constant, magnitude


def repeated_measures_f(d: Any) -> dict[str, Any]:
    """One-way repeated-measures ANOVA over the columns of ``d[subject, condition]``."""
    a = np.asarray(d, dtype=float)
    if a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 2:
        raise ValueError(f"need [subject, condition] with at least 2 of each, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("the differences contain NaN or infinite values")
    n, k = a.shape
    grand = a.mean()
    cond, subj = a.mean(axis=0), a.mean(axis=1)
    residual = a - cond[None, :] - subj[:, None] + grand
    df1, df2 = k - 1, (k - 1) * (n - 1)
    out = {"df_num": float(df1), "df_den": float(df2), "condition_means": cond.tolist()}
    scale = magnitude(a)
    if is_constant(residual.ravel(), scale):
        same = bool(np.ptp(cond) <= ROUNDING * scale)
        return {
            **out,
            "f": math.nan,
            "p": 1.0 if same else math.nan,
            "testable": same,
        }
    ss_cond = n * float(np.sum((cond - grand) ** 2))
    ss_err = float(np.sum(residual**2))
    f = (ss_cond / df1) / (ss_err / df2)
    return {**out, "f": f, "p": float(sps.f.sf(f, df1, df2)), "testable": True}
