"""Effect sizes between two agents: d_z (paired), Hedges' g (independent samples) with
exact noncentral-t intervals, and the probability of improvement (per task and rliable's
aggregate) with bootstrap intervals."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import optimize, special
from scipy import stats as sps

from clinbench.stats._arrays import (
    ROUNDING,
    as_generator,
    as_sample,
    check_confidence,
    check_reps,
    chunks,
    is_constant,
    magnitude,
)
from clinbench.stats.intervals import percentile_interval


def hedges_j(df: float) -> float:
    """Exact small-sample correction ``J(ν) = Γ(ν/2) / (sqrt(ν/2) Γ((ν-1)/2))``.

    A standardised difference over ν degrees of freedom overestimates its population
    value by 1 / J(ν) on average (1.25 at ν = 4, five seeds); Hedges' approximation is
    ``1 - 3 / (4ν - 1)``. Reference: Hedges, "Distribution Theory for Glass's Estimator
    of Effect Size and Related Estimators", J. Educational Statistics 6 (1981).
    """
    return math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / math.sqrt(df / 2)


#: Largest |t| for which the noncentral-t interval is computed (see below).
MAX_EXACT_T = 1000.0


def noncentrality_interval(t: float, df: float, confidence: float = 0.95) -> tuple[float, float]:
    """Exact interval of the noncentrality parameter δ of a t statistic: the δ for which
    the observed ``t`` is the upper and the lower ``(1-c)/2`` quantile of ``nct(df, δ)``.

    ``nct.sf(t, df, δ_lo) = (1-c)/2`` and ``nct.cdf(t, df, δ_hi) = (1-c)/2``, each solved by
    Brent's method (both sides are monotone in δ). Reference: Steiger & Fouladi,
    "Noncentrality Interval Estimation and the Evaluation of Statistical Models" (1997);
    Cumming & Finch, "A Primer on the Understanding, Use, and Calculation of Confidence
    Intervals that are Based on Central and Noncentral Distributions", Educational and
    Psychological Measurement 61 (2001). Raises ``ArithmeticError`` beyond
    ``|t| = MAX_EXACT_T``: there scipy's noncentral t drifts from the exact tail
    probability (3e-5 at t = 3000, checked against numeric integration over the
    chi-square; below 1e-6 up to t = 1000).
    """
    tail = (1 - check_confidence(confidence)) / 2
    if not abs(t) <= MAX_EXACT_T:
        raise ArithmeticError(
            f"|t| = {abs(t):.4g} is beyond the range where scipy's noncentral t is exact"
        )
    if t < 0:  # nct(df, -δ) is the mirror of nct(df, δ); scipy is steadier on the right
        lo, hi = noncentrality_interval(-t, df, confidence)
        return -hi, -lo

    def sf(nc: float) -> float:
        v = float(sps.nct.sf(t, df, nc))
        if not math.isfinite(v):
            raise ArithmeticError(f"noncentral t not invertible at t = {t}, df = {df}")
        return v

    def upper(nc: float) -> float:  # increasing in nc; root: sf = tail
        return sf(nc) - tail

    def lower(nc: float) -> float:  # decreasing in nc; root: cdf = 1 - sf = tail
        return (1.0 - sf(nc)) - tail

    def bracket(f, direction: float) -> tuple[float, float]:
        """From nc = t (where both functions are positive) step out until f < 0."""
        near, step = t, 1.0 + 0.1 * abs(t)
        for _ in range(60):
            far = near + direction * step
            if f(far) < 0:
                return (far, near) if direction < 0 else (near, far)
            near, step = far, 2 * step
        raise ArithmeticError(f"noncentral t not invertible at t = {t}, df = {df}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's series warnings; checked in sf
        if upper(t) <= 0 or lower(t) <= 0:
            raise ArithmeticError(f"noncentral t not invertible at t = {t}, df = {df}")
        try:
            lo = optimize.brentq(upper, *bracket(upper, -1.0), xtol=1e-10)
            hi = optimize.brentq(lower, *bracket(lower, 1.0), xtol=1e-10)
        except (ValueError, RuntimeError) as exc:
            raise ArithmeticError(
                f"noncentral t not invertible at t = {t}, df = {df}: {exc}"
            ) from None
    return float(lo), float(hi)


def _effect(
    value: float,
    scale: float,
    t: float,
    df: float,
    se_normal: float,
    c: float,
    exact: str = "noncentral t",
) -> dict[str, Any]:
    """Point estimate with the exact interval of δ = nc / scale, else a normal one."""
    try:
        lo, hi = noncentrality_interval(t, df, c)
        return {"value": value, "lo": lo / scale, "hi": hi / scale, "method": exact}
    except ArithmeticError:
        z = sps.norm.ppf((1 + c) / 2)
        return {
            "value": value,
            "lo": value - z * se_normal,
            "hi": value + z * se_normal,
            "method": "normal approximation",
        }


def _undefined() -> dict[str, Any]:
    return {"value": math.nan, "lo": math.nan, "hi": math.nan, "method": None}


def hedges_g(x: Any, y: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Bias-corrected standardised mean difference of two independent samples.

    ``d = (x̄ - ȳ) / s_p`` with pooled ``s_p² = ((n-1)s_x² + (m-1)s_y²) / (n+m-2)``;
    ``g = J(n+m-2) · d`` (Hedges & Olkin, *Statistical Methods for Meta-Analysis*, 1985,
    chapter 5). The interval is the exact interval of the population δ from the
    noncentral t of the *pooled-variance* t statistic ``t = d sqrt(nm/(n+m))``
    (df = n+m-2), so ``method`` says "noncentral t (pooled variance)": it assumes equal
    variances, which Welch's test does not, and can disagree with Welch's p near the
    boundary. Where scipy cannot invert it, the normal approximation
    ``g ± z sqrt((n+m)/(nm) + g²/(2(n+m)))``. Both samples constant: ``s_p = 0``, every field NaN
    (tested on the values, since rounding can leave ``s_p`` at 1e-17 and g at 1e15).
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    c = check_confidence(confidence)
    if is_constant(a) and is_constant(b):
        return _undefined()
    n, m = a.size, b.size
    df = n + m - 2
    sp = math.sqrt(((n - 1) * a.var(ddof=1) + (m - 1) * b.var(ddof=1)) / df)
    d = (a.mean() - b.mean()) / sp
    g = hedges_j(df) * d
    scale = math.sqrt(n * m / (n + m))
    se = math.sqrt((n + m) / (n * m) + g * g / (2 * (n + m)))
    return _effect(
        float(g), scale, float(d * scale), df, se, c, exact="noncentral t (pooled variance)"
    )


def cohens_dz(x: Any, y: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Standardised mean of paired differences ``d_z = mean(x - y) / sd(x - y)``.

    The effect size of the paired t-test (its ``t = d_z sqrt(n)``) and the one its power
    depends on (Cohen 1988, section 2.3.5; Lakens, "Calculating and reporting effect
    sizes to facilitate cumulative science", Frontiers in Psychology 4, 2013). The
    interval is the exact noncentral-t interval of δ_z (df = n - 1, δ_z = nc / sqrt(n));
    where scipy cannot invert it, ``d_z ± z sqrt(1/n + d_z²/(2n))``. A constant difference
    has no spread: every field NaN.
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    if a.size != b.size:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    c = check_confidence(confidence)
    diff = a - b
    if is_constant(diff, magnitude(a, b)):
        return _undefined()
    n = diff.size
    dz = float(diff.mean() / diff.std(ddof=1))
    se = math.sqrt(1 / n + dz * dz / (2 * n))
    return _effect(dz, math.sqrt(n), dz * math.sqrt(n), n - 1, se, c)


def hedges_gz(x: Any, y: Any, confidence: float = 0.95) -> dict[str, Any]:
    """``d_z`` with the small-sample correction: ``g_z = J(n - 1) · d_z``.

    With five seeds ``d_z`` is biased up by about 1.25x; ``g_z`` is (nearly) unbiased, and
    the one the report shows and plans with. ``uncorrected`` keeps ``d_z``; the interval
    stays the exact noncentral-t interval of the population δ_z (Lakens 2013, eq. 4-5;
    Hedges and Olkin 1985, chapter 5).
    """
    e = cohens_dz(x, y, confidence)
    n = np.asarray(x).size
    j = hedges_j(n - 1) if n > 2 else math.nan
    return {**e, "value": e["value"] * j, "uncorrected": e["value"], "correction": j}


#: The effect size that goes with each t-test of ``hypothesis_tests.T_TESTS``.
EFFECT_SIZES = {"paired": ("g_z", hedges_gz), "welch": ("hedges_g", hedges_g)}


def _win_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``W[i, j] = 1`` if ``a_i > b_j``, ``½`` on a tie, else 0; values within rounding
    of each other tie (the one tolerance of ``_arrays.ROUNDING``)."""
    diff = a[:, None] - b[None, :]
    tie = np.abs(diff) <= ROUNDING * magnitude(a, b)
    return np.where(tie, 0.5, (diff > 0).astype(float))


