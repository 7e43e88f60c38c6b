"""From results to the report's numbers: one JSON-ready dict, the source of truth.

The unit is one score per (agent, task, seed), the mean over the cell's evaluation
episodes. Per task: summaries with Student-t intervals. Pairwise (per task and on the
aggregate): Welch's t (primary), the paired t on per-seed differences, Hedges' g,
probability of improvement, each family Holm-adjusted. Aggregate over tasks: IQM,
mean, median and optimality gap of normalised scores with stratified bootstrap
intervals. Ranking: Friedman and the Nemenyi critical difference. Power: the smallest
effect the seeds can detect, and the seeds each observed effect would need.

Every bootstrap draws from a Generator seeded by (bootstrap_seed, what it is for), so
an interval depends only on the recorded seed and its own data.
"""

from __future__ import annotations

import itertools
import math
import warnings
import zlib
from typing import Any

import numpy as np

from clinbench import stats
from clinbench.report.results import Results

AGGREGATE_STATS = ("iqm", "mean", "median", "optimality_gap")
FAMILY = "aggregate"


def _rng(seed: int, *labels: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, *(zlib.crc32(s.encode()) for s in labels)]))


def clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN and infinities to None, recursively."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def references(res: Results) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Normalisation references of the tasks, and warnings when they do not apply."""
    from clinbench.env.recruitment.reference_scores import REFERENCE_SCORES, TASK_VERSION
    from clinbench.env.recruitment.tasks import TASK_VERSION as CURRENT

    notes = []
    overrides = (res.config.get("env") or {}).get("overrides") or {}
    if any(overrides.get(t) for t in res.tasks):
        notes.append("task parameters were overridden: the stored normalisation references do not apply to them")
    if TASK_VERSION != CURRENT:
        notes.append(f"reference scores are for task version {TASK_VERSION}, tasks are version {CURRENT}")
    return {t: dict(REFERENCE_SCORES[t]) for t in res.tasks if t in REFERENCE_SCORES}, notes


def normalised(res: Results, refs: dict[str, dict[str, float]], agent: str, seeds: list[int]) -> list[np.ndarray]:
    """Per-task arrays (over ``seeds``) of normalised scores of ``agent``."""
    out = []
    for task in res.tasks:
        r = refs[task]
        span = r["reference_planner"] - r["random"]
        out.append(np.array([(res.score(task, agent, s) - r["random"]) / span for s in seeds]))
    return out


