"""``clinbench export``: paper figures (single and double column) and LaTeX tables."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from clinbench.cli.common import DEFAULT_RESULTS, console, examples, fail, writable_folder


class Format(str, Enum):
    pdf = "pdf"
    svg = "svg"
    png = "png"


def register(app: typer.Typer) -> None:
    app.command(
        "export",
        epilog=examples(
            "clinbench export",
            "clinbench export --format pdf --out reports/",
            "clinbench export --results /tmp/smoke --out /tmp/smoke_paper --format png",
        ),
    )(export_command)


def export_command(
    results: Annotated[
        Path, typer.Option("--results", help="Results folder (with its report).")
    ] = DEFAULT_RESULTS,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("reports"),
    fmt: Annotated[Format, typer.Option("--format", help="Figure format.")] = Format.pdf,
) -> None:
    """Write every chart at 3.5 in and 7.16 in widths, booktabs tables and a README."""
    from clinbench.charts import ChartDataError
    from clinbench.charts.export import export

    writable_folder(out, "--out folder", create=False)  # made by export, once results load
    try:
        paths = export(results, out, fmt.value)
    except ChartDataError as exc:
        fail(str(exc))
    console.print(f"{len(paths)} files written to {out}/ (see {out / 'README.md'})")
