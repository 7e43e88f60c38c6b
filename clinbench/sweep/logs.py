"""Training runs in the trackers people watch them in: TensorBoard and MLflow.

``clinbench sweep --log tensorboard,mlflow`` writes, after the sweep, each learning
cell's curve (environment steps on the step axis, the point's training wall-clock both
as the event time and as a scalar of its own) and its final scalars (mean evaluation
score, environment steps, training seconds) under ``<results>/logs/``. The logs are
written in the sweep's main process from the finished cell records, so they hold
exactly the numbers of the cell files whatever backend ran the cells, and a resumed
sweep logs its resumed cells too. The writers are optional extras
(``tensorboard``: tensorboardX; ``mlflow``: the MLflow client with its SQLite store).
"""

from __future__ import annotations

import importlib.util
import logging
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: logger -> (modules it needs, the extra that installs them)
LOGGERS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensorboard": (("tensorboardX",), "tensorboard"),
    "mlflow": (("mlflow", "sqlalchemy", "alembic"), "mlflow"),
}
#: The scalars of each curve point (``curve/<tag>``), on the environment-step axis.
CURVE_TAGS = ("mean_score", "wall_seconds", "episodes")
#: The MLflow experiment every cell's run goes to.
EXPERIMENT = "clinbench"
#: The tag that names a run's cell (its hash): a resumed sweep does not log a cell twice.
CELL_TAG = "clinbench.cell"


class LogError(ValueError):
    """A ``--log`` choice that cannot be used here (unknown, or its extra is missing)."""


def check(names: Iterable[str]) -> tuple[str, ...]:
    """The loggers asked for, in order and once each; LogError naming the valid ones or
    the extra to install (checked before the sweep: a missing writer must not surface
    after hours of cells)."""
    chosen = tuple(dict.fromkeys(names))
    for name in chosen:  # every name first: a typo is reported whatever is installed
        if name not in LOGGERS:
            raise LogError(f"unknown logger {name!r}; valid: {', '.join(LOGGERS)}")
    for name in chosen:
        modules, extra = LOGGERS[name]
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            raise LogError(
                f"--log {name} needs {', '.join(missing)} (the optional extra {extra!r}): "
                f'pip install -c constraints.txt -e ".[{extra}]"'
            )
    return chosen


def write_logs(
    records: list[dict[str, Any]], results: Path, loggers: Iterable[str], by_hash: bool = False
) -> dict[str, Path]:
    """Write each learning cell of ``records`` to every logger; their folders by name.
    ``by_hash``: a TensorBoard run's folder ends in the cell's hash (a grid has cells of
    one agent, task and seed under several configurations)."""
    cells = [c for r in records if (c := _cell(r, results / "runs")) is not None]
    out = {}
    for name in loggers:
        folder = results / "logs" / name
        if name == "tensorboard":
            _tensorboard(cells, folder, by_hash)
        else:
            _mlflow(cells, folder)
        out[f"logs_{name}"] = folder
    return out


def _cell(record: dict[str, Any], runs: Path) -> dict[str, Any] | None:
    """What is logged of a finished learning cell; None for the others (a non-learning
    agent, a failed cell, a record from before curves had environment steps)."""
    curve = record.get("curve") or []
    if record["status"] != "ok" or not curve or any("env_steps" not in p for p in curve):
        return None
    timing = record.get("timing", {})
    seconds = list(timing.get("curve_seconds") or [])
    if len(seconds) != len(curve):  # not recorded: no wall-clock scalar, the points at `began`
        seconds = [None] * len(curve)
    # the event times: the cell's training began about total_seconds before its file
    # was written, and each point came curve_seconds after that
    path = runs / f"{record['hash']}.json"
    finished = path.stat().st_mtime if path.exists() else 0.0
    began = finished - float(timing.get("total_seconds", 0.0))
    scores = [e["score"] for e in record["episodes"]]
    training = record.get("training") or {}
    return {
        "hash": record["hash"],
        "key": record["key"],
        "params": {
            **{f"protocol.{k}": v for k, v in record["config"]["protocol"].items()},
            **{f"agent.{k}": v for k, v in record["config"]["agent_params"].items()},
        },
        "points": [
            {
                "step": int(p["env_steps"]),
                "mean_score": float(p["mean_score"]),
                "episodes": int(p["episodes"]),
                "wall_seconds": s,
                "time": began + (s or 0.0),
            }
            for p, s in zip(curve, seconds, strict=True)
        ],
        "final": {
            "mean_score": sum(scores) / len(scores),
            "env_steps": int(training.get("env_steps", curve[-1]["env_steps"])),
            "train_seconds": float(timing.get("train_seconds", 0.0)),
        },
        "began": began,
        "finished": finished,
    }


