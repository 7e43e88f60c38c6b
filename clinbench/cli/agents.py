"""``clinbench agents``: the registered agents with one-line descriptions."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from clinbench.agents.base import AgentEntry, agent_entries
from clinbench.cli.common import console, examples, print_json


def register(app: typer.Typer) -> None:
    app.command(
        "agents",
        epilog=examples("clinbench agents", "clinbench agents --json | jq -r '.[].name'"),
    )(agents_command)


def agents_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the registered agents: name, whether it learns, what it does."""
    rows = [agent_record(e) for e in agent_entries()]
    if as_json:
        print_json(rows)
        return
    table = Table(title="clinbench agents")
    for column in ("name", "learning", "environments", "description"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["name"], "yes" if r["learning"] else "no", ", ".join(r["envs"]), r["description"]
        )
    console.print(table)


def agent_record(entry: AgentEntry) -> dict[str, Any]:
    """Plain data describing one registry entry (``envs`` is ``["any"]`` for any environment)."""
    envs = getattr(entry.factory, "envs", ("*",))
    return {
        "name": entry.name,
        "learning": entry.learning,
        "envs": ["any"] if "*" in envs else list(envs),
        "description": entry.description,
    }
