"""A user's path never gets a traceback: paths the override grammar would misread, a file
where a folder belongs, a folder that cannot be written, a damaged CSV, a busy port,
a killed or interrupted sweep. Each exits 2 (130 for Ctrl-C) naming what is wrong,
draws no wrong figure and leaves no process behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import clinbench
from clinbench.cli import common
from clinbench.cli.app import app
from clinbench.config import load
from clinbench.sweep import run_sweep

ROOT = Path(clinbench.__file__).resolve().parents[1]
runner = CliRunner(env={"COLUMNS": "200"})
#: One fast sweep: the heuristic on one recruitment task.
FAST = [
    "preset=smoke",
    "env=recruitment",
    "launcher=sequential",
    "--agents",
    "heuristic",
    "--tasks",
    "easy_bench",
    "--seeds",
    "1",
]


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *named: str | Path) -> None:
    """Exit 2, a one-line error naming each of ``named``, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for thing in named:
        assert str(thing) in result.output.replace("\n", ""), result.output


def cli(*args: str | Path, **kwargs) -> subprocess.CompletedProcess:
    """``clinbench ...`` in a fresh interpreter, output piped (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "clinbench.cli.app", *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        **kwargs,
    )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """Results of two agents on one task, two seeds, with the report and charts."""
    folder = tmp_path_factory.mktemp("tiny") / "results"
    cfg = load(
        [
            "preset=smoke",
            "env=recruitment",
            "tasks=[easy_bench]",
            "agents=[heuristic,random]",
            "protocol.seeds=[1,2]",
            "launcher=sequential",
            f"results={folder}",
        ]
    )
    assert run_sweep(cfg, show_progress=False).ok
    result = runner.invoke(app, ["report", "--results", str(folder), "--reproducible"])
    assert result.exit_code == 0, result.output
    return folder


def test_sweep_results_path_with_unicode_equals_and_quote(tmp_path):
    """The path never passes through Hydra's override grammar."""
    results = tmp_path / "résultats=1 l'essai"
    result = invoke("sweep", *FAST, "--no-report", "--quiet", "--results", results)
    assert result.exit_code == 0, result.output
    assert len(list((results / "runs").glob("*.json"))) == 1
    saved = yaml.safe_load((results / "config.yaml").read_text())
    assert saved["results"] == str(results)
    # what interpolates the results folder sees it too (never the default folder)
    assert saved["agent"]["llm"]["call_log"] == f"{results}/llm_calls"
    assert invoke("report", "--results", results, "--no-charts").exit_code == 0
    assert (results / "benchmark_report.md").is_file()


@pytest.mark.parametrize("command", ["sweep", "report", "charts", "export", "dataset"])
def test_a_file_where_a_folder_belongs_is_named(command, tmp_path, tiny):
    file = tmp_path / "a file"
    file.write_text("keep me")
    args = {
        "sweep": ["sweep", *FAST, "--results", file],
        "report": ["report", "--results", file],
        "charts": ["charts", "--results", file],
        "export": ["export", "--results", tiny, "--out", file],
        "dataset": [
            *("dataset", "create", "--tasks", "easy_bench", "--agents", "heuristic"),
            *("--episodes", "1", "--name", "paths-v0", "--data-dir", file),
        ],
    }[command]
    if command == "dataset":
        from clinbench.offline import available

        if not available():
            pytest.skip("the offline extra is not installed")
    result = invoke(*args)
    refused(result, file)
    assert file.read_text() == "keep me"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
@pytest.mark.parametrize("command", ["sweep", "report", "charts"])
def test_a_read_only_results_folder_is_named(command, tmp_path, tiny):
    results = tmp_path / "results"
    shutil.copytree(tiny, results)
    results.chmod(0o555)
    try:
        args = ["sweep", *FAST] if command == "sweep" else [command]
        refused(invoke(*args, "--results", results), results)
    finally:
        results.chmod(0o755)


@pytest.mark.parametrize("command", ["sweep", "report", "charts"])
def test_a_folder_that_refuses_writes_is_named(command, tmp_path, tiny, monkeypatch):
    """The same as the read-only test, for root (who may write anywhere): the write probe
    is refused as the kernel would refuse it."""
    results = tmp_path / "results"
    shutil.copytree(tiny, results)
    mkstemp = common.tempfile.mkstemp

    def refuse(*args, dir=None, **kwargs):
        if Path(dir) == results:
            raise PermissionError(13, "Permission denied", str(dir))
        return mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(common.tempfile, "mkstemp", refuse)
    before = sorted(p.name for p in results.rglob("*"))
    args = ["sweep", *FAST] if command == "sweep" else [command]
    result = invoke(*args, "--results", results)
    refused(result, results, "Permission denied")
    assert sorted(p.name for p in results.rglob("*")) == before


