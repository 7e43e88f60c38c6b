"""``clinbench sweep``: list options, identical results on every backend, kill and resume,
corrupt cell files, failing agents, bad input, and the ``experiments/full_sweep.py`` wrapper.

Every sweep uses the ``smoke`` preset and a temporary results folder.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import clinbench
from clinbench import protocol
from clinbench.agents.registry import agent_names
from clinbench.cli.app import app
from clinbench.cli.argv import normalise_list_options, split_list
from clinbench.config import load
from clinbench.sweep import run_sweep
from clinbench.sweep.cells import expand

REPO = Path(clinbench.__file__).resolve().parents[1]
FULL_SWEEP = REPO / "experiments" / "full_sweep.py"
TABLES = ("sweep_results.csv", "training_curves.csv", "progress_by_time.csv")
# the families' studies off: what they keep, resume and compute is tests/test_studies.py's
SMOKE = ("preset=smoke", "studies=off", "--quiet", "--no-report")
# heuristic and random on two tasks plus an hcapo that raises at construction
FAILING = (
    "--agents",
    "heuristic",
    "random",
    "hcapo",
    "--tasks",
    "easy_bench",
    "medium_bench",
    "agent.hcapo.group_size=0",
    *SMOKE,
)

# A wide terminal, so that messages are not folded across lines.
runner = CliRunner(env={"COLUMNS": "200"})


def sweep(*args: str, results: Path):
    return runner.invoke(app, ["sweep", *args, "--results", str(results)])


def flat(text: str) -> str:
    """Output with every run of white space made one space (rich may wrap lines)."""
    return " ".join(text.split())


def cell_files(results: Path) -> list[Path]:
    return sorted((results / "runs").glob("*.json"))


def manifest(results: Path) -> dict:
    return json.loads((results / "manifest.json").read_text())


def records(results: Path) -> dict[tuple, dict]:
    """Cell records by (task, agent, seed)."""
    out = {}
    for path in cell_files(results):
        r = json.loads(path.read_text())
        out[(r["key"]["task"], r["key"]["agent"], r["key"]["seed"])] = r
    return out


def assert_same_tables(results: Path, reference: Path) -> None:
    for name in TABLES:
        assert (results / name).read_bytes() == (reference / name).read_bytes(), name


def smoke_grid_size() -> int:
    """Cells of the smoke sweep: every agent on the tasks of the families it plays."""
    return len(expand(load(["preset=smoke"])))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted smoke sweep (every agent, every task) with two jobs."""
    results = tmp_path_factory.mktemp("reference")
    result = sweep(*SMOKE, "--jobs", "2", results=results)
    assert result.exit_code == 0, result.output
    cfg = load(["preset=smoke"])
    frame = pd.read_csv(results / "sweep_results.csv")
    assert len(frame) == smoke_grid_size() * cfg.protocol.eval_episodes
    assert set(frame.agent) == set(cfg.agents) and set(frame.task) == set(cfg.tasks)
    learners = pd.read_csv(results / "training_curves.csv").agent.unique()
    assert {"hcapo", "mira", "klong", "memexrl"} <= set(learners)
    return results


# --------------------------------------------------------------------------- list options
@pytest.mark.parametrize(
    "args, expected",
    [
        (["sweep", "--seeds", "1", "7", "21"], ["sweep", "--seeds", "1,7,21"]),
        (["--seeds", "1,7,21"], ["--seeds", "1,7,21"]),
        (["--seeds", "1,7", "21"], ["--seeds", "1,7,21"]),
        (["--seeds", "1", "7", "preset=smoke"], ["--seeds", "1,7", "preset=smoke"]),
        (
            ["--agents", "heuristic", "random", "--jobs", "2"],
            ["--agents", "heuristic,random", "--jobs", "2"],
        ),
        (["--agents", "heuristic", "-q"], ["--agents", "heuristic", "-q"]),
        (
            ["--tasks", "easy_bench", "hard_bench", "--seeds", "1", "2"],
            ["--tasks", "easy_bench,hard_bench", "--seeds", "1,2"],
        ),
        (["--seeds", "--jobs", "2"], ["--seeds", "", "--jobs", "2"]),  # an empty list
        (["--jobs", "2", "3"], ["--jobs", "2", "3"]),
        (["preset=smoke", "x"], ["preset=smoke", "x"]),
    ],
)
def test_normalise_list_options(args, expected):
    assert normalise_list_options(args) == expected


