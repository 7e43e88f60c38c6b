"""Fixtures shared by several test files."""

from __future__ import annotations

import os
from pathlib import Path

# pytest-xdist's workers (addopts: -n 2) start with COLUMNS=80 and LINES=24 in their
# environment, which a plain `pytest` process does not have; rich would freeze the CLI's
# console at 80 columns on import and ignore the COLUMNS the tests' CliRunners set. The
# workers run in the environment a plain run has (before clinbench is imported below).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.config import load
from clinbench.sweep import run_sweep

# --------------------------------------------------------------------------- scheduling
# The suite runs on two xdist workers, a test file at a time (addopts: --dist loadfile).

#: The longest test files, longest first (``pytest --durations=0`` on 2 cores): they
#: start first, so that no worker is left running one of them alone at the end. A stale
#: list changes only the order the files run in.
LONGEST_FIRST = (
    "test_sweep.py",
    "test_learning_agents.py",
    "test_snippets.py",
    "test_plugins.py",
    "test_charts.py",  # with the other files of smoke_results (below)
    "test_serve.py",
    "test_offline.py",
    "test_recruitment_v2.py",
    "test_cli_paths.py",
    "test_type1_adversarial.py",
    "test_cell_code_identity.py",
    "test_config.py",
    "test_sb3_agents.py",
    "test_studies.py",
)


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # the order of the collection (below)


def pytest_collection_modifyitems(config, items):
    """Longest files first (:data:`LONGEST_FIRST`), then the others by their number of
    tests (xdist's own order), each file's tests in their order."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda i: (rank.get(i.path.name, len(rank)), -counts[i.path.name], str(i.path)))


def pytest_xdist_make_scheduler(config, log):
    """xdist's file-at-a-time scheduling, with every file that uses the session fixture
    ``smoke_results`` on one worker, so that its smoke sweep runs once, not once a worker."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    here = Path(__file__).parent
    shared = sorted(
        f.name for f in here.glob("test_*.py") if "smoke_results" in f.read_text(encoding="utf-8")
    )

    class SharingFixtures(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "smoke_results" if shared and Path(scope).name in shared else scope

    return SharingFixtures(config, log)


@pytest.fixture
def invoke():
    """Run the ``clinbench`` CLI in-process: ``invoke("run", "--agent", ...)``."""
    runner = CliRunner(env={"COLUMNS": "200"})
    return lambda *args: runner.invoke(app, list(args))


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory) -> Path:
    """One smoke sweep of the recruitment tasks with its reproducible report and its
    charts (the statistics tests recompute it; two families together are tested in
    test_two_families.py). Do not modify: tests that damage results work on a copy."""
    folder = tmp_path_factory.mktemp("smoke") / "results"
    outcome = run_sweep(
        load(["preset=smoke", "env=recruitment", f"results={folder}", "launcher=sequential"]),
        show_progress=False,
    )
    assert outcome.ok, outcome.failed
    result = CliRunner().invoke(app, ["report", "--results", str(folder), "--reproducible"])
    assert result.exit_code == 0, result.output
    return folder