def test_an_unforeseen_file_system_error_is_named_not_a_traceback(tmp_path, tiny, monkeypatch):
    """What a command did not check for (a full disk, a file vanishing) still exits 2."""
    import clinbench.report

    target = tmp_path / "benchmark_report.md"

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", str(target))

    monkeypatch.setattr(clinbench.report, "make_report", full)
    refused(invoke("report", "--results", tiny), target, "No space left on device")


def test_ctrl_c_outside_a_sweep_exits_130_without_a_traceback(tiny, monkeypatch):
    import clinbench.report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(clinbench.report, "make_report", interrupted)
    result = invoke("report", "--results", tiny)
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["charts", "export"])
def test_a_nan_score_in_the_csv_is_refused_before_drawing(command, tmp_path, tiny):
    results = tmp_path / "results"
    shutil.copytree(tiny, results)
    csv = results / "sweep_results.csv"
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index("score")] = "nan"
    csv.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    charts = {p.name: p.read_bytes() for p in (results / "charts").iterdir()}
    out = tmp_path / "paper"
    args = ["charts"] if command == "charts" else ["export", "--out", out, "--format", "svg"]
    refused(invoke(*args, "--results", results), csv, "not finite")
    assert {p.name: p.read_bytes() for p in (results / "charts").iterdir()} == charts
    assert not list(out.rglob("*.svg"))


def test_export_readme_names_the_results_it_was_given(tmp_path, tiny):
    out = tmp_path / "paper"
    result = invoke("export", "--results", tiny, "--out", out, "--format", "svg")
    assert result.exit_code == 0, result.output
    readme = (out / "README.md").read_text()
    assert f"`{tiny}/`" in readme
    assert "data/sweep_results" not in readme
    assert f"--results {tiny}" in readme and f"--out {out}/" in readme
    assert f"\\input{{{out}/tables/per_task.tex}}" in readme


def test_dataset_create_without_the_extra_refuses_before_any_work(tmp_path, monkeypatch):
    import clinbench.offline

    monkeypatch.setattr(clinbench.offline, "available", lambda: False)
    folder = tmp_path / "datasets"
    result = invoke(
        *("dataset", "create", "--tasks", "easy_bench", "--agents", "heuristic"),
        *("--episodes", "1", "--name", "x-v0", "--data-dir", folder),
    )
    refused(result, 'pip install -c constraints.txt -e ".[offline]"')
    assert not folder.exists()


def test_an_unknown_preset_names_the_valid_ones():
    result = invoke("sweep", "preset=nope")
    refused(result, "unknown preset 'nope'; valid preset options: ", "smoke")
    assert "Available options" not in result.output


def test_charts_outside_a_clone_name_the_missing_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["charts", "--check"], ["charts"], ["export", "--out", tmp_path / "x"]):
        refused(invoke(*args), "data/sweep_results does not exist")


def test_an_empty_seed_list_before_another_flag_is_not_read_as_seeds(tmp_path):
    result = invoke("sweep", "--seeds", "--results", tmp_path / "x")
    refused(result, "the seed list is empty")
    assert not (tmp_path / "x").exists()


def test_progress_lines_when_the_output_is_not_a_terminal(tmp_path):
    results = tmp_path / "results"
    run = cli("sweep", *FAST[:-1], "1,2,3", "--no-report", "--results", results, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("sweep: ")]
    assert [ln.split()[1] for ln in lines] == ["1/3", "2/3", "3/3"]
    assert all("(0 failed)" in ln and "elapsed, eta" in ln for ln in lines)
    assert lines[-1].endswith("eta 0 s")


def _sweep_process(results: Path, seeds: int) -> subprocess.Popen:
    args = [*FAST[:2], "--agents", "heuristic", "--tasks", "hard_bench", "--jobs", "2"]
    args += ["--seeds", ",".join(map(str, range(1, seeds + 1))), "--no-report"]
    argv = ["clinbench", "sweep", *args, "--results", str(results)]
    # A shell's background job starts with SIGINT ignored and Python keeps that; a terminal's
    # Ctrl-C reaches a process that has Python's default handler, so the child installs it.
    child = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        f"sys.argv = {argv!r}; runpy.run_module('clinbench.cli.app', run_name='__main__')"
    )
    return subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,  # its own process group, as a shell job is
    )


