"""``clinbench sweep --log``: learning curves read back with TensorBoard's own reader and
MLflow's own client, point for point against the cell files (extras ``tensorboard`` and
``mlflow``; each test skips when its extra is absent)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.sweep import logs

runner = CliRunner(env={"COLUMNS": "200"})
POINTS = 21
STEPS = 400  # a curve point every 20 steps
GRID = (
    "preset=smoke",
    "--agents",
    "hcapo,heuristic",
    "--tasks",
    "easy_bench",
    "--seeds",
    "1,2",
    f"protocol.curve_points={POINTS}",
    f"protocol.train_steps={STEPS}",
    "--quiet",
    "--no-report",
)


def installed(name: str) -> bool:
    try:
        logs.check([name])
    except logs.LogError:
        return False
    return True


HAVE = [name for name in logs.LOGGERS if installed(name)]
needs_tensorboard = pytest.mark.skipif(
    "tensorboard" not in HAVE or importlib.util.find_spec("tensorboard") is None,
    reason='the tensorboard extra is not installed (pip install -e ".[tensorboard]")',
)
needs_mlflow = pytest.mark.skipif(
    "mlflow" not in HAVE, reason='the mlflow extra is not installed (pip install -e ".[mlflow]")'
)


def sweep(results: Path, *args: str):
    return runner.invoke(app, ["sweep", *GRID, *args, "--results", str(results)])


def cell_records(results: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((results / "runs").glob("*.json"))]


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> Path:
    """A small sweep (two learning and two non-learning cells) logged to every logger
    installed here, then resumed with the same loggers (which must not log twice)."""
    if not HAVE:
        pytest.skip("neither the tensorboard nor the mlflow extra is installed")
    results = tmp_path_factory.mktemp("logged")
    for _ in range(2):
        result = sweep(results, "--log", ",".join(HAVE))
        assert result.exit_code == 0, result.output
    return results


def learning(results: Path) -> list[dict]:
    records = [r for r in cell_records(results) if r.get("curve")]
    assert sorted(r["key"]["agent"] for r in records) == ["hcapo", "hcapo"]
    return records


@needs_tensorboard
def test_tensorboard_runs_have_the_cells_curves_on_an_env_step_axis(logged):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    root = logged / "logs" / "tensorboard"
    runs = sorted(p.parent for p in root.rglob("events.out.tfevents.*"))
    assert [p.relative_to(root).as_posix() for p in runs] == [
        "recruitment/easy_bench/hcapo/seed_1",
        "recruitment/easy_bench/hcapo/seed_2",
    ]
    for record in learning(logged):
        run = root / logs.run_name(record["key"])
        assert len(list(run.glob("events.out.tfevents.*"))) == 1  # the resume rewrote it
        events = EventAccumulator(str(run))
        events.Reload()
        scores = events.Scalars("curve/mean_score")
        curve = record["curve"]
        assert len(scores) == len(curve) == POINTS
        assert [e.step for e in scores] == [p["env_steps"] for p in curve]
        assert [e.step for e in scores] == [STEPS // (POINTS - 1) * i for i in range(POINTS)]
        assert [e.value for e in scores] == pytest.approx([p["mean_score"] for p in curve])
        seconds = record["timing"]["curve_seconds"]
        walls = events.Scalars("curve/wall_seconds")
        assert [e.value for e in walls] == pytest.approx(seconds, rel=1e-6)
        # event times: the points' wall-clock, in order, as far apart as the record says
        times = [e.wall_time for e in scores]
        assert times == sorted(times)
        assert times[-1] - times[0] == pytest.approx(seconds[-1] - seconds[0], abs=1e-3)
        final = {t: events.Scalars(f"final/{t}") for t in ("mean_score", "env_steps")}
        mean = sum(e["score"] for e in record["episodes"]) / len(record["episodes"])
        assert final["mean_score"][0].value == pytest.approx(mean)
        assert final["env_steps"][0].value == record["training"]["env_steps"] == STEPS
        assert len(final["mean_score"]) == 1
        train = events.Scalars("final/train_seconds")[0].value
        assert train == pytest.approx(record["timing"]["train_seconds"], rel=1e-6)


@needs_mlflow
def test_mlflow_runs_have_the_cells_curves_and_are_not_logged_twice(logged):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=logs.tracking_uri(logged / "logs" / "mlflow"))
    experiment = client.get_experiment_by_name(logs.EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id])
    records = {r["hash"]: r for r in learning(logged)}
    assert sorted(r.data.tags[logs.CELL_TAG] for r in runs) == sorted(records)  # once each
    for run in runs:
        assert run.info.status == "FINISHED"
        record = records[run.data.tags[logs.CELL_TAG]]
        assert run.data.tags["clinbench.agent"] == "hcapo"
        assert run.data.params["protocol.curve_points"] == str(POINTS)
        history = client.get_metric_history(run.info.run_id, "curve/mean_score")
        history = sorted(history, key=lambda m: m.step)
        assert len(history) == POINTS
        assert [m.step for m in history] == [p["env_steps"] for p in record["curve"]]
        scores = [p["mean_score"] for p in record["curve"]]
        assert [m.value for m in history] == pytest.approx(scores)
        walls = client.get_metric_history(run.info.run_id, "curve/wall_seconds")
        walls = sorted(walls, key=lambda m: m.step)
        assert [m.value for m in walls] == pytest.approx(record["timing"]["curve_seconds"])
        assert run.data.metrics["final/env_steps"] == STEPS
        mean = sum(e["score"] for e in record["episodes"]) / len(record["episodes"])
        assert run.data.metrics["final/mean_score"] == pytest.approx(mean)


def test_an_unknown_logger_exits_2_naming_the_valid_ones(tmp_path):
    result = sweep(tmp_path / "r", "--log", "tensorboard,nosuch")
    assert result.exit_code == 2, result.output
    assert "'nosuch'" in result.output and "tensorboard, mlflow" in result.output
    assert not (tmp_path / "r").exists()


def test_a_missing_extra_exits_2_before_any_cell(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    result = sweep(tmp_path / "r", "--log", "mlflow")
    assert result.exit_code == 2, result.output
    assert 'pip install -c constraints.txt -e ".[mlflow]"' in " ".join(result.output.split())
    assert not (tmp_path / "r").exists()
