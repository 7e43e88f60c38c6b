"""Aggregates over a group of tasks: one normalised score per (agent, seed), tested as shown.

The report's headline is one aggregate per environment family (``family_aggregate``):
averaging families whose agent pairs interact would describe neither, so a cross-family
aggregate exists only when declared (``report/cross_family.py``).

The aggregate unit is the per-seed mean over the group's tasks of normalised scores.
Its headline is the mean over seeds with a Student-t interval, and its comparisons are
the primary test over seeds, so the number shown is the number tested. An agent's row
uses the seeds where it has a result on every task of the group; a pair is compared on
the seeds *that pair* shares on every task (an incomplete grid costs only the pairs it
touches), and each says what it dropped. IQM, median and optimality gap of rliable
(arXiv:2108.13264) stay as secondary figures with stratified bootstrap intervals and
their caveats; the probability of improvement is rliable's mean over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench import stats
from clinbench.references import normalise
from clinbench.report.pairs import MIN_SEEDS, compare, interval
from clinbench.report.results import Results
from clinbench.stats._arrays import is_constant

SECONDARY = ("iqm", "median", "optimality_gap")
UNIT = "per-seed mean over the family's tasks of normalised scores"

#: Measured coverage of the 95 % stratified percentile bootstrap of the mean over tasks
#: at (tasks, runs per task): ``python experiments/bootstrap_coverage.py --tasks K``
#: (2,000 simulated benchmarks; docs/statistics.md).
BOOTSTRAP_COVERAGE = {
    (3, 3): 0.777,
    (3, 5): 0.862,
    (3, 10): 0.901,
    (3, 20): 0.923,
    (6, 3): 0.827,
    (6, 5): 0.883,
    (6, 10): 0.917,
    (6, 20): 0.936,
}

Rng = Callable[..., np.random.Generator]


def normalised(
    res: Results,
    refs: dict[str, dict[str, float]],
    agent: str,
    seeds: list[int],
    tasks: list[str],
) -> list[np.ndarray]:
    """Per-task arrays (over ``seeds``) of normalised scores of ``agent``."""
    return [
        normalise(
            np.array([res.score(t, agent, s) for s in seeds]),
            refs[t]["random"],
            refs[t]["reference_planner"],
        )
        for t in tasks
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
    if per_seed.size == 0:
        return {"value": math.nan, "lo": math.nan, "hi": math.nan, "sd": math.nan, "n": 0}
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


def agent_row(runs: list[np.ndarray], name: str, agent: str, reps: int, rng: Rng) -> dict[str, Any]:
    """The headline mean and the secondary figures of one agent over its seeds."""
    n = runs[0].size
    per_seed = np.mean(np.stack(runs), axis=0) if n else np.array([])
    row: dict[str, Any] = {"mean": headline(per_seed)}
    for stat in SECONDARY:
        if n >= MIN_SEEDS:
            est, lo, hi = stats.stratified_bootstrap_ci(
                runs, stats.AGGREGATES[stat], rng("aggregate", name, stat, agent), reps=reps
            )
            row[stat] = interval(est, lo, hi)
        elif n:
            row[stat] = interval(stats.AGGREGATES[stat](runs), math.nan, math.nan) | {
                "zero_width": False
            }
        else:
            row[stat] = interval(math.nan, math.nan, math.nan) | {"zero_width": False}
    return row


def pair_comparison(
    res: Results,
    refs: dict[str, dict[str, float]],
    tasks: list[str],
    a: str,
    b: str,
    own_seeds: dict[str, list[int]],
    test: str,
    margin: float,
    reps: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One pair on the aggregate: on the seeds both agents complete on every task, with
    the seeds it dropped and the cells they lack."""
    seeds = [s for s in own_seeds[a] if s in own_seeds[b]]
    na, nb = (normalised(res, refs, x, seeds, tasks) for x in (a, b))
    shared = (np.mean(np.stack(na), axis=0), np.mean(np.stack(nb), axis=0))
    own = tuple(
        np.mean(np.stack(normalised(res, refs, x, own_seeds[x], tasks)), axis=0) for x in (a, b)
    )

    def poi(_x: np.ndarray, _y: np.ndarray, g: np.random.Generator, r: int):
        if test == "welch":
            xa = normalised(res, refs, a, own_seeds[a], tasks)
            xb = normalised(res, refs, b, own_seeds[b], tasks)
            return stats.aggregate_probability_of_improvement_ci(xa, xb, g, r)
        return stats.aggregate_probability_of_improvement_ci(na, nb, g, r)

    q = compare(shared, own, test, poi, rng, reps, margin)
    dropped = [
        {"seed": s, "missing": res.lacking(s, [a, b], tasks)} for s in res.seeds if s not in seeds
    ]
    return {"a": a, "b": b, "seeds": seeds, "dropped_seeds": dropped, **q}


