"""``clinbench tasks``: the registered environments and tasks with their main parameters.

Each environment family declares the parameters worth a glance and their labels
(``Family.main_params``); a family that declares none shows every plain (scalar or list)
field of its task parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from itertools import groupby
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from clinbench.cli.common import console, examples, print_json

if TYPE_CHECKING:
    from clinbench.env import EnvSpec

#: Shown elsewhere (title, header, description row).
_IDENTITY = frozenset({"name", "description"})


def register(app: typer.Typer) -> None:
    app.command(
        "tasks",
        epilog=examples("clinbench tasks", "clinbench tasks --json | jq '.[].params.budget'"),
    )(tasks_command)


def tasks_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the environments and their tasks with the main parameters."""
    from clinbench.env import env_ids, spec

    records = [task_record(spec(i)) for i in env_ids()]
    if as_json:
        print_json(records)
        return
    for env, group in groupby(records, key=lambda r: r["env"]):
        console.print(_family_table(env, list(group)))


def task_record(s: EnvSpec) -> dict[str, Any]:
    """Plain data describing one task: identity, version, description, main parameters."""
    return {
        "id": s.id,
        "env": s.env,
        "task": s.task,
        "version": s.version,
        "description": s.description,
        "params": main_params(s),
    }


def main_params(s: EnvSpec) -> dict[str, Any]:
    """The main parameters of a task (every plain field for an unknown family)."""
    from clinbench.env.registry import family

    fields = _fields(s.params)
    fam = family(s.env)
    names = fam.main_params or tuple(
        k for k, v in fields.items() if k not in _IDENTITY and _is_plain(v)
    )
    derived = fam.derived_params
    return {n: _plain(derived[n](fields) if n in derived else fields[n]) for n in names}


def _family_table(env: str, records: list[dict[str, Any]]) -> Table:
    """One table per environment family: a row per parameter, a column per task."""
    from clinbench.env.registry import family

    table = Table(title=f"environment [bold]{env}[/]  (task id: {env}/<task>)", show_lines=False)
    table.add_column("parameter", style="dim")
    for r in records:
        table.add_column(r["task"], justify="right")
    descriptions = (Text(r["description"], justify="left") for r in records)
    table.add_row("description", *descriptions, end_section=True)
    table.add_row("task version", *(str(r["version"]) for r in records), end_section=True)
    labels = family(env).param_labels
    for name in records[0]["params"]:
        values = (_format(r["params"].get(name)) for r in records)
        table.add_row(labels.get(name, name.replace("_", " ")), *values)
    return table


def _fields(params: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(params):
        return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    if isinstance(params, Mapping):
        return dict(params)
    return dict(vars(params))


def _is_plain(value: Any) -> bool:
    scalar = (bool, int, float, str)
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, scalar) for v in value)
    return isinstance(value, scalar)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _format(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 and value.is_integer() else f"{value:g}"
    return str(value)
