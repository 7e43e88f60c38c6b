"""Space-separated list options: ``--seeds 1 7 21`` as well as ``--seeds 1,7,21``.

Click options take one value each; list options are normalised before parsing: the
tokens after ``--seeds`` / ``--agents`` / ``--tasks`` up to the next option or Hydra
override (a token with ``=``) are joined with commas.
"""

from __future__ import annotations

from typing import Any

import click
import typer
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
            # none: an empty value, so that ``--seeds --results X`` is an empty seed list
            # rather than a seed list "--results"
            out.append(",".join(values))
    return out


def split_list(value: str | None) -> list[str]:
    """``"1,7, 21"`` or one quoted ``"1 7 21"`` -> ``["1", "7", "21"]`` (empty items dropped)."""
    return (value or "").replace(",", " ").split()


class ClinbenchGroup(TyperGroup):
    """The root command group; normalises list options before click parses them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> Any:
        return super().parse_args(ctx, normalise_list_options(list(args)))

    def invoke(self, ctx: click.Context) -> Any:
        """A file-system error on a user's path (a file where a folder belongs, no
        permission, a full disk) exits 2 naming the path, not with a traceback; commands
        check their folders first, this catches what they could not foresee."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None:
                raise
            from clinbench.cli.common import fail, quote

            fail(f"{exc.strerror or type(exc).__name__}: {quote(exc.filename)}")
        except KeyboardInterrupt:  # outside a sweep's cells (which say what they kept)
            from clinbench.cli.common import err_console

            err_console.print("\ninterrupted", highlight=False)
            raise typer.Exit(130) from None
