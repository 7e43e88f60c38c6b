"""Tidy tables rebuilt from cell records: one row per evaluation episode, per curve
point, and the per-day enrolment quantiles behind the trajectory chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

RESULT_COLUMNS = [
    "env", "task", "agent", "seed", "eval_seed", "episode", "score", "return",
    "net_enrolled", "budget_used", "steps", "terminated_by",
]
CURVE_COLUMNS = ["agent", "task", "seed", "iteration", "episodes_seen", "mean_score"]
TRAJECTORY_COLUMNS = ["agent", "task", "day", "n", "median", "q25", "q75", "mean"]


def results_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in records:
        if r["status"] != "ok":
            continue
        k = r["key"]
        for i, e in enumerate(r["episodes"]):
            rows.append(
                [k["env"], k["task"], k["agent"], k["seed"], e["eval_seed"], i, e["score"], e["return"],
                 e["net_enrolled"], e["budget_used"], e["steps"], e["terminated_by"]]
            )
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def curves_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        [r["key"]["agent"], r["key"]["task"], r["key"]["seed"], p["iteration"], p["episodes_seen"], p["mean_score"]]
        for r in records
        if r["status"] == "ok"
        for p in r.get("curve", [])
    ]
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def trajectories_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Median, quartiles and mean of net enrolled by day, per agent and task."""
    series: dict[tuple[str, str], list[list[float]]] = {}
    for r in records:
        if r["status"] == "ok":
            key = (r["key"]["agent"], r["key"]["task"])
            series.setdefault(key, []).extend(e["progress_by_day"] for e in r["episodes"])
    rows = []
    for (agent, task), runs in series.items():
        days = max(len(s) for s in runs)
        # an episode shorter than the longest holds its last value
        m = np.array([s + [s[-1]] * (days - len(s)) for s in runs], dtype=float)
        q25, med, q75 = np.percentile(m, [25, 50, 75], axis=0)
        mean = m.mean(axis=0)
        rows += [[agent, task, d, m.shape[0], med[d], q25[d], q75[d], mean[d]] for d in range(days)]
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def write_tidy(records: list[dict[str, Any]], results: Path) -> dict[str, Path]:
    """Write the three CSVs next to the cell files; records arrive in report order."""
    out = {
        "sweep_results": results / "sweep_results.csv",
        "training_curves": results / "training_curves.csv",
        "enrollment_by_day": results / "enrollment_by_day.csv",
    }
    results_frame(records).to_csv(out["sweep_results"], index=False, lineterminator="\n")
    curves_frame(records).to_csv(out["training_curves"], index=False, lineterminator="\n")
    trajectories_frame(records).to_csv(out["enrollment_by_day"], index=False, lineterminator="\n")
    return out
