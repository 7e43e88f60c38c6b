"""``clinbench report``: statistics of a results folder as JSON and Markdown.

Reads the manifest and cell files, checks the grid (what is missing is reported and
the rest still analysed), and writes ``benchmark_report.json`` (the source of truth)
and ``benchmark_report.md`` (rendered from it) into the results folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clinbench.cli.common import (
    DEFAULT_RESULTS,
    console,
    err_console,
    examples,
    fail,
    fail_choice,
    writable_folder,
)


def register(app: typer.Typer) -> None:
    app.command(
        "report",
        epilog=examples(
            "clinbench report",
            "clinbench report --results /tmp/smoke --alpha 0.01",
            "clinbench report --reproducible   # no generation time: byte-identical re-renders",
            "clinbench report --test welch     # an unpaired protocol: Welch's t as the primary "
            "test",
            "clinbench report --skip-bad       # cells with NaN / inf / null scores reported as "
            "failed",
            "clinbench report --check          # exit 1 if the committed report is stale",
            "clinbench report --html           # also benchmark_report.html, one self-contained "
            "page",
        ),
    )(report_command)


def run_report(
    results: Path,
    alpha: float | None = None,
    reproducible: bool = False,
    bootstrap_reps: int | None = None,
    bootstrap_seed: int | None = None,
    charts: bool = True,
    test: str | None = None,
    skip_bad: bool = False,
    html: bool = False,
) -> None:
    """Write the report of ``results`` (and its charts, and with ``html`` the page that
    embeds them) and say where; shared with ``sweep``."""
    from clinbench.report import ResultsError, make_report

    writable_folder(results, "results folder", create=False)
    try:
        report, paths = make_report(
            results, alpha, bootstrap_reps, bootstrap_seed, reproducible, test, skip_bad
        )
    except ResultsError as exc:
        fail(str(exc))
    for w in report["warnings"]:
        err_console.print(f"[yellow]warning:[/] {w}")
    for sentence in report["verdict"]:
        console.print(sentence)
    console.print(f"report: {paths['md']} and {paths['json']}")
    if charts:
        from clinbench.cli.charts import run_charts

        run_charts(results, None, check_only=False)
    from clinbench.report.html import html_path, write_html

    if html or html_path(results).exists():  # a page already there is kept in step
        console.print(f"page: {write_html(report, results)}")


def report_command(
    results: Annotated[
        Path, typer.Option("--results", help="Results folder of a sweep.")
    ] = DEFAULT_RESULTS,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            min=0.0,
            max=1.0,
            help="Family-wise alpha (default: the sweep's config, 0.05).",
        ),
    ] = None,
    reproducible: Annotated[
        bool,
        typer.Option(
            "--reproducible", help="Leave out the generation time (byte-identical re-renders)."
        ),
    ] = False,
    bootstrap_reps: Annotated[
        int | None, typer.Option("--bootstrap-reps", min=1, help="Bootstrap replicates.")
    ] = None,
    bootstrap_seed: Annotated[
        int | None, typer.Option("--bootstrap-seed", min=0, help="Bootstrap seed.")
    ] = None,
    test: Annotated[
        str | None,
        typer.Option(
            "--test", help="Primary test: paired (default; agents share a seed's worlds) or welch."
        ),
    ] = None,
    skip_bad: Annotated[
        bool,
        typer.Option(
            "--skip-bad",
            help="Report cells with a NaN, infinite or missing score as failed and go on.",
        ),
    ] = False,
    html: Annotated[
        bool,
        typer.Option(
            "--html",
            help="Also write benchmark_report.html: one self-contained page (tables that "
            "sort, every chart, the verdict, provenance).",
        ),
    ] = False,
    no_charts: Annotated[
        bool, typer.Option("--no-charts", help="Do not render the charts.")
    ] = False,
    check_only: Annotated[
        bool,
        typer.Option(
            "--check", help="Exit 1 if the report files differ from a --reproducible re-render."
        ),
    ] = False,
) -> None:
    """Compute the statistics of a sweep and write benchmark_report.{json,md}."""
    if alpha is not None and not 0.0 < alpha < 1.0:
        fail(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    from clinbench.config import REPORT_TESTS

    if test is not None and test not in REPORT_TESTS:
        fail_choice("test", test, REPORT_TESTS)
    if check_only:
        from clinbench.report import ResultsError, check_report

        try:
            stale = check_report(
                results,
                alpha=alpha,
                bootstrap_reps=bootstrap_reps,
                bootstrap_seed=bootstrap_seed,
                test=test,
                skip_bad=skip_bad,
            )
        except ResultsError as exc:
            fail(str(exc))
        for path in stale:
            again = " --html" if path.suffix == ".html" else ""
            err_console.print(
                f"[red]stale[/] {path}: differs from `clinbench report --reproducible{again}`"
            )
        if stale:
            raise typer.Exit(1)
        console.print(f"report is up to date ({results})")
        return
    run_report(
        results,
        alpha,
        reproducible,
        bootstrap_reps,
        bootstrap_seed,
        not no_charts,
        test,
        skip_bad,
        html=html,
    )
