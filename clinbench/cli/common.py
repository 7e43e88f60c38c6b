"""Helpers shared by the CLI commands: consoles, input checks, JSON output.

Bad input exits with code 2 (click's usage-error code) and a one-line message on
stderr naming the valid choices, never a traceback; stdout stays clean so that
``--json`` output can always be piped.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import traceback
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # the command line's help must not wait for the agents and environments
    from clinbench.agents.registry import AgentEntry

#: Exit code of bad command-line input.
USAGE_ERROR = 2

#: The results folder of every command: ``results`` of conf/config.yaml (a test checks
#: they agree), so that ``sweep``, ``report``, ``charts`` and ``export`` meet by default.
DEFAULT_RESULTS = Path("data/sweep_results")

#: Tables and summaries (stdout).
console = Console(highlight=False)
#: Error messages (stderr).
err_console = Console(stderr=True, highlight=False)


#: ``clinbench --debug``: errors also print the traceback of the exception behind them.
DEBUG = {"on": False}


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit with the usage-error code."""
    if DEBUG["on"] and sys.exc_info()[0] is not None:
        err_console.print(traceback.format_exc(), markup=False, highlight=False)
        exc = sys.exc_info()[1]
        while exc is not None:  # e.g. the plugin's own import error behind an AgentLoadError
            if getattr(exc, "details", None):
                err_console.print(exc.details, markup=False, highlight=False)
            exc = exc.__cause__
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(USAGE_ERROR)


def writable_folder(path: Path, what: str, create: bool = True) -> Path:
    """``path`` as a folder this process can write in (made if ``create``), else exit 2
    naming it: a file where the folder should be, or no permission, would otherwise
    surface as a traceback half-way through the work."""
    if path.exists() and not path.is_dir():
        fail(f"{what} {quote(path)} is a file, not a folder")
    if not create and not path.exists():
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".clinbench-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        fail(f"cannot write in {what} {quote(path)}: {exc.strerror or exc}")
    return path


def quote(path: Path | str) -> str:
    """A path as a shell would take it back (pasteable with spaces or quotes in it)."""
    return shlex.quote(str(path))


def fail_choice(kind: str, value: str, valid: Iterable[str]) -> NoReturn:
    """Exit 2 with ``unknown <kind> 'value'; valid: a, b, c``."""
    fail(f"unknown {kind} {value!r}; valid: {', '.join(valid)}")


def resolve_agent(ref: str) -> AgentEntry:
    """The agent named ``ref`` (a name or a ``module:Class`` spec) that can run here,
    else exit 2 listing the agents or saying why it cannot load."""
    from clinbench.agents.registry import AgentLoadError, agent_entry

    try:
        entry = agent_entry(ref)
        entry.require()
    except AgentLoadError as exc:
        fail(str(exc))
    return entry


def env_ids() -> list[str]:
    """The registered task ids (the environments load on first use, not with the CLI)."""
    from clinbench.env import env_ids as registered

    return registered()


def resolve_task(task: str) -> str:
    """The registered id of ``task``, given as ``easy_bench`` or ``recruitment/easy_bench``.

    A bare task name is accepted when exactly one environment has a task of that name.
    """
    ids = env_ids()
    if task in ids:
        return task
    matches = [i for i in ids if i.split("/", 1)[1] == task]
    if len(matches) == 1:
        return matches[0]
    if matches:
        fail(f"task {task!r} exists in several environments; use one of: {', '.join(matches)}")
    fail_choice("task", task, ids)


def examples(*command_lines: str) -> str:
    """A ``--help`` epilog listing example command lines, one per line."""
    # Typer joins single newlines of an epilog; paragraphs (blank lines) stay lines.
    return "\n\n".join(["[bold]Examples[/]", *(f"$ {escape(c)}" for c in command_lines)])


def print_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout, with nothing else (safe to pipe to ``jq``)."""
    typer.echo(json.dumps(data, indent=2, default=_json_default))


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")
