"""``clinbench sweep -m``: Hydra multirun grids into one results folder, each point's rows
equal to the ordinary sweep of that point; and the ray backend (the ``ray`` extra)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app

runner = CliRunner(env={"COLUMNS": "200"})
SMALL = (
    "preset=smoke",
    "--agents", "hcapo,heuristic",
    "--tasks", "easy_bench",
    "--seeds", "1,2",
    "--quiet",
    "--no-report",
)  # fmt: skip
SWEPT = ("protocol.eval_episodes=2,3", "agent.hcapo.omega=0,0.5")
KEYS = ["protocol.eval_episodes", "agent.hcapo.omega"]
TABLES = ("sweep_results.csv", "training_curves.csv", "progress_by_time.csv")


def sweep(*args: str, results: Path):
    return runner.invoke(app, ["sweep", *SMALL, *args, "--results", str(results)])


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("grid")
    result = sweep("-m", *SWEPT, results=results)
    assert result.exit_code == 0, result.output
    return results


def test_a_grid_is_one_folder_with_a_column_per_swept_key(grid):
    frame = pd.read_csv(grid / "sweep_results.csv", dtype={k: str for k in KEYS})
    assert list(frame.columns[:2]) == KEYS
    sizes = frame.groupby([*KEYS, "agent"]).size().to_dict()
    # 2 seeds x the point's evaluation episodes, for each agent at each of the 4 points
    assert sizes == {
        (e, o, a): 2 * int(e)
        for e in ("2", "3")
        for o in ("0", "0.5")
        for a in ("hcapo", "heuristic")
    }
    for name in ("training_curves.csv", "progress_by_time.csv"):
        assert list(pd.read_csv(grid / name).columns[:2]) == KEYS
    about = json.loads((grid / "grid.json").read_text())
    assert about["keys"] == KEYS
    assert [p["values"] for p in about["points"]] == [
        {KEYS[0]: e, KEYS[1]: o} for e in ("2", "3") for o in ("0", "0.5")
    ]
    # heuristic's cells do not depend on hcapo's omega: one file serves two points
    files = {p.stem for p in (grid / "runs").glob("*.json")}
    listed = [h for p in about["points"] for h in p["cells"]]
    assert set(listed) == files and len(listed) == 16 and len(files) == 12


@pytest.mark.parametrize("point", [("3", "0.5"), ("2", "0")])
def test_each_point_is_the_ordinary_sweep_of_its_overrides(grid, tmp_path, point):
    overrides = [f"{k}={v}" for k, v in zip(KEYS, point, strict=True)]
    result = sweep(*overrides, results=tmp_path)
    assert result.exit_code == 0, result.output
    for name in TABLES:
        rows = pd.read_csv(grid / name, dtype={k: str for k in KEYS})
        mine = rows[(rows[KEYS[0]] == point[0]) & (rows[KEYS[1]] == point[1])]
        mine = mine.drop(columns=KEYS).reset_index(drop=True)
        alone = pd.read_csv(tmp_path / name)
        pd.testing.assert_frame_equal(mine, alone, check_dtype=False)
    # the same cells, under the same hashes, as the ordinary sweep's
    alone = {p.name for p in (tmp_path / "runs").glob("*.json")}
    assert alone <= {p.name for p in (grid / "runs").glob("*.json")}


def test_a_grid_run_again_computes_nothing(grid):
    before = {p.name: p.stat().st_mtime_ns for p in (grid / "runs").glob("*.json")}
    result = sweep("-m", *SWEPT, results=grid)
    assert result.exit_code == 0, result.output
    assert "12 distinct cells, 0 run" in " ".join(result.output.split())
    assert {p.name: p.stat().st_mtime_ns for p in (grid / "runs").glob("*.json")} == before


def test_multirun_without_a_swept_key_is_an_ordinary_sweep(tmp_path):
    plain, multi = tmp_path / "plain", tmp_path / "multi"
    assert sweep("protocol.eval_episodes=2", results=plain).exit_code == 0
    assert sweep("-m", "protocol.eval_episodes=2", results=multi).exit_code == 0
    assert not (multi / "grid.json").exists()
    for name in TABLES:
        assert (multi / name).read_bytes() == (plain / name).read_bytes(), name
    config = (multi / "config.yaml").read_text().replace(str(multi), str(plain))
    assert config == (plain / "config.yaml").read_text()
    assert sorted(p.name for p in (multi / "runs").iterdir()) == sorted(
        p.name for p in (plain / "runs").iterdir()
    )


BAD = {
    "comma list without -m": ((SWEPT[0],), ["Ambiguous value", "-m"]),
    "interval": (("-m", "protocol.eval_episodes=interval(1,3)"), ["interval", "range"]),
    "results swept": (("-m", "results=a,b"), ["one results folder"]),
    "bad point": (("-m", "protocol.eval_episodes=2,x"), ["protocol.eval_episodes=x", "integer"]),
    "bad agent parameter in a point": (
        ("-m", "agent.hcapo.omega=0,abc"),
        ["agent.hcapo.omega=abc", "float"],
    ),
    "swept and also set": (("-m", "agents=heuristic,random"), ["agents", "--agents"]),
}


@pytest.mark.parametrize("args, named", BAD.values(), ids=BAD.keys())
def test_bad_grids_exit_2_before_any_work(tmp_path, args, named):
    results = tmp_path / "r"
    result = sweep(*args, results=results)
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    for text in named:
        assert text in out, text
    assert not results.exists()


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason='ray is not installed (pip install -c constraints.txt -e ".[ray]")',
)
def test_the_ray_backend_gives_the_same_results(tmp_path):
    loky, ray = tmp_path / "loky", tmp_path / "ray"
    assert sweep("--jobs", "2", results=loky).exit_code == 0
    result = sweep("--backend", "ray", "--jobs", "2", results=ray)
    assert result.exit_code == 0, result.output
    for name in TABLES:
        assert (ray / name).read_bytes() == (loky / name).read_bytes(), name
    assert sorted(p.name for p in (ray / "runs").iterdir()) == sorted(
        p.name for p in (loky / "runs").iterdir()
    )
    assert json.loads((ray / "manifest.json").read_text())["backend"] == "ray"
