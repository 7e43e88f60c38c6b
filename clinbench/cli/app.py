"""The ``clinbench`` command line.

Each command lives in its own module under ``clinbench.cli`` and exposes
``register(app)``; adding a command means adding its module name to ``COMMANDS``.
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from clinbench import __version__
from clinbench.cli.argv import ClinbenchGroup
from clinbench.cli.common import DEBUG, examples

#: Command modules, in the order ``clinbench --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "sweep",
    "report",
    "charts",
    "export",
    "run",
    "tasks",
    "agents",
    "serve",
    "dataset",
)

app = typer.Typer(
    name="clinbench",
    cls=ClinbenchGroup,
    no_args_is_help=True,
    rich_markup_mode="rich",
    add_completion=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples(
        "clinbench sweep --seeds 1 7 21 42 123",
        "clinbench sweep preset=smoke --results /tmp/smoke",
        "clinbench report --results /tmp/smoke",
        "clinbench tasks",
        "clinbench agents",
        "clinbench run --agent heuristic --task easy_bench --seed 1",
        "clinbench serve --task recruitment/hard_bench",
        "clinbench dataset create --env trial_design --agents heuristic,random --episodes 200 "
        "--name trial-mixed-v0",
    ),
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"clinbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show the traceback behind an error (e.g. a plugin that fails to import).",
        ),
    ] = False,
) -> None:
    """Benchmark long-horizon decision agents on simulated clinical-trial problems."""
    DEBUG["on"] = debug


for _name in COMMANDS:
    importlib.import_module(f"clinbench.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point (``clinbench``)."""
    app(prog_name="clinbench")


if __name__ == "__main__":
    main()
