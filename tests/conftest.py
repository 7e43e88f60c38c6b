"""Fixtures shared by several test files."""

from __future__ import annotations

from pathlib import Path

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
