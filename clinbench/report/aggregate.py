"""The aggregate over tasks: one normalised score per (agent, seed), tested as it is shown.

The aggregate unit is the per-seed mean over tasks of normalised scores. Its headline is
the mean over seeds with a Student-t interval, and its comparisons are the primary test
over seeds, so the number shown is the number tested. IQM, median and optimality gap of
rliable (arXiv:2108.13264) stay as secondary figures with stratified bootstrap intervals
and their caveats; the probability of improvement is rliable's mean over tasks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench import stats
from clinbench.references import normalise
from clinbench.report.pairs import CONFIRMATORY, MIN_SEEDS, compare, holm_family, interval
from clinbench.report.results import Results
from clinbench.stats._arrays import is_constant

SECONDARY = ("iqm", "median", "optimality_gap")
FAMILY = "aggregate"
UNIT = "per-seed mean over tasks of normalised scores"

Rng = Callable[..., np.random.Generator]


def normalised(
    res: Results, refs: dict[str, dict[str, float]], agent: str, seeds: list[int]
) -> list[np.ndarray]:
    """Per-task arrays (over ``seeds``) of normalised scores of ``agent``."""
    return [
        normalise(
            np.array([res.score(t, agent, s) for s in seeds]),
            refs[t]["random"],
            refs[t]["reference_planner"],
        )
        for t in res.tasks
    ]


def iqm_trimming(norm: list[np.ndarray], tasks: list[str]) -> dict[str, int]:
    """How many runs of each task the IQM's 25 % trimming drops (ties split by position)."""
    pooled = np.concatenate(norm)
    cut = pooled.size // 4
    order = np.argsort(pooled, kind="stable")
    dropped = np.zeros(pooled.size, dtype=bool)
    if cut:
        dropped[order[:cut]] = dropped[order[-cut:]] = True
    owner = np.repeat(np.arange(len(tasks)), [t.size for t in norm])
    return {t: int(dropped[owner == i].sum()) for i, t in enumerate(tasks)}


def headline(per_seed: np.ndarray) -> dict[str, Any]:
    """Mean over seeds with a Student-t 95 % interval; none below ``MIN_SEEDS`` seeds.

    ``no_spread`` marks a per-seed mean that is the same on every seed: its interval has
    zero width and is not shown as certainty.
    """
    value, lo, hi = stats.t_interval(per_seed)
    if per_seed.size < MIN_SEEDS:
        lo = hi = math.nan
    sd = float(per_seed.std(ddof=1)) if per_seed.size > 1 else math.nan
    spread = per_seed.size >= MIN_SEEDS and is_constant(per_seed)
    return {
        "value": value,
        "lo": lo,
        "hi": hi,
        "sd": sd,
        "n": int(per_seed.size),
        "no_spread": spread,
    }


def build_aggregate(
    res: Results,
    refs: dict[str, dict[str, float]],
    scope: dict[str, Any],
    test: str,
    alpha: float,
    reps: int,
    rng: Rng,
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The aggregate section, its confirmatory family and its caveats."""
    agents, seeds = scope["agents"], scope["seeds"]
    n, k = len(seeds), len(res.tasks)
    notes: list[str] = []
    norm = {a: normalised(res, refs, a, seeds) for a in agents} if seeds else {}
    per_seed = {a: np.mean(np.stack(norm[a]), axis=0) for a in norm}
    rows: dict[str, Any] = {}
    trimmed: dict[str, dict[str, int]] = {}
    for a, runs in norm.items():
        rows[a] = {"mean": headline(per_seed[a])}
        for name in SECONDARY:
            if n >= MIN_SEEDS:
                est, lo, hi = stats.stratified_bootstrap_ci(
                    runs, stats.AGGREGATES[name], rng("aggregate", name, a), reps=reps
                )
                rows[a][name] = interval(est, lo, hi)
            else:
                rows[a][name] = interval(stats.AGGREGATES[name](runs), math.nan, math.nan) | {
                    "zero_width": False
                }
        trimmed[a] = iqm_trimming(runs, res.tasks)

    pairs = []
    if len(norm) >= 2:
        for a, b in itertools.combinations(agents, 2):

            def poi(
                _x: np.ndarray,
                _y: np.ndarray,
                g: np.random.Generator,
                r: int,
                a: str = a,
                b: str = b,
            ):
                return stats.aggregate_probability_of_improvement_ci(norm[a], norm[b], g, r)

            samples = (per_seed[a], per_seed[b])  # complete seeds: shared and own are the same
            pairs.append(
                {
                    "a": a,
                    "b": b,
                    **compare(samples, samples, test, poi, rng("poi", FAMILY, a, b), reps),
                }
            )
    family = holm_family(FAMILY, CONFIRMATORY, test, pairs, alpha)

    if norm and n < MIN_SEEDS:
        notes.append(
            f"the aggregate has {n} complete seed(s): no intervals and no tests across seeds (at "
            f"least {MIN_SEEDS} needed)"
        )
    if norm and 2 <= k < 4:
        worst = max(
            ((a, t, c) for a, per in trimmed.items() for t, c in per.items()),
            key=lambda x: x[2],
            default=None,
        )
        text = (
            f"with {k} tasks the IQM is not a per-task figure: its 25 % trimming drops "
            f"{k * n // 4} of the {k * n} pooled runs at each end"
        )
        if worst and worst[2]:
            text += (
                f", which can be most or all of one task's runs "
                f"({worst[0]}: {worst[2]} of {n} on {worst[1]})"
            )
        notes.append(text + "; the headline is the mean")
    section = (
        {
            "unit": UNIT,
            "tasks": list(res.tasks),
            "seeds": seeds,
            "dropped_seeds": scope["dropped_seeds"],
            "dropped_agents": scope["dropped_agents"],
            "headline": "mean",
            "interval": "Student-t 95 % over seeds (the primary test's unit)",
            "secondary_interval": "stratified percentile bootstrap 95 % (runs resampled within "
            "each task)",
            "agents": rows,
            "iqm_trimmed": trimmed,
            "caveats": notes,
        }
        if norm
        else {}
    )
    return section, family, notes