def test_split_list():
    assert split_list("1,7, 21,") == ["1", "7", "21"]
    # one quoted argument, as --help shows it: --agents 'heuristic hcapo'
    assert split_list("heuristic hcapo") == ["heuristic", "hcapo"]
    assert split_list("") == [] and split_list(None) == []


@pytest.mark.parametrize(
    "seed_args, seeds",
    [(["1", "7", "21", "42", "123"], [1, 7, 21, 42, 123]), (["1,7,21"], [1, 7, 21])],
    ids=["spaces", "commas"],
)
@pytest.mark.parametrize(
    "agent_args", [["heuristic", "random"], ["heuristic,random"]], ids=["spaces", "commas"]
)
def test_list_options_take_spaces_or_commas(tmp_path, seed_args, seeds, agent_args):
    result = sweep(
        "--seeds",
        *seed_args,
        "--agents",
        *agent_args,
        "--tasks",
        "easy_bench",
        *SMOKE,
        "--backend",
        "sequential",
        results=tmp_path,
    )
    assert result.exit_code == 0, result.output
    grid = manifest(tmp_path)["grid"]
    assert grid["seeds"] == seeds
    assert grid["agents"] == ["heuristic", "random"]
    assert grid["tasks"] == ["easy_bench"]
    frame = pd.read_csv(tmp_path / "sweep_results.csv")
    assert sorted(frame.seed.unique()) == sorted(seeds)


def test_flags_win_over_a_preset_given_before_them(tmp_path):
    result = sweep(
        "preset=smoke",
        "--seeds",
        "5",
        "--agents",
        "heuristic",
        "--tasks",
        "easy_bench",
        "--eval-episodes",
        "3",
        "--quiet",
        "--no-report",
        "--backend",
        "sequential",
        results=tmp_path,
    )
    assert result.exit_code == 0, result.output
    m = manifest(tmp_path)
    assert m["grid"]["seeds"] == [5]
    assert m["protocol"]["eval_episodes"] == 3
    assert len(pd.read_csv(tmp_path / "sweep_results.csv")) == 3


# --------------------------------------------------------------------------- backends
#: One task of each family: every agent, on fewer cells than the reference's grid.
SUBSET_TASKS = ("easy_bench", "effective_drug", "develop")
ONE_TASK_PER_FAMILY = ("--tasks", *SUBSET_TASKS)


def assert_same_as_reference_rows(results: Path, reference: Path) -> None:
    """``results``' tables are the reference's rows of :data:`SUBSET_TASKS`, in order,
    and each of its cell files is the reference's file of that name but for its timing
    and the torch capability of the process that ran it (recorded whenever torch is
    loaded there, which an earlier test in this process may have done): a cell's hash
    and record do not depend on the grid around it."""
    for name in TABLES:
        got = pd.read_csv(results / name)
        expected = pd.read_csv(reference / name)
        expected = expected[expected.task.isin(SUBSET_TASKS)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    kept = records(reference).values()
    hashes = sorted(r["hash"] for r in kept if r["key"]["task"] in SUBSET_TASKS)
    assert [p.stem for p in cell_files(results)] == hashes
    for path in cell_files(results):
        ours, theirs = (
            json.loads(path.read_text()),
            json.loads((reference / "runs" / path.name).read_text()),
        )
        for record in (ours, theirs):
            record.pop("timing")
            record.pop("torch_capability", None)
        assert ours == theirs, path.name


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_jobs(tmp_path, reference):
    """Every agent on one task per family with one worker process gives the cells and
    rows of the reference's two."""
    result = sweep(*SMOKE, *ONE_TASK_PER_FAMILY, "--jobs", "1", results=tmp_path)
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "sweep_results.csv").agent) == set(
        load(["preset=smoke"]).agents
    )
    assert_same_as_reference_rows(tmp_path, reference)
    assert manifest(tmp_path)["backend"] == "loky"


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend_args",
    [["--backend", "sequential"], ["--backend", "dask", "--scheduler", "local"]],
    ids=["sequential", "dask-local"],
)
def test_results_do_not_depend_on_the_backend(tmp_path, reference, backend_args):
    """Every agent on one task per family, in this process or on a local dask cluster,
    gives the reference's (loky's) cells and rows."""
    result = sweep(*SMOKE, *ONE_TASK_PER_FAMILY, *backend_args, results=tmp_path)
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "sweep_results.csv").agent) == set(
        load(["preset=smoke"]).agents
    )
    assert_same_as_reference_rows(tmp_path, reference)
    assert manifest(tmp_path)["backend"] == backend_args[1]


