"""Helpers shared by the CLI commands: consoles, input checks, JSON output.

Bad input exits with code 2 (click's usage-error code) and a one-line message on
stderr naming the valid choices, never a traceback; stdout stays clean so that
``--json`` output can always be piped.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterable
from enum import Enum
from typing import Any, NoReturn

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from clinbench.agents.registry import AgentEntry, AgentLoadError, agent_entry
from clinbench.env import env_ids

#: Exit code of bad command-line input.
USAGE_ERROR = 2

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


def fail_choice(kind: str, value: str, valid: Iterable[str]) -> NoReturn:
    """Exit 2 with ``unknown <kind> 'value'; valid: a, b, c``."""
    fail(f"unknown {kind} {value!r}; valid: {', '.join(valid)}")


def resolve_agent(ref: str) -> AgentEntry:
    """The agent named ``ref`` (a name or a ``module:Class`` spec) that can run here,
    else exit 2 listing the agents or saying why it cannot load."""
    try:
        entry = agent_entry(ref)
        entry.require()
    except AgentLoadError as exc:
        fail(str(exc))
    return entry


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
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")