def pair_stats(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, reps: int, paired_ok: bool) -> dict[str, Any]:
    """Every two-sample number of one pair (x = first agent, y = second).

    Identical constant samples (two agents that never enrol) give undefined t and g;
    they are reported as null, and scipy's precision warning for them is silenced.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _pair_stats(x, y, rng, reps, paired_ok)


def _pair_stats(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, reps: int, paired_ok: bool) -> dict[str, Any]:
    w = stats.welch(x, y)
    g = stats.hedges_g(x, y)
    poi, poi_lo, poi_hi = stats.probability_of_improvement_ci(x, y, rng, reps=reps)
    out = {
        "n": [int(x.size), int(y.size)],
        "mean_diff": w["diff"],
        "diff_lo": w["lo"],
        "diff_hi": w["hi"],
        "welch_t": w["t"],
        "welch_df": w["df"],
        "p_welch": w["p"],
        "hedges_g": g["g"],
        "g_lo": g["lo"],
        "g_hi": g["hi"],
        "prob_improvement": poi,
        "poi_lo": poi_lo,
        "poi_hi": poi_hi,
        "p_paired": None,
        "seeds_needed": None,
    }
    if paired_ok and x.size == y.size and x.size >= 2:
        p = stats.paired(x, y)
        out.update(p_paired=p["p"], paired_t=p["t"], paired_lo=p["lo"], paired_hi=p["hi"])
    if g["g"] is not None and math.isfinite(g["g"]) and g["g"] != 0:
        out["seeds_needed"] = stats.seeds_needed(abs(g["g"]))
    return out


def family(name: str, pairs: list[dict[str, Any]], alpha: float) -> dict[str, Any]:
    """Holm over the Welch p-values of one family of comparisons.

    A pair without a p-value (two agents with the same constant score) stays in the
    family as p = 1, so m is always the declared number of pairs (the conservative
    choice) and its raw p is reported as null.
    """
    raw = [p["p_welch"] if p["p_welch"] is not None and math.isfinite(p["p_welch"]) else 1.0 for p in pairs]
    adjusted = stats.holm(raw) if raw else []
    for p, adj in zip(pairs, adjusted, strict=True):
        p["p_holm"] = float(adj)
        p["significant"] = bool(p["p_welch"] is not None and adj <= alpha)
    return {"name": name, "method": "holm", "test": "welch", "m": len(pairs), "alpha": alpha, "pairs": pairs}


def build_report(res: Results, alpha: float, bootstrap_reps: int, bootstrap_seed: int) -> dict[str, Any]:
    """All numbers of the report (JSON-ready after ``clean``)."""
    refs, ref_warnings = references(res)
    notes = list(res.warnings) + ref_warnings
    seeds = res.complete_seeds()
    agents = res.agents

    per_task = {
        task: {
            agent: {**stats.summary(np.array(list(v.values()))), "seeds": list(v)}
            for agent in agents
            if (v := res.scores(task, agent))
        }
        for task in res.tasks
    }

    families = []
    for task in res.tasks:
        pairs = []
        for a, b in itertools.combinations(agents, 2):
            xa, xb = res.scores(task, a), res.scores(task, b)
            if len(xa) < 2 or len(xb) < 2:
                continue
            common = sorted(set(xa) & set(xb))
            same = len(common) == len(xa) == len(xb)
            x, y = np.array([xa[s] for s in xa]), np.array([xb[s] for s in xb])
            pairs.append({"a": a, "b": b, **pair_stats(x, y, _rng(bootstrap_seed, "poi", task, a, b), bootstrap_reps, same)})
        families.append(family(task, pairs, alpha))

    aggregate: dict[str, Any] = {}
    agg_pairs: list[dict[str, Any]] = []
    ranking: dict[str, Any] = {}
    if refs and len(refs) == len(res.tasks) and len(seeds) >= 1:
        norm = {a: normalised(res, refs, a, seeds) for a in agents}
        for a in agents:
            aggregate[a] = {}
            for name in AGGREGATE_STATS:
                est, lo, hi = stats.stratified_bootstrap_ci(
                    norm[a], stats.AGGREGATES[name], _rng(bootstrap_seed, "aggregate", name, a), reps=bootstrap_reps
                )
                aggregate[a][name] = {"value": est, "lo": lo, "hi": hi}
        per_seed = {a: np.mean(np.stack(norm[a]), axis=0) for a in agents}  # mean over tasks
        if len(seeds) >= 2:
            for a, b in itertools.combinations(agents, 2):
                agg_pairs.append(
                    {"a": a, "b": b, **pair_stats(per_seed[a], per_seed[b], _rng(bootstrap_seed, "poi", FAMILY, a, b), bootstrap_reps, True)}
                )
        if len(agents) >= 3 and len(seeds) >= 1:
            blocks = np.array([[res.score(t, a, s) for a in agents] for t in res.tasks for s in seeds])
            fr = stats.friedman(blocks)
            ranks = stats.average_ranks(blocks)
            ranking = {
                "blocks": int(blocks.shape[0]),
                "friedman_statistic": fr["statistic"],
                "friedman_p": fr["p"],
                "average_ranks": dict(zip(agents, ranks.tolist(), strict=True)),
                "critical_difference": stats.nemenyi_cd(len(agents), blocks.shape[0], alpha),
            }
    elif not refs:
        notes.append("no normalisation references for these tasks: no aggregate across tasks")
    families.insert(0, family(FAMILY, agg_pairs, alpha))

    n = len(seeds)
    m = max((f["m"] for f in families), default=0)
    power: dict[str, Any] = {"seeds": n}
    if n >= 2:
        power["mde_welch"] = stats.minimum_detectable_effect(n, alpha)
        power["mde_paired"] = stats.paired_minimum_detectable_effect(n, alpha)
        mw_floor = stats.mann_whitney_floor(n, n)
        wx_floor = stats.wilcoxon_floor(n)
        power["floors"] = {
            "mann_whitney": mw_floor,
            "wilcoxon": wx_floor,
            "holm_smallest_threshold": alpha / m if m else None,
        }
        for test, floor in (("Mann-Whitney test", mw_floor), ("Wilcoxon signed-rank test", wx_floor)):
            if m and not stats.family_can_reach_alpha(floor, m, alpha):
                notes.append(
                    f"with {n} seeds an exact {test} cannot give p below {floor:.4g}, while Holm over "
                    f"{m} comparisons needs p <= {alpha / m:.4g}: rank-based exact tests could never be "
                    "significant here (the report's tests are Welch's and the paired t, which have no such floor)"
                )
    else:
        notes.append(f"only {n} complete seed(s): no tests or power analysis across seeds")

    report = {
        "protocol": {
            "env": res.manifest["grid"]["env"],
            "tasks": res.tasks,
            "agents": agents,
            "seeds": res.seeds,
            "complete_seeds": seeds,
            **res.manifest.get("protocol", {}),
            "references": refs,
            "normalisation": "(score - random) / (reference_planner - random), fixed per task version",
            "alpha": alpha,
            "bootstrap_reps": bootstrap_reps,
            "bootstrap_seed": bootstrap_seed,
            "interval": "Student-t 95% for per-task means; stratified bootstrap percentile 95% for aggregates",
        },
        "per_task": per_task,
        "aggregate": aggregate,
        "families": families,
        "ranking": ranking,
        "power": power,
        "missing": res.missing,
        "failed": res.failed,
        "warnings": notes,
        "provenance": provenance(res),
    }
    report["verdict"] = verdict(report)
    return clean(report)


def provenance(res: Results) -> dict[str, Any]:
    m = res.manifest
    durations: dict[str, list[float]] = {}
    for c in m.get("cells", []):
        if c.get("seconds") is not None:
            durations.setdefault(c["agent"], []).append(c["seconds"])
    return {
        "clinbench_version": m.get("clinbench_version"),
        "code": m.get("code"),
        "git": m.get("git"),
        "config_hash": m.get("config_hash"),
        "libraries": m.get("libraries"),
        "machine": m.get("machine"),
        "backend": m.get("backend"),
        "jobs": m.get("jobs"),
        "started": m.get("started"),
        "finished": m.get("finished"),
        "wall_seconds": m.get("wall_seconds"),
        "cell_seconds": {
            a: {"mean": float(np.mean(v)), "max": float(np.max(v)), "n": len(v)} for a, v in durations.items()
        },
        "cells": [{k: c.get(k) for k in ("task", "agent", "seed", "status", "seconds", "hash")} for c in m.get("cells", [])],
    }


def _names(pairs: list[dict[str, Any]]) -> list[str]:
    return [f"{p['a']} > {p['b']}" if p["mean_diff"] > 0 else f"{p['b']} > {p['a']}" for p in pairs]


def verdict(report: dict[str, Any]) -> list[str]:
    """A few plain sentences a reader can trust without reading the tables."""
    out: list[str] = []
    fams = {f["name"]: f for f in report["families"]}
    agg = report["aggregate"]
    if agg:
        best = max(agg, key=lambda a: agg[a]["iqm"]["value"])
        b = agg[best]["iqm"]
        out.append(
            f"Best aggregate (IQM of normalised scores over all tasks and seeds): {best}, "
            f"{b['value']:.2f} [{b['lo']:.2f}, {b['hi']:.2f}]."
        )
    agents = report["protocol"]["agents"]
    tasks = report["protocol"]["tasks"]
    said: set[frozenset[str]] = set()
    for base in ("random", "heuristic"):
        if base not in agents:
            continue
        for a in agents:
            if a == base or frozenset((a, base)) in said:
                continue
            said.add(frozenset((a, base)))
            wins = []
            for t in tasks:
                p = next((p for p in fams[t]["pairs"] if {p["a"], p["b"]} == {a, base}), None)
                sign = 0 if p is None else (1 if (p["mean_diff"] > 0) == (p["a"] == a) else -1)
                wins.append(sign if p is not None and p["significant"] else 0)
            if all(w == 1 for w in wins):
                out.append(f"{a} > {base} on every task (Welch, Holm-adjusted, alpha {report['protocol']['alpha']}).")
            elif all(w == -1 for w in wins):
                out.append(f"{a} < {base} on every task (Welch, Holm-adjusted).")
    fam = fams.get(FAMILY)
    if fam and fam["pairs"]:
        sig = [p for p in fam["pairs"] if p["significant"]]
        out.append(
            f"On the aggregate, {len(sig)} of {fam['m']} pairwise differences are significant after Holm"
            + (f": {', '.join(_names(sig))}." if sig else ".")
        )
        learners = [a for a in agents if a not in ("random", "heuristic")]
        among = [p for p in fam["pairs"] if p["a"] in learners and p["b"] in learners]
        if among and not any(p["significant"] for p in among):
            out.append(f"No difference among {', '.join(learners)} is significant after Holm.")
        ns = [p["seeds_needed"] for p in fam["pairs"] if not p["significant"] and p["seeds_needed"]]
        power = report["power"]
        if "mde_welch" in power:
            sentence = (
                f"With {power['seeds']} seeds the smallest standardised difference detectable at 80 % "
                f"power (Welch, alpha {report['protocol']['alpha']}) is d = {power['mde_welch']:.2f}"
            )
            if ns:
                sentence += f"; the non-significant pairs would need a median of {int(np.median(ns))} seeds each"
            out.append(sentence + ".")
    if report["missing"]:
        out.append(f"{len(report['missing'])} cells are missing or failed; see Warnings.")
    return out