def run_name(key: dict[str, Any], cell_hash: str = "") -> str:
    """``recruitment/easy_bench/hcapo/seed_7`` (``/<hash>`` when given): TensorBoard's
    run (a folder) of a cell."""
    parts = (key["env"], key["task"], key["agent"], f"seed_{key['seed']}")
    parts += (cell_hash,) if cell_hash else ()
    return "/".join(re.sub(r"[^\w.@+=-]", "_", str(p)) for p in parts)


def _tensorboard(cells: list[dict[str, Any]], folder: Path, by_hash: bool) -> None:
    """One run (folder) per cell; a cell logged before is written afresh."""
    from tensorboardX import SummaryWriter

    for cell in cells:
        logdir = folder / run_name(cell["key"], cell["hash"] if by_hash else "")
        shutil.rmtree(logdir, ignore_errors=True)
        with SummaryWriter(logdir=str(logdir), flush_secs=3600) as writer:
            for p in cell["points"]:
                for tag in CURVE_TAGS:
                    if p[tag] is not None:
                        writer.add_scalar(f"curve/{tag}", p[tag], p["step"], walltime=p["time"])
            step = cell["final"]["env_steps"]
            for tag, value in cell["final"].items():
                writer.add_scalar(f"final/{tag}", value, step, walltime=cell["finished"])


def _mlflow(cells: list[dict[str, Any]], folder: Path) -> None:
    """One run per cell in ``<folder>/mlflow.db`` (MLflow's SQLite store: its file store
    is in maintenance mode and refused by default since MLflow 3); cells already logged
    (a finished run with their hash) are left as they are."""
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.tracking import MlflowClient

    folder.mkdir(parents=True, exist_ok=True)
    quiet = logging.getLogger("mlflow")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # not its schema migrations' lines
    try:
        client = MlflowClient(tracking_uri=tracking_uri(folder))
        experiment = client.get_experiment_by_name(EXPERIMENT)
        exp_id = (
            experiment.experiment_id
            if experiment is not None
            else client.create_experiment(
                EXPERIMENT, artifact_location=(folder / "artifacts").resolve().as_uri()
            )
        )
        logged = {}
        for run in client.search_runs([exp_id], max_results=50000):
            logged.setdefault(run.data.tags.get(CELL_TAG), []).append(run)
        for cell in cells:
            old = logged.get(cell["hash"], [])
            if any(r.info.status == RunStatus.to_string(RunStatus.FINISHED) for r in old):
                continue
            for r in old:  # a run a killed sweep left half-written
                client.delete_run(r.info.run_id)
            k = cell["key"]
            run = client.create_run(
                exp_id,
                start_time=int(cell["began"] * 1000),
                run_name=f"{k['agent']} {k['task']} seed {k['seed']}",
                tags={CELL_TAG: cell["hash"], **{f"clinbench.{n}": str(v) for n, v in k.items()}},
            )
            metrics = [
                Metric(f"curve/{tag}", p[tag], int(p["time"] * 1000), p["step"])
                for p in cell["points"]
                for tag in CURVE_TAGS
                if p[tag] is not None
            ]
            metrics += [
                Metric(
                    f"final/{tag}", value, int(cell["finished"] * 1000), cell["final"]["env_steps"]
                )
                for tag, value in cell["final"].items()
            ]
            params = [Param(n, str(v)[:6000]) for n, v in sorted(cell["params"].items())]
            for i in range(0, max(len(metrics), 1), 1000):  # MLflow's batch limit
                client.log_batch(
                    run.info.run_id, metrics=metrics[i : i + 1000], params=params if i == 0 else []
                )
            client.set_terminated(run.info.run_id, end_time=int(cell["finished"] * 1000))
    finally:
        quiet.setLevel(level)


def tracking_uri(folder: Path) -> str:
    """MLflow's tracking URI of a results folder's ``logs/mlflow`` (``mlflow ui
    --backend-store-uri`` takes it)."""
    return f"sqlite:///{(folder / 'mlflow.db').resolve()}"
