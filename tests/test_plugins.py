"""Agents from outside clinbench: the example plugin package, installed and swept.

``examples/plugin_agent`` is installed into a temporary folder put on ``PYTHONPATH``
(its entry point is then found like any installed package's), and swept by name in
fresh ``clinbench`` processes on every backend: identical results, resume without
recomputation, only its own cells re-run after its code changes, its failures stay
its own, and it appears in the report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugin_agent"
FAILING = ROOT / "tests" / "plugins" / "recording_agent.py"
GRID = [
    "--tasks",
    "easy_bench",
    "--seeds",
    "1",
    "7",
    "21",
    "--steps",
    "0",
    "--eval-episodes",
    "2",
]
SCORES = ["task", "agent", "seed", "eval_seed", "score"]

pytestmark = pytest.mark.slow


def install(target: Path) -> Path:
    # pip's isolated build fetches a current setuptools: a venv's own may be too old to
    # build a wheel from a pyproject-only package.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return target


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("plugin_site"))


def clinbench(path: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    return subprocess.run(
        [sys.executable, "-m", "clinbench.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
        check=False,
    )


def scores(results: Path) -> pd.DataFrame:
    frame = pd.read_csv(results / "sweep_results.csv")
    return (
        frame[[c for c in SCORES if c in frame.columns]]
        .sort_values(SCORES[:4])
        .reset_index(drop=True)
    )


def counts(results: Path) -> dict[str, int]:
    return json.loads((results / "manifest.json").read_text())["counts"]


def test_the_plugin_is_listed_with_its_source(plugin_path):
    done = clinbench(plugin_path, "agents", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["funnel_first"]["source"] == "clinbench-example-plugin 0.1.0"
    assert rows["funnel_first"]["available"]
    assert rows["heuristic"]["source"] == "clinbench"
    assert "funnel_first" not in {
        r["name"] for r in json.loads(clinbench(None, "agents", "--json").stdout)
    }


def test_the_plugin_sweeps_identically_on_every_backend_and_resumes(plugin_path, tmp_path):
    runs = {  # the report (read below) once: the others compare scores only
        "jobs1": ["--jobs", "1"],
        "jobs2": ["--jobs", "2", "--no-report"],
        "dask": ["--backend", "dask", "--jobs", "2", "--no-report"],
    }
    for name, flags in runs.items():
        done = clinbench(
            plugin_path,
            "sweep",
            "--agents",
            "heuristic,funnel_first",
            *GRID,
            *flags,
            "--results",
            str(tmp_path / name),
            "--quiet",
        )
        assert done.returncode == 0, done.stderr + done.stdout
    first = scores(tmp_path / "jobs1")
    assert set(first.agent) == {"heuristic", "funnel_first"} and len(first) == 2 * 3 * 2
    for name in ("jobs2", "dask"):
        pd.testing.assert_frame_equal(first, scores(tmp_path / name))
    assert "funnel_first" in (tmp_path / "jobs1" / "benchmark_report.md").read_text()

    again = clinbench(
        plugin_path,
        "sweep",
        "--agents",
        "heuristic,funnel_first",
        *GRID,
        "--results",
        str(tmp_path / "jobs1"),
        "--quiet",
        "--no-report",
    )
    assert again.returncode == 0, again.stderr
    assert counts(tmp_path / "jobs1") == {
        "total": 6,
        "ran": 0,
        "resumed": 6,
        "failed": 0,
        "corrupt": 0,
    }


def test_editing_the_plugin_reruns_only_its_cells_and_its_failures_are_its_own(
    plugin_path, tmp_path
):
    site = Path(shutil.copytree(plugin_path, tmp_path / "site"))  # an install of its own to edit
    results = tmp_path / "results"
    sweep = [
        "sweep",
        "--agents",
        "heuristic,funnel_first",
        *GRID,
        "--results",
        str(results),
        "--quiet",
        "--jobs",
        "2",
        "--no-report",
    ]
    assert clinbench(site, *sweep).returncode == 0
    source = site / "clinbench_example_plugin" / "agent.py"
    source.write_text(source.read_text() + "\n# an edit that changes nothing but the code\n")
    assert clinbench(site, *sweep).returncode == 0
    assert counts(results) == {"total": 6, "ran": 3, "resumed": 3, "failed": 0, "corrupt": 0}

    text = source.read_text().replace(
        "        mask = self.macros.mask(obs)\n", "        raise RuntimeError('plugin bug')\n", 1
    )
    source.write_text(text)
    done = clinbench(site, *sweep)
    assert done.returncode == 1
    assert counts(results) == {"total": 6, "ran": 3, "resumed": 3, "failed": 3, "corrupt": 0}
    assert "plugin bug" in done.stderr
    manifest = json.loads((results / "manifest.json").read_text())
    status = {(c["agent"], c["seed"]): c["status"] for c in manifest["cells"]}
    assert {s for (a, _), s in status.items() if a == "heuristic"} == {"ok"}
    assert {s for (a, _), s in status.items() if a == "funnel_first"} == {"failed"}
    failed = next(c for c in manifest["cells"] if c["status"] == "failed")
    record = json.loads((results / "runs" / f"{failed['hash']}.json").read_text())
    assert "RuntimeError: plugin bug" in record["traceback"]


def test_spec_strings_need_no_packaging_and_fail_alone(tmp_path):
    done = clinbench(
        None,
        "sweep",
        "--agents",
        f"heuristic,{FAILING}:FailingAgent",
        *GRID,
        "--results",
        str(tmp_path),
        "--quiet",
        "--jobs",
        "2",
        "--no-report",
    )
    assert done.returncode == 1
    c = counts(tmp_path)
    assert c["failed"] == 3 and c["total"] == 6
    assert set(pd.read_csv(tmp_path / "sweep_results.csv").agent) == {"heuristic"}


def test_plugin_parameters_are_checked_against_the_constructor(plugin_path, tmp_path):
    ok = clinbench(
        plugin_path,
        "sweep",
        "--agents",
        "funnel_first",
        *GRID,
        "agent.funnel_first.explore=0.5",
        "--results",
        str(tmp_path / "a"),
        "--quiet",
        "--no-report",
    )
    assert ok.returncode == 0, ok.stderr
    record = json.loads(next((tmp_path / "a" / "runs").glob("*.json")).read_text())
    assert record["config"]["agent_params"] == {"explore": 0.5}
    bad = clinbench(
        plugin_path,
        "sweep",
        "--agents",
        "funnel_first",
        *GRID,
        "agent.funnel_first.nosuch=1",
        "--results",
        str(tmp_path / "b"),
        "--quiet",
    )
    assert bad.returncode == 2
    assert "nosuch" in bad.stderr and "explore" in bad.stderr and "prefer" in bad.stderr


def test_a_plugin_that_fails_to_import_exits_2_naming_the_entry_point(tmp_path):
    site = tmp_path / "site"
    dist = site / "broken_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[clinbench.agents]\nbroken = broken_plugin_module:Agent\n"
    )
    listed = clinbench(site, "agents", "--json")
    row = {r["name"]: r for r in json.loads(listed.stdout)}["broken"]
    assert not row["available"] and "broken_plugin_module" in row["unavailable"]
    done = clinbench(site, "sweep", "--agents", "broken", *GRID, "--results", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "entry point broken" in done.stderr and "ModuleNotFoundError" in done.stderr
    assert "Traceback" not in done.stderr
    debug = clinbench(
        site, "--debug", "sweep", "--agents", "broken", *GRID, "--results", str(tmp_path / "r")
    )
    assert debug.returncode == 2 and "Traceback" in debug.stderr
    assert "No module named 'broken_plugin_module'" in debug.stderr and "ep.load()" in debug.stderr


def test_a_plugin_named_like_a_builtin_is_refused(tmp_path):
    done = clinbench(
        None,
        "sweep",
        "--agents",
        "clinbench.agents.heuristic:HeuristicAgent",
        *GRID,
        "--results",
        str(tmp_path),
    )
    assert done.returncode == 2
    assert "already an agent" in done.stderr


def test_the_example_plugins_own_tests_pass(plugin_path):
    env = dict(os.environ, PYTHONPATH=str(plugin_path))
    # -n 0: the example's two tests in the one process (the repository's pytest settings,
    # which it picks up, start two pytest-xdist workers, each importing clinbench anew)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    done = subprocess.run(
        [*command, str(EXAMPLE / "tests")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=EXAMPLE,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(EXAMPLE / "tests" / "__pycache__", ignore_errors=True)


@pytest.mark.skipif(shutil.which("clinbench") is None, reason="console script not installed")
def test_a_module_spec_works_with_the_console_script_from_the_working_directory(tmp_path):
    (tmp_path / "my_agents.py").write_text(
        "from clinbench.agents import Agent\n\n"
        "class FirstValid(Agent):\n"
        "    name = 'first_valid'\n"
        "    description = 'the first valid macro-action'\n\n"
        "    def act(self, obs):\n"
        "        return self.macros.to_action(int(self.macros.mask(obs).argmax()), obs)\n"
    )
    done = subprocess.run(
        [
            "clinbench",
            "run",
            "--agent",
            "my_agents:FirstValid",
            "--task",
            "easy_bench",
            "--seed",
            "3",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agent"] == "first_valid"
