"""From results to the report's numbers: one JSON-ready dict, the source of truth.

The unit is one score per (agent, task, seed), the mean over the cell's evaluation
episodes; every agent at a seed met the same evaluation worlds, so the design is paired
by seed and the analysis follows it (docs/statistics.md):

- per task: summaries with Student-t intervals;
- per environment family, the headline: the per-seed mean of normalised scores over
  the family's tasks, shown and tested as one number (``report/aggregate.py``), with
  its own confirmatory Holm family of declared comparisons (``report/declared.py``);
- per pair: the primary test (``report.test``: the paired t by default, Welch for an
  unpaired protocol) with its interval and bias-corrected effect size, the other t-test
  as a robustness column, the probability of improvement, and an equivalence test
  (TOST) at the declared margin; Holm over each family. Per-task families are
  exploratory and hold only pairs with cells on the task;
- across families only when declared, with a family x pair interaction test
  (``report/cross_family.py``);
- ranks as the ranges the confirmatory tests allow; Friedman per family with a
  Wilcoxon-Holm post-hoc (``report/ranking.py``); exploratory results that disagree
  with a confirmatory one are listed (``report/consistency.py``);
- power: planning figures for the primary test, per family, at alpha and at Holm's
  first threshold.

Every bootstrap draws from a Generator seeded by (bootstrap_seed, what it is for), so
an interval depends only on the recorded seed and its own data.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import zlib
from typing import Any

import numpy as np

from clinbench import evaluation_key, stats
from clinbench.env.registry import family as env_family
from clinbench.references import FORMULA
from clinbench.report.agent_stats import agent_stats, nondeterministic_agents
from clinbench.report.aggregate import family_aggregate
from clinbench.report.consistency import disagreements
from clinbench.report.cross_family import NAME as CROSS
from clinbench.report.cross_family import cross_family
from clinbench.report.curves import learning_curves
from clinbench.report.declared import Declaration, members
from clinbench.report.offline import offline_cells
from clinbench.report.operating import operating_characteristics
from clinbench.report.pairs import CONFIRMATORY, EXPLORATORY, MIN_SEEDS, compare, holm_family
from clinbench.report.ranking import rank_ranges, ranking
from clinbench.report.results import Results, ResultsError, task_versions
from clinbench.report.verdict import verdict

TESTS = tuple(stats.T_TESTS)
TEST_NAMES = {"paired": "paired t on per-seed differences", "welch": "Welch's t"}


def _rng(seed: int, *labels: str) -> np.random.Generator:
    return np.random.default_rng(
        np.random.SeedSequence([seed, *(zlib.crc32(s.encode()) for s in labels)])
    )


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
    """Normalisation references of the tasks (each from its family's stored module), and
    warnings when they do not apply."""
    refs: dict[str, dict[str, float]] = {}
    notes = []
    overrides = (res.config.get("env") or {}).get("overrides") or {}
    if any(overrides.get(t) for t in res.tasks):
        notes.append(
            "task parameters were overridden: the stored normalisation references do not apply to "
            "them"
        )
    ran = results_task_version(res)
    for env in res.envs:
        fam = env_family(env)
        tasks = [t for t in res.tasks if res.task_env(t) == env]
        if not fam.references:
            notes.append(f"the {env} family has no reference scores: no normalised scores for it")
            continue
        stored = importlib.import_module(fam.references)
        if stored.TASK_VERSION != fam.task_version:
            notes.append(
                f"{env} reference scores are for task version {stored.TASK_VERSION}, tasks are "
                f"version {fam.task_version}"
            )
        if env in ran and ran[env] != stored.TASK_VERSION:
            notes.append(
                f"the results ran {env} task version {ran[env]}, the stored references are for "
                f"version {stored.TASK_VERSION}: no normalised scores for it"
            )
            continue
        refs.update(
            {t: dict(stored.REFERENCE_SCORES[t]) for t in tasks if t in stored.REFERENCE_SCORES}
        )
    return refs, notes


def results_task_version(res: Results) -> dict[str, Any]:
    """The task version every cell of each family ran (``load_results`` refuses a mix)."""
    return {env: next(iter(v)) for env, v in task_versions(res.records).items()}


def per_task_summaries(res: Results, notes: list[str]) -> dict[str, dict[str, Any]]:
    """Summary of each agent on each task; no interval below ``MIN_SEEDS`` seeds."""
    out: dict[str, dict[str, Any]] = {}
    for task in res.tasks:
        out[task] = {}
        for agent in res.agents:
            v = res.scores(task, agent)
            if not v:
                continue
            with np.errstate(over="ignore"):  # an overflow is reported just below
                s = {**stats.summary(np.array(list(v.values()))), "seeds": list(v)}
            if len(v) > 1 and not all(math.isfinite(s[k]) for k in ("mean", "sd", "lo", "hi")):
                raise ResultsError(
                    f"the scores of {agent} on {task} are too large to summarise (their spread "
                    "overflows)"
                )
            if len(v) < MIN_SEEDS:
                s["lo"] = s["hi"] = math.nan
                notes.append(
                    f"{agent} on {task} has {len(v)} seed(s): no interval and no tests for it "
                    f"(at least {MIN_SEEDS} needed)"
                )
            out[task][agent] = s
    return out


def task_family(
    res: Results,
    task: str,
    test: str,
    alpha: float,
    reps: int,
    rng,
    margin: float | None,
) -> dict[str, Any]:
    """The exploratory family of one task: every pair of agents with cells on the task
    (an agent that plays another family has none: no impossible pairs), each on the
    seeds it shares; the equivalence margin in the task's own score units."""
    pairs = []
    agents = [a for a in res.agents if res.plays(a, task)]
    for a, b in itertools.combinations(agents, 2):
        xa, xb = res.scores(task, a), res.scores(task, b)
        seeds = [s for s in xa if s in xb]
        shared = (np.array([xa[s] for s in seeds]), np.array([xb[s] for s in seeds]))
        own = (np.array(list(xa.values())), np.array(list(xb.values())))
        q = compare(shared, own, test, _poi, rng("poi", task, a, b), reps, margin)
        dropped = [
            {"seed": s, "missing": res.lacking(s, [a, b], [task])}
            for s in res.seeds
            if s not in seeds
        ]
        pairs.append({"a": a, "b": b, "seeds": seeds, "dropped_seeds": dropped, **q})
    return holm_family(
        task,
        EXPLORATORY,
        test,
        pairs,
        alpha,
        scope={"kind": "task", "env": res.task_env(task), "tasks": [task]},
        declared="every pair of agents with cells on the task",
        margin=margin,
    )


def _poi(
    x: np.ndarray, y: np.ndarray, g: np.random.Generator, reps: int
) -> tuple[float, float, float]:
    return stats.probability_of_improvement_ci(x, y, g, reps=reps)


#: The standardised effect the power figures are in, per primary test.
PLANNING_EFFECT = {"paired": "d_z", "welch": "d"}


def power(
    test: str,
    alpha: float,
    families: list[dict[str, Any]],
    rankings: dict[str, dict[str, Any]],
    notes: list[str],
) -> dict[str, Any]:
    """Planning figures: per family, the smallest effect the primary test detects with
    80 % power at its seeds, at alpha and at Holm's first threshold of its m pairs; a
    note where an exact Wilcoxon post-hoc could never pass Holm."""
    for name, rank in rankings.items():
        if not rank:
            continue
        blocks, posthoc_m = rank["blocks"], rank["posthoc"]["m"]
        floor = stats.wilcoxon_floor(blocks)
        rank["wilcoxon_floor"] = floor
        if not stats.family_can_reach_alpha(floor, posthoc_m, alpha):
            notes.append(
                f"{name}: with {blocks} blocks an exact Wilcoxon signed-rank test cannot give p "
                f"below {floor:.4g}, while Holm over {posthoc_m} comparisons needs p <= "
                f"{alpha / posthoc_m:.4g}: the ranking's post-hoc can never be significant here"
            )
    return {
        "planning": True,
        "test": test,
        "effect": PLANNING_EFFECT[test],
        "alpha": alpha,
        "families": {
            f["name"]: {
                "role": f["role"],
                "seeds": f["seeds"],
                "m": f["m"],
                "holm_threshold": f["holm_threshold"],
                "mde": f["mde"],
            }
            for f in families
            if f["mde"]
        },
    }


def normalisation_meaning(refs: dict[str, dict[str, Any]]) -> str:
    """What 0 and 1 of the normalised scale are, as measured."""
    worlds = sorted({r["worlds"] for r in refs.values() if r.get("worlds")})
    counted = (
        f"{worlds[0]:,} reference worlds per task"
        if len(worlds) == 1
        else "each task's reference worlds"
    )
    return (
        f"0 is random's mean score and 1 the reference planner's mean score on {counted} "
        "(fixed world seeds, not this run's worlds; standard errors in the table below), so "
        "an agent's normalised score on this run's worlds can fall below 0 or above 1, "
        "random's included"
    )


def build_report(
    res: Results,
    alpha: float,
    bootstrap_reps: int,
    bootstrap_seed: int,
    test: str = "paired",
    declaration: Declaration | None = None,
) -> dict[str, Any]:
    """All numbers of the report (JSON-ready after ``clean``)."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; valid: {', '.join(TESTS)}")
    decl = declaration or Declaration()
    rng = functools.partial(_rng, bootstrap_seed)
    refs, ref_warnings = references(res)
    notes = list(res.warnings) + ref_warnings
    per_task = per_task_summaries(res, notes)
    task_families = [
        task_family(res, task, test, alpha, bootstrap_reps, rng, task_margin(refs, task, decl))
        for task in res.tasks
    ]
    aggregates: dict[str, dict[str, Any]] = {}
    confirmatory: list[dict[str, Any]] = []
    rankings: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[str]] = {}
    for env in res.envs:
        tasks = res.tasks_of(env)
        agents = res.agents_on(tasks)
        rankings[env] = ranking(res, env, tasks, agents, alpha)
        unreferenced = [t for t in tasks if t not in refs]
        if unreferenced:
            absent = f"no normalisation references for {', '.join(unreferenced)}"
            aggregates[env] = {"name": env, "tasks": tasks, "absent": absent}
            notes.append(f"{env}: {absent}: no aggregate and no confirmatory family for it")
            continue
        groups[env] = tasks
        pairs_declared, declared = members(decl, env, agents)
        section, pairs = family_aggregate(
            res, refs, env, tasks, agents, pairs_declared, test, decl.margin, bootstrap_reps, rng
        )
        fam = holm_family(
            env,
            CONFIRMATORY,
            test,
            pairs,
            alpha,
            scope={"kind": "environment family", "env": env, "tasks": tasks},
            declared=declared,
            margin=decl.margin,
        )
        section["ranks"] = rank_ranges(fam, list(section["agents"]))
        section["absent"] = None
        notes += section["caveats"]
        aggregates[env] = section
        confirmatory.append(fam)
    across: dict[str, Any] = {}
    cross_fam = []
    if decl.cross_family and len(groups) >= 2:
        agents = res.agents_on([t for ts in groups.values() for t in ts])
        pairs_declared, declared = members(decl, CROSS, agents)
        across, fam = cross_family(
            res,
            refs,
            groups,
            pairs_declared,
            declared,
            test,
            alpha,
            decl.margin,
            bootstrap_reps,
            rng,
        )
        notes += across["caveats"]
        cross_fam = [fam]
    elif decl.cross_family:
        notes.append("a cross-family aggregate is declared but the results hold one family")
    disagree = []
    for fam in confirmatory:
        env = fam["scope"]["env"]
        exploratory = [f for f in task_families if f["scope"]["env"] == env]
        exploratory += [f for f in cross_fam if f["role"] == EXPLORATORY]
        disagree += disagreements(fam, exploratory, rankings.get(env))
    families = confirmatory + cross_fam + task_families
    report = {
        "protocol": {
            "env": res.manifest["grid"]["env"],
            "task_envs": {t: res.task_env(t) for t in res.tasks},
            "envs": res.envs,
            "tasks": res.tasks,
            "agents": res.agents,
            "seeds": res.seeds,
            **res.manifest.get("protocol", {}),
            "task_version": results_task_version(res),
            "references": refs,
            "evaluation_key": evaluation_key_state(res),
            "normalisation": FORMULA,
            "normalisation_meaning": normalisation_meaning(refs) if refs else None,
            "alpha": alpha,
            "test": test,
            "test_name": TEST_NAMES[test],
            "secondary_test": next(t for t in TESTS if t != test),
            "min_seeds": MIN_SEEDS,
            "equivalence_margin": decl.margin,
            "declared": {
                "primary": decl.primary,
                "cross_family": decl.cross_family,
                "equivalence_margin": decl.margin,
            },
            "bootstrap_reps": bootstrap_reps,
            "bootstrap_seed": bootstrap_seed,
            "interval": (
                "Student-t 95% for per-task means and for each aggregate mean over seeds; "
                "stratified bootstrap percentile 95% for IQM, median, optimality gap and P(X>Y)"
            ),
        },
        "aggregates": aggregates,
        "cross_family": across,
        "per_task": per_task,
        "families": families,
        "disagreements": disagree,
        "rankings": rankings,
        "operating_characteristics": operating_characteristics(res),
        "learning_curves": learning_curves(res),
        "agent_stats": agent_stats(res),
        "nondeterministic": nondeterministic_agents(res),
        **({"offline": offline} if (offline := offline_cells(res)) else {}),
        **({"studies": studies} if (studies := study_results(res, notes)) else {}),
        "power": power(test, alpha, families, rankings, notes),
        "missing": res.missing,
        "failed": res.failed,
        "warnings": notes,
        "provenance": provenance(res),
    }
    report = clean(report)
    report["verdict"] = verdict(report)
    return report


def study_results(res: Results, notes: list[str]) -> dict[str, dict[str, Any]]:
    """The kept results of the studies of the results' families (``clinbench.studies``)
    that hold the cells' seeds and this code: name -> its seeds, code identity and
    results. A study left out (failed, unreadable, other seeds, older code) is named in
    ``notes``."""
    from clinbench.studies import load_studies

    kept, problems = load_studies(res.folder, res.envs, seeds=res.seeds)
    notes.extend(problems)
    return {
        name: {k: record[k] for k in ("family", "seeds", "size", "code", "results")}
        for name, record in kept.items()
    }


def task_margin(refs: dict[str, dict[str, float]], task: str, decl: Declaration) -> float | None:
    """The declared equivalence margin in ``task``'s own score units (none without
    references: the margin is declared in normalised score)."""
    ref = refs.get(task)
    if not ref:
        return None
    width = ref["reference_planner"] - ref["random"]
    return decl.margin * abs(width) if width else None


def evaluation_key_state(res: Results) -> dict[str, Any]:
    """The key the worlds came from: its mode and commitment, and the key itself once
    it can be revealed (public; or held out and kept in the folder, where it must match
    the commitment the cells were run under)."""
    about = res.manifest.get("evaluation")
    if not about:
        return {"mode": "unrecorded"}
    out = {"mode": about["mode"], "commitment": about["commitment"]}
    mixed = {
        r["evaluation"]["commitment"]
        for r in res.records.values()
        if r.get("evaluation", about)["commitment"] != about["commitment"]
    }
    if mixed:
        raise ResultsError(
            f"cells of {res.folder} were run under {len(mixed) + 1} evaluation keys; "
            "a report compares agents on the same worlds only"
        )
    if about.get("isolated_agents"):
        out["isolated_agents"] = True
    if about["mode"] == "public":
        key = evaluation_key.PUBLIC.key
    else:
        path = res.folder / evaluation_key.KEY_FILE
        if not path.exists():
            return {**out, "revealed": None}
        key = evaluation_key.read(path).key
    if not evaluation_key.verify(key, about["commitment"]):
        raise ResultsError(
            f"the evaluation key of {res.folder} does not match the commitment its cells were "
            f"run under ({about['commitment'][:16]}...)"
        )
    return {**out, "revealed": key.hex()}


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
            a: {"mean": float(np.mean(v)), "max": float(np.max(v)), "n": len(v)}
            for a, v in durations.items()
        },
        "cells": [
            {k: c.get(k) for k in ("task", "agent", "seed", "status", "seconds", "hash")}
            for c in m.get("cells", [])
        ],
    }
