"""``clinbench charts``: render every chart of a results folder; ``--check`` for staleness.

Charts go to ``<results>/charts/`` as SVG and PNG. For the canonical results
(``data/sweep_results``) they are mirrored into ``docs/images/``; ``--docs DIR``
mirrors any results folder into DIR. ``--check`` renders into a temporary folder and
exits 1 naming every file that differs or is missing (CI runs it).
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
    writable_folder,
)


def register(app: typer.Typer) -> None:
    app.command(
        "charts",
        epilog=examples(
            "clinbench charts",
            "clinbench charts --check",
            "clinbench charts --results /tmp/smoke --docs /tmp/smoke_images",
        ),
    )(charts_command)


def run_charts(results: Path, docs: Path | None, check_only: bool) -> None:
    """Render (or check) the charts; shared with ``clinbench report``."""
    from clinbench.charts import ChartDataError, check, default_docs, render_all

    docs = default_docs(results) if docs is None else docs
    if not check_only:
        writable_folder(results, "results folder", create=False)
        if docs is not None:
            writable_folder(docs, "--docs folder")
    try:
        if check_only:
            problems = check(results, docs)
        else:
            paths = render_all(results, docs)
    except ChartDataError as exc:
        fail(str(exc))
    if check_only:
        if problems:
            for p in problems:
                err_console.print(f"[red]stale[/] {p}")
            err_console.print(
                "regenerate with: clinbench charts"
                + (f" --results {results}" if results != DEFAULT_RESULTS else "")
            )
            raise typer.Exit(1)
        console.print(
            f"charts are up to date ({results / 'charts'}{', ' + str(docs) if docs else ''})"
        )
        return
    where = f"{results / 'charts'}" + (f" and {docs}" if docs else "")
    console.print(f"{len(paths)} chart files written to {where}")


def charts_command(
    results: Annotated[
        Path, typer.Option("--results", help="Results folder of a sweep (with its report).")
    ] = DEFAULT_RESULTS,
    docs: Annotated[
        Path | None,
        typer.Option(
            "--docs",
            help="Mirror into this folder (default: docs/images for the canonical results only).",
        ),
    ] = None,
    check_only: Annotated[
        bool,
        typer.Option("--check", help="Render to a temporary folder; exit 1 if any file is stale."),
    ] = False,
) -> None:
    """Render every chart as SVG and PNG (byte-identical from the same results)."""
    run_charts(results, docs, check_only)