# --------------------------------------------------------------------------- kill and resume
def _kill_part_way(results: Path, total: int) -> None:
    """Start a one-job smoke sweep (one task per family) in a subprocess and SIGKILL it
    after a few cells."""
    command = [
        sys.executable,
        "-m",
        "clinbench.cli.app",
        "sweep",
        *SMOKE,
        *ONE_TASK_PER_FAMILY,
        "--jobs",
        "1",
        "--results",
        str(results),
    ]
    proc = subprocess.Popen(
        command, cwd=results.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while len(cell_files(results)) < 3:
            assert proc.poll() is None, "the sweep stopped before it could be killed"
            assert time.monotonic() < deadline, "no cell finished in time"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert len(cell_files(results)) < total, "the sweep finished before it was killed"


@pytest.mark.slow
def test_killed_sweep_resumes_and_loses_nothing(tmp_path, reference):
    results = tmp_path / "killed"
    total = len(expand(load(["preset=smoke", f"tasks=[{','.join(SUBSET_TASKS)}]"])))
    _kill_part_way(results, total)
    finished = {p.name: p.read_bytes() for p in cell_files(results)}
    # what a kill in the middle of a write leaves behind
    (results / "runs" / ".0123456789abcdef0123.json.k1ll3d.tmp").write_text('{"format": 1, "ha')

    result = sweep(*SMOKE, *ONE_TASK_PER_FAMILY, "--jobs", "2", results=results)
    assert result.exit_code == 0, result.output
    for name, data in finished.items():
        assert (results / "runs" / name).read_bytes() == data, f"{name} was recomputed"
    counts = manifest(results)["counts"]
    assert counts["resumed"] == len(finished)
    assert counts["ran"] == total - len(finished)
    assert len(cell_files(results)) == total
    assert_same_as_reference_rows(results, reference)
    assert not list(results.rglob("*.tmp"))


def test_finished_sweep_reruns_nothing(tmp_path):
    args = (
        "--agents",
        "heuristic",
        "random",
        "--tasks",
        "easy_bench",
        *SMOKE,
        "--backend",
        "sequential",
    )
    assert sweep(*args, results=tmp_path).exit_code == 0
    before = {p.name: p.read_bytes() for p in cell_files(tmp_path)}
    result = sweep(*args, results=tmp_path)
    assert result.exit_code == 0, result.output
    assert manifest(tmp_path)["counts"]["ran"] == 0
    assert {p.name: p.read_bytes() for p in cell_files(tmp_path)} == before
    again = sweep(*args, "--no-resume", results=tmp_path)
    assert again.exit_code == 0, again.output
    assert manifest(tmp_path)["counts"]["ran"] == len(before)


# --------------------------------------------------------------------------- corrupt cell files
@pytest.mark.slow
def test_corrupt_cell_files_are_reported_and_recomputed(tmp_path, reference):
    results = tmp_path / "copy"
    shutil.copytree(reference, results)
    for name in TABLES:
        (results / name).unlink()
    truncated, emptied, misnamed, donor = cell_files(results)[:4]
    data = truncated.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    emptied.write_text("{}")
    misnamed.write_bytes(donor.read_bytes())  # valid JSON, but another cell's record

    result = sweep(*SMOKE, "--jobs", "2", results=results)
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    for path in (truncated, emptied, misnamed):
        assert path.name in out, f"{path.name} not reported"
        record = json.loads(path.read_text())
        assert record["hash"] == path.stem and record["status"] == "ok"
    counts = manifest(results)["counts"]
    assert counts["corrupt"] == 3 and counts["ran"] == 3
    assert counts["resumed"] == smoke_grid_size() - 3
    assert_same_tables(results, reference)


# --------------------------------------------------------------------------- failing cells
def _assert_failed_summary(result, failed_keys) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    out = flat(result.output)
    assert "Traceback" not in out
    for task, agent, seed in failed_keys:
        assert f"{agent} / {task} / seed {seed}" in out


@pytest.mark.slow
def test_a_raising_agent_fails_only_its_cells(tmp_path):
    result = sweep(*FAILING, "--jobs", "2", results=tmp_path)
    cells = records(tmp_path)
    assert len(cells) == 2 * 3 * len(load(["preset=smoke"]).protocol.seeds)
    failed = {k for k, r in cells.items() if r["status"] == "failed"}
    assert failed == {k for k in cells if k[1] == "hcapo"}
    assert all(r["status"] == "ok" for k, r in cells.items() if k not in failed)
    for key in failed:
        trace = cells[key]["traceback"]
        assert trace.startswith("Traceback") and "ValueError" in trace and "group_size" in trace
    _assert_failed_summary(result, failed)
    assert manifest(tmp_path)["counts"]["failed"] == len(failed)
    frame = pd.read_csv(tmp_path / "sweep_results.csv")
    assert set(frame.agent) == {"heuristic", "random"}
    assert len(frame.groupby(["agent", "task", "seed"])) == len(cells) - len(failed)
    failed_bytes = {
        p.name: p.read_bytes()
        for p in cell_files(tmp_path)
        if json.loads(p.read_text())["status"] == "failed"
    }

    # a re-run keeps the failures without running them again
    again = sweep(*FAILING, "--jobs", "2", results=tmp_path)
    _assert_failed_summary(again, failed)
    counts = manifest(tmp_path)["counts"]
    assert counts["ran"] == 0 and counts["resumed"] == len(cells)
    assert all((tmp_path / "runs" / n).read_bytes() == b for n, b in failed_bytes.items())

    # --retry-failed runs exactly the failed cells again (still broken here)
    retried = sweep(*FAILING, "--jobs", "2", "--retry-failed", results=tmp_path)
    _assert_failed_summary(retried, failed)
    assert manifest(tmp_path)["counts"]["ran"] == len(failed)


def test_retry_failed_recomputes_cells_once_the_cause_is_fixed(tmp_path, monkeypatch):
    """A failure outside the config (same cell hash): --retry-failed is what reruns it."""

    def cfg(folder: Path):
        return load(
            [
                "preset=smoke",
                "agents=[heuristic,hcapo]",
                "tasks=[easy_bench]",
                "launcher=sequential",
                f"results={folder}",
            ]
        )

    real = protocol.make_agent

    def broken(name, env, **params):
        if name == "hcapo":
            raise RuntimeError("simulated outage")
        return real(name, env, **params)

    monkeypatch.setattr(protocol, "make_agent", broken)
    seeds = len(cfg(tmp_path).protocol.seeds)
    first = run_sweep(cfg(tmp_path / "sweep"), show_progress=False)
    assert not first.ok and len(first.failed) == seeds
    assert all("simulated outage" in r["traceback"] for r in first.failed)

    monkeypatch.setattr(protocol, "make_agent", real)
    kept = run_sweep(cfg(tmp_path / "sweep"), show_progress=False)
    assert kept.ran == 0 and len(kept.failed) == seeds
    fixed = run_sweep(cfg(tmp_path / "sweep"), retry_failed=True, show_progress=False)
    assert fixed.ok and fixed.ran == seeds and fixed.resumed == seeds

    clean = run_sweep(cfg(tmp_path / "clean"), show_progress=False)
    assert clean.ok
    assert_same_tables(tmp_path / "sweep", tmp_path / "clean")


def test_fail_fast_stops_at_the_first_failure(tmp_path):
    result = sweep(*FAILING, "--jobs", "1", "--fail-fast", results=tmp_path)
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    total = 2 * 3 * len(load(["preset=smoke"]).protocol.seeds)
    written = records(tmp_path)
    assert 1 <= len(written) < total
    assert any(r["status"] == "failed" for r in written.values())
    statuses = [c["status"] for c in manifest(tmp_path)["cells"]]
    assert statuses.count("missing") == total - len(written)


# --------------------------------------------------------------------------- bad input
#: click ("x>=0") and typer ("greater than or equal to 0") word a range differently.
AT_LEAST = r"(x>=|greater than or equal to ){}\b"
BAD_INPUT = {
    "unknown agent": (
        ["--agents", "heuristic", "nosuch", "preset=smoke"],
        ["'nosuch'", *agent_names()],
    ),
    "unknown task": (
        ["--tasks", "nosuch", "preset=smoke"],
        ["'nosuch'", "easy_bench", "medium_bench", "hard_bench"],
    ),
    "unknown preset": (["preset=nosuch"], ["nosuch", "smoke", "default", "paper"]),
    "unknown key": (["preset=smoke", "foo=1"], ["'foo'", "agents", "protocol", "tasks"]),
    "unknown agent parameter": (
        ["preset=smoke", "agent.hcapo.omegaa=1"],
        ["omegaa", "omega", "group_size"],
    ),
    "bad agent parameter": (
        ["preset=smoke", "agent.hcapo.omega=abc"],
        ["agent.hcapo.omega", "float"],
    ),
    "unknown environment": (["preset=smoke", "env=nosuch"], ["nosuch", "recruitment"]),
    "empty seeds": (["preset=smoke", "protocol.seeds=[]"], ["seed list is empty", "--seeds"]),
    "non-integer seed": (["--seeds", "1", "x", "preset=smoke"], ["'x'", "integer"]),
    "repeated seed": (["--seeds", "1", "1", "preset=smoke"], ["distinct"]),
    "negative steps": (["--steps", "-1", "preset=smoke"], ["--steps", AT_LEAST.format(0)]),
    "episodes budget": (["--episodes", "600", "preset=smoke"], ["--episodes"]),
    "no evaluation episodes": (
        ["--eval-episodes", "0", "preset=smoke"],
        ["--eval-episodes", AT_LEAST.format(1)],
    ),
    "unknown backend": (
        ["--backend", "nosuch", "preset=smoke"],
        ["nosuch", "loky", "sequential", "dask", "ray"],
    ),
    "zero jobs": (["--jobs", "0", "preset=smoke"], ["--jobs", AT_LEAST.format(1)]),
}


@pytest.mark.parametrize("args, named", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_exits_2_naming_the_valid_choices(tmp_path, args, named):
    results = tmp_path / "results"
    result = sweep(*args, "--quiet", "--no-report", results=results)
    assert result.exit_code == 2, result.output
    out = flat(result.output)
    assert "Traceback" not in out
    for text in named:
        assert text in out or re.search(text, out), text
    assert not results.exists(), "bad input must fail before anything is written"


# --------------------------------------------------------------------------- full_sweep.py
@pytest.mark.skipif(not FULL_SWEEP.exists(), reason="experiments/full_sweep.py is not there yet")
def test_full_sweep_script_runs_the_same_sweep(tmp_path):
    flags = [
        "--steps",
        "2",
        "--eval-episodes",
        "1",
        "--seeds",
        "1",
        "--agents",
        "heuristic",
        "random",
        "--tasks",
        "easy_bench",
        "--quiet",
        "--no-report",
    ]
    script = subprocess.run(
        [sys.executable, str(FULL_SWEEP), *flags, "--results", str(tmp_path / "script")],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert script.returncode == 0, script.stderr
    result = sweep(*flags, results=tmp_path / "cli")
    assert result.exit_code == 0, result.output
    assert_same_tables(tmp_path / "script", tmp_path / "cli")
    m = manifest(tmp_path / "script")
    assert m["protocol"]["train_steps"] == 2 and m["protocol"]["eval_episodes"] == 1
    assert m["grid"]["seeds"] == [1] and m["grid"]["agents"] == ["heuristic", "random"]


def test_cell_code_is_what_cells_run():
    """The hash covers a family's simulator, its batched core (the learners train in it)
    and agents, not its charts, which no cell runs (editing those must not re-run the
    canonical cells)."""
    from clinbench.sweep.cells import cell_code_files

    files = cell_code_files("recruitment")
    assert "env/recruitment/simulator.py" in files
    assert "env/base.py" in files and "protocol.py" in files
    assert "env/recruitment/vector.py" in files and "env/gym_vector.py" in files
    assert "env/recruitment/charts.py" not in files and "agents/registry.py" not in files
    assert not any(f.startswith("env/trial_design/") for f in files)
    assert "env/trial_design/simulator.py" in cell_code_files("trial_design")
