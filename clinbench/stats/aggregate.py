"""Aggregate performance over tasks on normalised scores, with stratified bootstrap intervals.

Scores come as a matrix ``scores[run, task]`` or as a list with one array of runs per
task (run counts may differ). Every statistic works on the last axis, so a list of
``(reps, runs_t)`` arrays gives one value per replicate: that is how the bootstrap stays
vectorised. Definitions follow rliable's ``metrics`` module (Agarwal et al., "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", arXiv:2108.13264).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import (
    DEFAULT_CHUNK,
    as_generator,
    check_confidence,
    check_reps,
    chunks,
)
from clinbench.stats.intervals import percentile_interval

Statistic = Callable[[list[np.ndarray]], Any]


def per_task(scores: Any) -> list[np.ndarray]:
    """One float array per task, runs on the last axis; a 2-d array is ``[run, task]``."""
    if isinstance(scores, (list, tuple)):
        tasks = [np.asarray(s, dtype=float) for s in scores]
    else:
        a = np.asarray(scores, dtype=float)
        if a.ndim not in (1, 2):
            raise ValueError(f"scores must be [run, task] or a list of task arrays, got {a.shape}")
        tasks = [a] if a.ndim == 1 else list(a.T)
    if not tasks:
        raise ValueError("scores must hold at least one task")
    for i, t in enumerate(tasks):
        if t.ndim < 1 or t.shape[-1] == 0:
            raise ValueError(f"task {i} needs a non-empty array of runs, got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ValueError(f"task {i} contains NaN or infinite scores")
    return tasks


def _scalar(v: Any) -> Any:
    return float(v) if np.ndim(v) == 0 else v


def _pooled(scores: Any) -> np.ndarray:
    return np.concatenate(per_task(scores), axis=-1)


def _task_means(scores: Any) -> np.ndarray:
    return np.stack([t.mean(axis=-1) for t in per_task(scores)], axis=-1)


def iqm(scores: Any) -> Any:
    """Interquartile mean: the 25 % trimmed mean of all runs × tasks pooled.

    ``scipy.stats.trim_mean(pooled, 0.25)`` drops ``floor(N/4)`` values at each end.
    """
    return _scalar(sps.trim_mean(_pooled(scores), 0.25, axis=-1))


def mean(scores: Any) -> Any:
    """Mean over tasks of each task's mean over runs."""
    return _scalar(_task_means(scores).mean(axis=-1))


def median(scores: Any) -> Any:
    """Median over tasks of each task's mean over runs."""
    return _scalar(np.median(_task_means(scores), axis=-1))


def optimality_gap(scores: Any, gamma: float = 1.0) -> Any:
    """``gamma - mean(min(score, gamma))`` over all runs × tasks pooled.

    With ``gamma = 1`` this is the mean of ``max(0, 1 - score)``: how far the agent
    falls short of the reference, with no credit for exceeding it.
    """
    return _scalar(gamma - np.minimum(_pooled(scores), gamma).mean(axis=-1))


#: The aggregate statistics of the report, by name.
AGGREGATES: dict[str, Statistic] = {
    "iqm": iqm,
    "mean": mean,
    "median": median,
    "optimality_gap": optimality_gap,
}


def stratified_bootstrap(
    scores: Any,
    statistic: Statistic,
    rng: Any,
    reps: int = 50_000,
    chunk: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """Bootstrap replicates of ``statistic``, resampling runs with replacement within each task.

    Stratifying by task keeps every task in every replicate, so the interval reflects
    run-to-run variability and not which tasks happened to be drawn (arXiv:2108.13264,
    section 4). ``statistic`` takes a list of ``(block, runs_t)`` arrays and returns
    ``block`` values. Draw order, per block of at most ``chunk`` replicates and per task
    in order: ``rng.integers(0, runs_t, (block, runs_t))``.
    """
    tasks = per_task(scores)
    if any(t.ndim != 1 for t in tasks):
        raise ValueError("each task must be a 1-d array of runs")
    gen, reps = as_generator(rng), check_reps(reps)
    out = []
    for size in chunks(reps, chunk):
        sample = [t[gen.integers(0, t.size, size=(size, t.size))] for t in tasks]
        values = np.asarray(statistic(sample), dtype=float)
        if values.shape != (size,):
            raise ValueError(
                f"statistic must return one value per replicate (shape ({size},)), "
                f"got {values.shape}; make it work on the last axis"
            )
        out.append(values)
    return np.concatenate(out)


def stratified_bootstrap_ci(
    scores: Any,
    statistic: Statistic,
    rng: Any,
    reps: int = 50_000,
    confidence: float = 0.95,
    chunk: int = DEFAULT_CHUNK,
) -> tuple[float, float, float]:
    """Point estimate of ``statistic`` and its stratified percentile bootstrap interval."""
    estimate = float(statistic(per_task(scores)))
    replicates = stratified_bootstrap(scores, statistic, rng, reps, chunk)
    lo, hi = percentile_interval(replicates, confidence)
    return estimate, lo, hi


def score_distribution(scores: Any, taus: Any) -> np.ndarray:
    """rliable's performance profile (``score_distributions``): the fraction of all runs x
    tasks pooled whose score is above each ``tau``; one value per tau on the last axis."""
    pooled = _pooled(scores)
    taus = np.asarray(taus, dtype=float)
    return (pooled[..., None, :] > taus[:, None]).mean(axis=-1)


def performance_profile_ci(
    scores: Any,
    taus: Any,
    rng: Any,
    reps: int = 2_000,
    confidence: float = 0.95,
    chunk: int = 250,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The profile at each ``tau`` and its pointwise stratified percentile bootstrap band,
    as rliable's ``create_performance_profile`` draws it (runs resampled within each task;
    2,000 replicates by default, as there). Draws are ``stratified_bootstrap``'s."""
    tasks = per_task(scores)
    gen, reps = as_generator(rng), check_reps(reps)
    c = check_confidence(confidence)
    blocks = []
    for size in chunks(reps, chunk):
        sample = [t[gen.integers(0, t.size, size=(size, t.size))] for t in tasks]
        blocks.append(score_distribution(sample, taus))
    lo, hi = np.quantile(np.concatenate(blocks), [(1 - c) / 2, (1 + c) / 2], axis=0)
    return score_distribution(tasks, taus), lo, hi