def probability_of_improvement(x: Any, y: Any) -> float:
    """``P(X > Y) + ½ P(X = Y)`` estimated over all pairs: ``U_x / (n m)``.

    Reference: Agarwal et al., "Deep Reinforcement Learning at the Edge of the
    Statistical Precipice", NeurIPS 2021, arXiv:2108.13264 (section 4.3).
    """
    a, b = as_sample(x, "x"), as_sample(y, "y")
    return float(_win_matrix(a, b).mean())


def _resample_counts(rng: np.random.Generator, size: int, n: int) -> np.ndarray:
    """How often each of ``n`` values is drawn in each of ``size`` resamples of length ``n``."""
    idx = rng.integers(0, n, size=(size, n))
    flat = idx + n * np.arange(size)[:, None]
    return np.bincount(flat.ravel(), minlength=size * n).reshape(size, n)


def _poi_replicates(
    a: np.ndarray, b: np.ndarray, w: np.ndarray, gen: np.random.Generator, size: int
) -> np.ndarray:
    """``size`` bootstrap replicates of ``P(X > Y)``: x resampled, then y, independently.

    A replicate's estimate is ``Σ_ij cx_i cy_j W_ij / (n m)`` with ``cx``, ``cy`` the draw
    counts, which equals the mean of ``W`` over the resampled pairs.
    """
    cx = _resample_counts(gen, size, a.size)
    cy = _resample_counts(gen, size, b.size)
    return np.einsum("ri,ij,rj->r", cx, w, cy) / (a.size * b.size)