def caveats(
    name: str, tasks: list[str], rows: dict[str, Any], trimmed: dict[str, dict[str, int]]
) -> list[str]:
    """What a reader of the secondary figures must know: bootstrap coverage at this many
    seeds and tasks, and how much of one task the IQM can trim."""
    notes: list[str] = []
    k = len(tasks)
    ns = sorted({r["mean"]["n"] for r in rows.values() if r["mean"]["n"]})
    n = ns[-1] if ns else 0
    if n >= MIN_SEEDS:
        measured = BOOTSTRAP_COVERAGE.get((k, n))
        notes.append(
            f"{name}: with {n} seeds per task the bootstrap intervals of IQM, median and "
            "optimality gap cover less than their nominal 95 %"
            + (
                f" (measured {measured:.3f} for {k} tasks x {n} seeds, "
                "experiments/bootstrap_coverage.py)"
                if measured
                else " (experiments/bootstrap_coverage.py measures it)"
            )
            + "; the headline mean uses the Student-t interval"
        )
    if 2 <= k < 4 and trimmed:
        worst = max(
            ((a, t, c) for a, per in trimmed.items() for t, c in per.items()),
            key=lambda x: x[2],
            default=None,
        )
        text = (
            f"{name}: with {k} tasks the IQM is not a per-task figure: its 25 % trimming drops "
            f"{k * n // 4} of the {k * n} pooled runs at each end"
        )
        if worst and worst[2]:
            text += (
                f", which can be most or all of one task's runs "
                f"({worst[0]}: {worst[2]} of {n} on {worst[1]})"
            )
        notes.append(text + "; the headline is the mean")
    return notes


def family_aggregate(
    res: Results,
    refs: dict[str, dict[str, float]],
    name: str,
    tasks: list[str],
    agents: list[str],
    members: list[tuple[str, str]],
    test: str,
    margin: float,
    reps: int,
    rng: Rng,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The aggregate section of the group of ``tasks`` (rows of ``agents``) and the
    comparisons of its declared ``members``."""
    own_seeds = {a: res.complete_seeds([a], tasks) for a in agents}
    rows: dict[str, Any] = {}
    trimmed: dict[str, dict[str, int]] = {}
    dropped: dict[str, list[dict[str, Any]]] = {}
    for a in agents:
        runs = normalised(res, refs, a, own_seeds[a], tasks)
        if own_seeds[a]:
            rows[a] = agent_row(runs, name, a, reps, rng)
            trimmed[a] = iqm_trimming(runs, tasks)
        lost = [
            {"seed": s, "missing": res.lacking(s, [a], tasks)}
            for s in res.seeds
            if s not in own_seeds[a]
        ]
        if lost:
            dropped[a] = lost
    pairs = [
        pair_comparison(
            res, refs, tasks, a, b, own_seeds, test, margin, reps, rng("poi", name, a, b)
        )
        for a, b in members
    ]
    notes = caveats(name, tasks, rows, trimmed)
    short = [a for a in agents if 0 < len(own_seeds[a]) < MIN_SEEDS]
    if short:
        notes.append(
            f"{name}: {', '.join(short)} {'has' if len(short) == 1 else 'have'} fewer than "
            f"{MIN_SEEDS} seeds with a result on every task: no interval and no tests for "
            f"{'it' if len(short) == 1 else 'them'} there"
        )
    section = {
        "name": name,
        "unit": UNIT,
        "tasks": list(tasks),
        "agents_declared": list(agents),
        "seeds": {a: own_seeds[a] for a in agents},
        "dropped_seeds": dropped,
        "headline": "mean",
        "interval": "Student-t 95 % over seeds (the primary test's unit)",
        "secondary_interval": "stratified percentile bootstrap 95 % (runs resampled within "
        "each task)",
        "agents": rows,
        "iqm_trimmed": trimmed,
        "caveats": notes,
    }
    return section, pairs
