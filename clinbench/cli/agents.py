"""``clinbench agents``: built-in and plugin agents, where each comes from, whether it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from clinbench.cli.common import console, examples, print_json

if TYPE_CHECKING:
    from clinbench.agents.registry import AgentEntry


def register(app: typer.Typer) -> None:
    app.command(
        "agents",
        epilog=examples(
            "clinbench agents",
            "clinbench agents --json | jq -r '.[] | select(.available) | .name'",
            "clinbench sweep --agents heuristic,mypkg.agents:MyMethod preset=smoke",
        ),
    )(agents_command)


def agents_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the agents: built-ins, then plugins (entry-point group ``clinbench.agents``).

    Unavailable agents (an optional extra not installed, a plugin that fails to import)
    are listed with the reason and the fix. Any class can also be swept without packaging
    by its spec string, ``module:Class`` or ``path/to/file.py:Class``."""
    from clinbench.agents.registry import ENTRY_POINT_GROUP, agent_entries

    rows = [agent_record(e) for e in agent_entries()]
    if as_json:
        print_json(rows)
        return
    table = Table(
        title="clinbench agents", caption=f"plugins: entry-point group {ENTRY_POINT_GROUP!r}"
    )
    for column in ("name", "learning", "environments", "source", "description"):
        table.add_column(column)
    for r in rows:
        what = (
            r["description"]
            if r["available"]
            else f"[yellow]unavailable:[/] {escape(r['unavailable'])}"
        )
        learning = "offline" if r["offline"] else ("yes" if r["learning"] else "no")
        table.add_row(r["name"], learning, ", ".join(r["envs"]), escape(r["source"]), what)
    console.print(table)


def agent_record(entry: AgentEntry) -> dict[str, Any]:
    """Plain data describing one agent (``envs`` is ``["any"]`` for any environment)."""
    return {
        "name": entry.name,
        "learning": entry.learning,
        #: learns from a dataset (``--dataset``), never from an environment
        "offline": bool(getattr(entry.factory, "offline", False)),
        "envs": ["any"] if "*" in entry.envs else list(entry.envs),
        "source": entry.source,
        "available": entry.unavailable is None,
        "unavailable": entry.unavailable,
        "description": entry.description,
    }
