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
