"""Equivalence: two one-sided t-tests (TOST) that a mean difference lies within ±margin.

A non-significant difference is not evidence that two agents are level: with five seeds
most real differences go undetected. "Level with" needs its own test whose null is a
difference of at least ``margin`` (declared before the data): rejecting both
``H0: μ <= -margin`` and ``H0: μ >= margin`` shows ``|μ| < margin``; its p is the larger
of the two one-sided p-values. Reference: Schuirmann, "A comparison of the two
one-sided tests procedure and the power approach for assessing the equivalence of
average bioavailability", J. Pharmacokinetics and Biopharmaceutics 15 (1987).

Degenerate inputs follow the t-tests (``hypothesis_tests``): scores identical up to
rounding on every seed are level by definition (p = 0, ``identical``); a constant
non-zero difference has no standard error and is *not testable* (p NaN).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import ROUNDING, as_sample, is_constant, magnitude


def _check_margin(margin: float) -> float:
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"an equivalence margin must be a positive number, got {margin!r}")
    return float(margin)


def _result(diff: float, se: float, df: float, margin: float) -> dict[str, Any]:
    t_lower, t_upper = (diff + margin) / se, (diff - margin) / se
    p_lower, p_upper = float(sps.t.sf(t_lower, df)), float(sps.t.cdf(t_upper, df))
    return {
        "margin": margin,
        "diff": float(diff),
        "df": float(df),
        "t_lower": float(t_lower),
        "t_upper": float(t_upper),
        "p_lower": p_lower,
        "p_upper": p_upper,
        "p": max(p_lower, p_upper),
        "testable": True,
        "identical": False,
    }


def _degenerate(diff: float, df: float, margin: float, scale: float) -> dict[str, Any]:
    identical = abs(diff) <= ROUNDING * scale
    return {
        "margin": margin,
        "diff": 0.0 if identical else float(diff),
        "df": df,
        "t_lower": math.nan,
        "t_upper": math.nan,
        "p_lower": 0.0 if identical else math.nan,
        "p_upper": 0.0 if identical else math.nan,
        "p": 0.0 if identical else math.nan,
        "testable": identical,
        "identical": identical,
    }


def tost_paired(x: Any, y: Any, margin: float) -> dict[str, Any]:
    """TOST on paired differences ``d = x - y`` (same seeds): ``|mean(d)| < margin``?

    ``t_lower = (d̄ + margin) / (s_d / sqrt(n))``, ``t_upper = (d̄ - margin) / (s_d / sqrt(n))``,
    ``df = n - 1``; ``p = max(P(T > t_lower), P(T < t_upper))``. Equals statsmodels'
    ``ttost_paired(x, y, -margin, margin)``.
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    m = _check_margin(margin)
    d = a - b
    scale = magnitude(a, b)
    if is_constant(d, scale):
        return _degenerate(float(d.mean()), float(d.size - 1), m, scale)
    se = float(d.std(ddof=1) / math.sqrt(d.size))
    return _result(float(d.mean()), se, d.size - 1, m)


def tost_welch(x: Any, y: Any, margin: float) -> dict[str, Any]:
    """TOST with Welch's standard error and degrees of freedom (unpaired samples).

    Equals statsmodels' ``ttost_ind(x, y, -margin, margin, usevar="unequal")``.
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    m = _check_margin(margin)
    scale = magnitude(a, b)
    if is_constant(a) and is_constant(b):
        return _degenerate(float(a.mean() - b.mean()), math.nan, m, scale)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return _result(float(a.mean() - b.mean()), se, df, m)


#: The equivalence test that goes with each t-test of ``hypothesis_tests.T_TESTS``.
TOST = {"paired": tost_paired, "welch": tost_welch}


def equivalent_at(result: dict[str, Any], alpha: float) -> bool:
    """Whether a TOST result shows equivalence at level ``alpha`` (untestable: never)."""
    p = result.get("p")
    return bool(result.get("testable") and p is not None and np.isfinite(p) and p <= alpha)