def _first_progress_line(proc: subprocess.Popen) -> str:
    for line in proc.stderr:
        if line.startswith("sweep: "):
            return line
    raise AssertionError(f"the sweep ended without progress (exit {proc.wait()})")


@pytest.mark.slow
def test_ctrl_c_says_what_was_kept_and_how_to_resume(tmp_path):
    results = tmp_path / "results"
    proc = _sweep_process(results, seeds=400)
    try:
        _first_progress_line(proc)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    kept = len(list((results / "runs").glob("*.json")))
    assert f"interrupted: {kept} of 400 cells are kept in {results / 'runs'}" in err
    assert f"--results {results}" in err.split("Resume with:")[1]


@pytest.mark.slow
def test_workers_exit_with_a_killed_sweep(tmp_path):
    psutil = pytest.importorskip("psutil")
    proc = _sweep_process(tmp_path / "results", seeds=400)
    try:
        _first_progress_line(proc)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children  # loky's workers and resource trackers
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    alive = children
    while alive and time.monotonic() < deadline:
        alive = [c for c in alive if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    for child in alive:  # do not leave them to the next test either
        child.kill()
    assert not alive, [c.cmdline() for c in alive]


def _serve_extra():
    from clinbench.serve import available

    if not available():
        pytest.skip("the serve extra is not installed")


def test_serve_on_a_busy_port_exits_2_without_announcing():
    _serve_extra()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = cli("serve", "--task", "hard_bench", "--port", port, timeout=120)
    assert run.returncode == 2, run.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in run.stderr and "in use" in run.stderr
    assert "serving" not in run.stderr and "Traceback" not in run.stderr


def test_serve_on_an_unknown_host_exits_2_naming_it():
    _serve_extra()
    run = cli("serve", "--task", "hard_bench", "--host", "no-such-host.invalid", timeout=120)
    assert run.returncode == 2, run.stderr
    assert "cannot resolve --host 'no-such-host.invalid'" in run.stderr
    assert "serving" not in run.stderr and "Traceback" not in run.stderr


def test_serve_announces_an_address_that_answers():
    _serve_extra()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "clinbench.cli.app", "serve", "-t", "hard_bench", "-p", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    try:
        line = proc.stderr.readline()
        assert line.startswith(f"serving recruitment/hard_bench on ws://127.0.0.1:{port}/ws")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as reply:
            assert reply.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory) -> tuple[Path, str]:
    from clinbench.offline import available

    if not available():
        pytest.skip("the offline extra is not installed")
    folder = tmp_path_factory.mktemp("data") / "my datasets"
    name = "a-dataset-name-long-enough-to-be-cut-by-an-eighty-column-table-v0"
    result = invoke(
        *("dataset", "create", "--tasks", "easy_bench", "--agents", "heuristic"),
        *("--episodes", "1", "--name", name, "--data-dir", folder, "-q"),
    )
    assert result.exit_code == 0, result.output
    return folder, name


def test_dataset_list_is_whole_when_piped(dataset_dir):
    folder, name = dataset_dir
    run = cli("dataset", "list", "--data-dir", folder, timeout=120)
    assert run.returncode == 0, run.stderr
    assert name in run.stdout and "…" not in run.stdout


def test_dataset_info_quotes_paths(dataset_dir):
    folder, name = dataset_dir
    result = invoke("dataset", "info", name, "--data-dir", folder)
    assert result.exit_code == 0, result.output
    assert f"folder: '{folder / name}'" in result.output
    load_line = next(ln for ln in result.output.splitlines() if ln.startswith("load it:"))
    command = load_line.removeprefix("load it:").strip()
    # pasteable: a shell reads back the folder whole (the command itself needs minari)
    echoed = subprocess.run(
        ["sh", "-c", command.replace(" python -c ", " printenv MINARI_DATASETS_PATH #")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert echoed.stdout.strip() == str(folder)


def test_the_report_json_of_a_unicode_path_names_it(tmp_path):
    results = tmp_path / "données"
    assert invoke("sweep", *FAST, "--quiet", "--no-report", "--results", results).exit_code == 0
    assert invoke("report", "--results", results, "--no-charts").exit_code == 0
    assert json.loads((results / "benchmark_report.json").read_text())
