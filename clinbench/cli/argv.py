"""Space-separated list options: ``--seeds 1 7 21`` as well as ``--seeds 1,7,21``.

Click options take one value each; list options are normalised before parsing: the
tokens after ``--seeds`` / ``--agents`` / ``--tasks`` up to the next option or Hydra
override (a token with ``=``) are joined with commas.
"""

from __future__ import annotations

from typing import Any

import click
from typer.core import TyperGroup

LIST_OPTIONS = frozenset({"--seeds", "--agents", "--tasks"})


def normalise_list_options(args: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        out.append(token)
        i += 1
        if token in LIST_OPTIONS:
            values = []
            while i < len(args) and not args[i].startswith("-") and "=" not in args[i]:
                values.append(args[i])
                i += 1
            if values:
                out.append(",".join(values))
    return out


def split_list(value: str | None) -> list[str]:
    """``"1,7, 21"`` or one quoted ``"1 7 21"`` -> ``["1", "7", "21"]`` (empty items dropped)."""
    return (value or "").replace(",", " ").split()


class ClinbenchGroup(TyperGroup):
    """The root command group; normalises list options before click parses them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> Any:
        return super().parse_args(ctx, normalise_list_options(list(args)))
