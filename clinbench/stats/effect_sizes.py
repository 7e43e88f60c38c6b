"""Effect sizes between two agents: Hedges' g and the probability of improvement."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

from clinbench.stats._arrays import (
    as_generator,
    as_sample,
    check_confidence,
    check_reps,
    chunks,
    is_constant,
)
from clinbench.stats.intervals import percentile_interval


def _hedges_j(df: int) -> float:
    """Exact small-sample correction ``J(ν) = Γ(ν/2) / (sqrt(ν/2) Γ((ν-1)/2))``.

    Hedges' approximation is ``1 - 3 / (4ν - 1)``.
    """
    return math.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / math.sqrt(df / 2)


def hedges_g(x: Any, y: Any, confidence: float = 0.95) -> dict[str, float]:
    """Bias-corrected standardised mean difference with a normal-approximation interval.

    ``d = (x̄ - ȳ) / s_p`` with pooled ``s_p² = ((n-1)s_x² + (m-1)s_y²) / (n+m-2)``;
    ``g = J(n+m-2) · d``; ``Var(g) ≈ (n+m)/(n m) + g² / (2(n+m))``; interval
    ``g ± z_{(1+c)/2} sqrt(Var(g))``.
    Reference: Hedges & Olkin, *Statistical Methods for Meta-Analysis* (1985), chapter 5.
    When both samples are constant ``s_p = 0`` and g is undefined: all fields are NaN
    (tested on the values, since rounding can leave ``s_p`` at 1e-17 and g at 1e15).
    """
    a, b = as_sample(x, "x", 2), as_sample(y, "y", 2)
    c = check_confidence(confidence)
    if is_constant(a) and is_constant(b):
        return {"g": math.nan, "lo": math.nan, "hi": math.nan}
    n, m = a.size, b.size
    df = n + m - 2
    sp = math.sqrt(((n - 1) * a.var(ddof=1) + (m - 1) * b.var(ddof=1)) / df)
    g = _hedges_j(df) * (a.mean() - b.mean()) / sp
    se = math.sqrt((n + m) / (n * m) + g * g / (2 * (n + m)))
    z = sps.norm.ppf((1 + c) / 2)
    return {"g": float(g), "lo": float(g - z * se), "hi": float(g + z * se)}


def _win_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``W[i, j] = 1`` if ``a_i > b_j``, ``½`` on a tie, else 0."""
    return (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])


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


def probability_of_improvement_ci(
    x: Any,
    y: Any,
    rng: Any,
    reps: int = 50_000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval of ``P(X > Y)``.

    x and y are resampled independently with replacement. Per block of replicates the
    draws are ``rng.integers(0, n, (block, n))`` then ``rng.integers(0, m, (block, m))``;
    a replicate's estimate is ``Σ_ij cx_i cy_j W_ij / (n m)`` with ``cx``, ``cy`` the
    draw counts, which equals the mean of ``W`` over the resampled pairs.
    """
    a, b = as_sample(x, "x"), as_sample(y, "y")
    gen, reps = as_generator(rng), check_reps(reps)
    w = _win_matrix(a, b)
    out = []
    for size in chunks(reps):
        cx = _resample_counts(gen, size, a.size)
        cy = _resample_counts(gen, size, b.size)
        out.append(np.einsum("ri,ij,rj->r", cx, w, cy) / (a.size * b.size))
    lo, hi = percentile_interval(np.concatenate(out), check_confidence(confidence))
    return float(w.mean()), lo, hi


def mean_probability_of_improvement(x_per_task: Sequence[Any], y_per_task: Sequence[Any]) -> float:
    """rliable's aggregate: ``P(X_t > Y_t)`` averaged over tasks (arXiv:2108.13264)."""
    if len(x_per_task) != len(y_per_task) or not x_per_task:
        raise ValueError("need the same, non-zero number of tasks for x and y")
    pairs = zip(x_per_task, y_per_task)
    return float(np.mean([probability_of_improvement(a, b) for a, b in pairs]))
