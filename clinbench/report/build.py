"""From results to the report's numbers: one JSON-ready dict, the source of truth.

The unit is one score per (agent, task, seed), the mean over the cell's evaluation
episodes; every agent at a seed met the same evaluation worlds, so the design is paired
by seed and the analysis follows it (docs/statistics.md):

- per task: summaries with Student-t intervals;
- per pair: the primary test (``report.test``: the paired t by default, Welch for an
  unpaired protocol) with its interval and effect size, the other t-test as a
  robustness column, the probability of improvement; Holm over each family. The
  aggregate family is confirmatory (the verdict comes from it), the per-task families
  exploratory;
- aggregate: the per-seed mean of normalised scores, shown and tested as one number
  (``report/aggregate.py``);
- ranking: Friedman over (task, seed) blocks, pairwise Wilcoxon signed-rank with Holm
  as its post-hoc, Nemenyi's critical difference only for the diagram;
- power: planning figures for the primary test, at alpha and at Holm's first threshold.

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
from clinbench.report.aggregate import FAMILY, build_aggregate
from clinbench.report.offline import offline_cells
from clinbench.report.operating import operating_characteristics
from clinbench.report.pairs import CONFIRMATORY, EXPLORATORY, MIN_SEEDS, compare, holm_family
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


def task_family(res: Results, task: str, test: str, alpha: float, reps: int, rng) -> dict[str, Any]:
    """The exploratory family of one task: every pair on the seeds it shares."""
    pairs = []
    for a, b in itertools.combinations(res.agents, 2):
        xa, xb = res.scores(task, a), res.scores(task, b)
        seeds = [s for s in xa if s in xb]
        shared = (np.array([xa[s] for s in seeds]), np.array([xb[s] for s in seeds]))
        own = (np.array(list(xa.values())), np.array(list(xb.values())))
        q = compare(shared, own, test, _poi, rng("poi", task, a, b), reps)
        pairs.append({"a": a, "b": b, "seeds": seeds, **q})
    return holm_family(task, EXPLORATORY, test, pairs, alpha)


def _poi(
    x: np.ndarray, y: np.ndarray, g: np.random.Generator, reps: int
) -> tuple[float, float, float]:
    return stats.probability_of_improvement_ci(x, y, g, reps=reps)


def ranking(res: Results, scope: dict[str, Any], alpha: float) -> dict[str, Any]:
    """Friedman over (task, seed) blocks with a Wilcoxon-Holm post-hoc (Benavoli, Corani and
    Mangili, "Should We Really Use Post-Hoc Tests Based on Mean-Ranks?", JMLR 17, 2016);
    Nemenyi's critical difference for the descriptive diagram only."""
    agents, seeds = scope["agents"], scope["seeds"]
    if len(agents) < 3 or len(seeds) < MIN_SEEDS:
        return {}
    blocks = np.array([[res.score(t, a, s) for a in agents] for t in res.tasks for s in seeds])
    fr = stats.friedman(blocks)
    posthoc = []
    for (i, a), (j, b) in itertools.combinations(enumerate(agents), 2):
        w = stats.wilcoxon(blocks[:, i], blocks[:, j])
        posthoc.append(
            {"a": a, "b": b, "mean_diff": float(np.mean(blocks[:, i] - blocks[:, j])), **w}
        )
    adjusted = stats.holm([p["p"] for p in posthoc])
    for p, adj in zip(posthoc, adjusted, strict=True):
        p["p_holm"] = float(adj)
        p["significant"] = bool(adj <= alpha)
    return {
        "blocks": int(blocks.shape[0]),
        "agents": agents,
        "seeds": seeds,
        "friedman_statistic": fr["statistic"],
        "friedman_p": fr["p"],
        "average_ranks": dict(zip(agents, stats.average_ranks(blocks).tolist(), strict=True)),
        "posthoc": {
            "test": "wilcoxon signed-rank over blocks",
            "method": "holm",
            "m": len(posthoc),
            "pairs": posthoc,
        },
        "critical_difference": stats.nemenyi_cd(len(agents), blocks.shape[0], alpha),
    }


