"""Tidy tables rebuilt from cell records: one row per evaluation episode (with the
family's episode metrics as columns), per curve point, and the per-time quantiles of the
progress measure behind the trajectory chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

RESULT_COLUMNS = [
    "env",
    "task",
    "agent",
    "seed",
    "eval_seed",
    "episode",
    "score",
    "return",
    "steps",
    "terminated_by",
]
CURVE_COLUMNS = ["agent", "task", "seed", "iteration", "env_steps", "episodes", "mean_score"]
TRAJECTORY_COLUMNS = ["agent", "task", "time", "n", "median", "q25", "q75", "mean"]


def results_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per evaluation episode; then a column per episode metric, in the order
    its family declares them (empty where a family does not report one)."""
    from clinbench.env.registry import family

    rows, metrics = [], {}
    for r in records:
        if r["status"] != "ok":
            continue
        k = r["key"]
        metrics.update(dict.fromkeys(m.name for m in family(k["env"]).episode_metrics))
        for i, e in enumerate(r["episodes"]):
            rows.append(
                [k["env"], k["task"], k["agent"], k["seed"], e["eval_seed"], i, e["score"],
                 e["return"], e["steps"], e["terminated_by"], e["metrics"]]
            )
    names = list(metrics)
    table = [row[:-1] + [row[-1].get(m) for m in names] for row in rows]
    return pd.DataFrame(table, columns=RESULT_COLUMNS + names)


def curves_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        [
            r["key"]["agent"],
            r["key"]["task"],
            r["key"]["seed"],
            p["iteration"],
            p["env_steps"],
            p["episodes"],
            p["mean_score"],
        ]
        for r in records
        if r["status"] == "ok"
        for p in r.get("curve", [])
    ]
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def trajectories_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Median, quartiles and mean of the progress measure by time, per agent and task."""
    series: dict[tuple[str, str], list[list[float]]] = {}
    for r in records:
        if r["status"] == "ok":
            key = (r["key"]["agent"], r["key"]["task"])
            series.setdefault(key, []).extend(e["progress_by_time"] for e in r["episodes"])
    rows = []
    for (agent, task), runs in series.items():
        times = max(len(s) for s in runs)
        # an episode shorter than the longest holds its last value
        m = np.array([s + [s[-1]] * (times - len(s)) for s in runs], dtype=float)
        q25, med, q75 = np.percentile(m, [25, 50, 75], axis=0)
        mean = m.mean(axis=0)
        rows += [
            [agent, task, t, m.shape[0], med[t], q25[t], q75[t], mean[t]] for t in range(times)
        ]
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def write_tidy(records: list[dict[str, Any]], results: Path) -> dict[str, Path]:
    """Write the three CSVs next to the cell files; records arrive in report order."""
    out = {
        "sweep_results": results / "sweep_results.csv",
        "training_curves": results / "training_curves.csv",
        "progress_by_time": results / "progress_by_time.csv",
    }
    results_frame(records).to_csv(out["sweep_results"], index=False, lineterminator="\n")
    curves_frame(records).to_csv(out["training_curves"], index=False, lineterminator="\n")
    trajectories_frame(records).to_csv(out["progress_by_time"], index=False, lineterminator="\n")
    return out
