"""The benchmark report: results -> statistics -> ``benchmark_report.{json,md}``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from clinbench.report.build import TESTS, build_report
from clinbench.report.declared import declaration
from clinbench.report.render import stale_report_files, write_report
from clinbench.report.results import Results, ResultsError, load_results

DEFAULTS = {"alpha": 0.05, "bootstrap_reps": 50_000, "bootstrap_seed": 20261129, "test": "paired"}


def compute_report(
    folder: Path,
    alpha: float | None = None,
    bootstrap_reps: int | None = None,
    bootstrap_seed: int | None = None,
    reproducible: bool = False,
    test: str | None = None,
    skip_bad: bool = False,
) -> dict[str, Any]:
    """Read ``folder`` and compute the report.

    Unset options come from the results' saved config (``report:``) or the defaults,
    and so do the declared families (``report/declared.py``): they were fixed before
    the data;
    ``reproducible`` leaves out the generation time so re-renders are byte-identical;
    ``skip_bad`` reports cells with non-finite scores as failed instead of refusing them.
    """
    res = load_results(folder, skip_bad=skip_bad)
    saved = {**DEFAULTS, **(res.config.get("report") or {})}
    chosen = {
        "alpha": alpha,
        "bootstrap_reps": bootstrap_reps,
        "bootstrap_seed": bootstrap_seed,
        "test": test,
    }
    settings = {k: saved[k] if v is None else v for k, v in chosen.items()}
    if settings["test"] not in TESTS:
        raise ResultsError(f"unknown report.test {settings['test']!r}; valid: {', '.join(TESTS)}")
    report = build_report(res, **settings, declaration=declaration(saved))
    report["generated"] = (
        None if reproducible else dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    )
    return report


def make_report(folder: Path, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Path]]:
    """Compute the report of ``folder`` and write both files into it."""
    report = compute_report(folder, *args, **kwargs)
    return report, write_report(report, Path(folder))


def check_report(folder: Path, **kwargs: Any) -> list[Path]:
    """Committed report files that a ``--reproducible`` re-render would change (the HTML
    page too, where one is committed: it is checked against the folder's chart files,
    which ``clinbench charts --check`` checks in turn)."""
    from clinbench.report.html import stale_html

    report = compute_report(folder, reproducible=True, **kwargs)
    return stale_report_files(report, Path(folder)) + stale_html(report, Path(folder))


__all__ = [
    "Results",
    "ResultsError",
    "build_report",
    "check_report",
    "compute_report",
    "load_results",
    "make_report",
]