def power(
    n: int, test: str, alpha: float, m: int, rank: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """Planning figures: the smallest effect the primary test detects with 80 % power at
    ``n`` seeds, at alpha and at Holm's first threshold of a family of ``m`` pairs."""
    out: dict[str, Any] = {
        "planning": True,
        "test": test,
        "effect": stats.EFFECT_SIZES[test][0],
        "seeds": n,
        "alpha": alpha,
        "m": m,
    }
    if rank:
        blocks, posthoc_m = rank["blocks"], rank["posthoc"]["m"]
        floor = stats.wilcoxon_floor(blocks)
        out["wilcoxon_floor"] = floor
        if not stats.family_can_reach_alpha(floor, posthoc_m, alpha):
            notes.append(
                f"with {blocks} blocks an exact Wilcoxon signed-rank test cannot give p below "
                f"{floor:.4g}, "
                f"while Holm over {posthoc_m} comparisons needs p <= {alpha / posthoc_m:.4g}: the "
                "ranking's "
                "post-hoc can never be significant here"
            )
    if n < MIN_SEEDS or m < 1:
        return out
    mde = stats.PLANNING[test][1]
    out.update(holm_threshold=alpha / m, mde={"alpha": mde(n, alpha), "holm": mde(n, alpha / m)})
    return out


def build_report(
    res: Results, alpha: float, bootstrap_reps: int, bootstrap_seed: int, test: str = "paired"
) -> dict[str, Any]:
    """All numbers of the report (JSON-ready after ``clean``)."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; valid: {', '.join(TESTS)}")
    rng = functools.partial(_rng, bootstrap_seed)
    refs, ref_warnings = references(res)
    notes = list(res.warnings) + ref_warnings
    scope = res.scope(MIN_SEEDS)
    per_task = per_task_summaries(res, notes)
    families = [task_family(res, task, test, alpha, bootstrap_reps, rng) for task in res.tasks]
    unreferenced = [t for t in res.tasks if t not in refs]
    absent = None
    if unreferenced:
        absent = f"no normalisation references for {', '.join(unreferenced)}"
        aggregate, agg_family = {}, holm_family(FAMILY, CONFIRMATORY, test, [], alpha)
        notes.append(f"{absent}: no aggregate across tasks")
    else:
        aggregate, agg_family, caveats = build_aggregate(
            res, refs, scope, test, alpha, bootstrap_reps, rng
        )
        notes += caveats
        if not aggregate:
            absent = "no seed has a result for every agent on every task"
    families.insert(0, agg_family)
    if scope["dropped_seeds"] or scope["dropped_agents"]:
        notes.append(scope_sentence(scope))
    rank = ranking(res, scope, alpha)
    report = {
        "protocol": {
            "env": res.manifest["grid"]["env"],
            "task_envs": {t: res.task_env(t) for t in res.tasks},
            "tasks": res.tasks,
            "agents": res.agents,
            "seeds": res.seeds,
            "complete_seeds": scope["seeds"],
            **res.manifest.get("protocol", {}),
            "task_version": results_task_version(res),
            "references": refs,
            "evaluation_key": evaluation_key_state(res),
            "normalisation": FORMULA,
            "alpha": alpha,
            "test": test,
            "test_name": TEST_NAMES[test],
            "secondary_test": next(t for t in TESTS if t != test),
            "min_seeds": MIN_SEEDS,
            "bootstrap_reps": bootstrap_reps,
            "bootstrap_seed": bootstrap_seed,
            "interval": (
                "Student-t 95% for per-task means and for the aggregate mean over seeds; "
                "stratified bootstrap percentile 95% for IQM, median, optimality gap and P(X>Y)"
            ),
        },
        "per_task": per_task,
        "aggregate": aggregate,
        "families": families,
        "ranking": rank,
        "operating_characteristics": operating_characteristics(res),
        "agent_stats": agent_stats(res),
        "nondeterministic": nondeterministic_agents(res),
        **({"offline": offline} if (offline := offline_cells(res)) else {}),
        "power": power(
            len(scope["seeds"]), test, alpha, agg_family["m"] or families[-1]["m"], rank, notes
        ),
        "aggregate_absent": absent,
        "missing": res.missing,
        "failed": res.failed,
        "warnings": notes,
        "provenance": provenance(res),
    }
    report = clean(report)
    report["verdict"] = verdict(report)
    return report


def scope_sentence(scope: dict[str, Any]) -> str:
    """What the analyses across tasks dropped, in words."""
    parts = []
    for d in scope["dropped_agents"]:
        parts.append(f"agent {d['agent']} ({d['reason']})")
    for d in scope["dropped_seeds"]:
        cells = ", ".join(f"{c['agent']} on {c['task']}" for c in d["missing"])
        parts.append(f"seed {d['seed']} (missing: {cells})")
    kept = ", ".join(map(str, scope["seeds"])) or "none"
    return f"the aggregate and the ranking drop {'; '.join(parts)}; they use seeds {kept}"


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
