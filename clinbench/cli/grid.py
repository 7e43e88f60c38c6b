"""``clinbench sweep -m``: a grid of sweeps into one results folder (``clinbench.sweep.grid``).

Every point's config is composed and checked before any cell runs (exit 2 naming the
point and the problem); then the points run one after another, each in parallel over its
cells, sharing the cell files. The report compares agents under one configuration, so a
grid writes tables (with a column per swept key) and no report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from clinbench import evaluation_key
from clinbench.cli.common import console, err_console, fail, writable_folder


def run_grid_command(
    overrides: list[str],
    flag_overrides: list[str],
    results: Path | None,
    *,
    loggers: tuple[str, ...],
    held_out: bool,
    key_file: Path | None,
    no_resume: bool,
    quiet: bool,
    sweep: dict[str, Any],
) -> bool:
    """Run the grid of ``overrides``; False when nothing is swept (an ordinary sweep,
    which the caller runs as it always does)."""
    from clinbench.cli.sweep import _announce, _interrupted, _literal
    from clinbench.config import ConfigError, compose, validate
    from clinbench.sweep.execute import SweepInterrupted
    from clinbench.sweep.grid import points, run_grid

    try:
        keys, grid = points([*overrides, *flag_overrides])
    except ConfigError as exc:
        fail(str(exc))
    if not keys:
        return False
    configs = []
    for point in grid:
        try:
            composed = compose(list(point.overrides))
            if results is not None:
                composed.results = _literal(results)
            configs.append((point, validate(composed)))
        except ConfigError as exc:
            fail(f"grid point {_values(point.values)}: {exc}")
    folder = configs[0][1].results
    writable_folder(folder, "results folder")
    try:
        key = evaluation_key.for_sweep(
            folder, held_out=held_out, key_file=key_file, resume=not no_resume
        )
    except evaluation_key.EvaluationKeyError as exc:
        fail(str(exc))
    if not quiet:
        err_console.print(
            f"grid of {len(grid)} points over {', '.join(keys)}, into {folder}/",
            markup=False,
            highlight=False,
        )

    def announce(i: int, point: Any, cfg: Any) -> None:
        if not quiet:
            err_console.print(f"point {i + 1}/{len(grid)}: {_values(point.values)}", markup=False)
            _announce(cfg, key)

    try:
        outcome = run_grid(
            keys,
            configs,
            folder,
            resume=not no_resume,
            loggers=loggers,
            announce=announce,
            key=key,
            console=err_console,
            show_progress=not quiet,
            **sweep,
        )
    except ConfigError as exc:
        fail(str(exc))
    except SweepInterrupted as stop:
        _interrupted(stop)
    console.print(
        f"grid of {len(grid)} points ({', '.join(keys)}): {outcome.cells} distinct cells, "
        f"{outcome.ran} run, {len(outcome.failed)} failed; {outcome.wall_seconds:.1f} s. "
        f"Results in {folder}/ (sweep_results.csv has a column per swept key; grid.json "
        "lists the points; no report: it compares agents under one configuration)"
    )
    for record in outcome.failed:
        k = record["key"]
        last = record.get("traceback", "").strip().splitlines()[-1:] or ["?"]
        err_console.print(
            f"[red]failed[/] {k['agent']} / {k['task']} / seed {k['seed']}: {last[0]}"
        )
    if not outcome.ok:
        raise typer.Exit(1)
    return True


def _values(values: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())