def probability_of_improvement_ci(
    x: Any,
    y: Any,
    rng: Any,
    reps: int = 50_000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval of ``P(X > Y)``.

    x and y are resampled independently with replacement. Per block of replicates the
    draws are ``rng.integers(0, n, (block, n))`` then ``rng.integers(0, m, (block, m))``.
    """
    return aggregate_probability_of_improvement_ci([x], [y], rng, reps, confidence)


def _task_pairs(
    x_per_task: Sequence[Any], y_per_task: Sequence[Any]
) -> list[tuple[np.ndarray, np.ndarray]]:
    if len(x_per_task) != len(y_per_task) or not len(x_per_task):
        raise ValueError("need the same, non-zero number of tasks for x and y")
    return [(as_sample(a, "x"), as_sample(b, "y")) for a, b in zip(x_per_task, y_per_task)]


def mean_probability_of_improvement(x_per_task: Sequence[Any], y_per_task: Sequence[Any]) -> float:
    """rliable's aggregate: ``P(X_t > Y_t)`` averaged over tasks (arXiv:2108.13264,
    ``rliable.metrics.probability_of_improvement``). Not the P(X > Y) of per-seed task means."""
    return float(
        np.mean([_win_matrix(a, b).mean() for a, b in _task_pairs(x_per_task, y_per_task)])
    )


def aggregate_probability_of_improvement_ci(
    x_per_task: Sequence[Any],
    y_per_task: Sequence[Any],
    rng: Any,
    reps: int = 50_000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """``mean_probability_of_improvement`` and its stratified percentile bootstrap interval.

    Within each task the runs of x and of y are resampled independently (rliable's
    ``StratifiedIndependentBootstrap``); a replicate is the mean over tasks of the
    resampled per-task P(X > Y). Draw order per block of replicates: for each task in
    order, x's draws then y's.
    """
    tasks = _task_pairs(x_per_task, y_per_task)
    gen, reps = as_generator(rng), check_reps(reps)
    wins = [_win_matrix(a, b) for a, b in tasks]
    out = []
    for size in chunks(reps):
        out.append(
            np.mean([_poi_replicates(a, b, w, gen, size) for (a, b), w in zip(tasks, wins)], axis=0)
        )
    lo, hi = percentile_interval(np.concatenate(out), check_confidence(confidence))
    return float(np.mean([w.mean() for w in wins])), lo, hi
