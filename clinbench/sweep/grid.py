"""Grids of sweeps, the way Hydra users write them: ``clinbench sweep -m
protocol.eval_episodes=3,5 agent.hcapo.omega=0,0.5``.

Hydra's own override parser reads the overrides and its basic sweeper's rule makes the
grid (the product of every comma list, ``choice(...)`` and ``range(...)``); clinbench's
Compose API then builds and checks each point's config, so a bad point fails before any
work. Every point runs into ONE results folder: the cell files are shared (a cell that
two points have in common, e.g. a heuristic cell under a sweep of hcapo's parameters,
is computed once), and the tidy tables hold every point's rows with a column per swept
key. An ordinary sweep never comes here: its files are what they always were.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clinbench.config import ConfigError, SweepConfig

#: Keys whose value is a list: a swept value ``agents=heuristic,random`` is one agent per
#: point, i.e. ``agents=[heuristic]`` then ``agents=[random]``.
LIST_KEYS = frozenset({"agents", "tasks", "protocol.seeds"})
#: Keys a grid cannot sweep: the grid has one results folder.
FIXED_KEYS = frozenset({"results"})
#: What the grid writes beside the tables: its keys and points.
GRID_FILE = "grid.json"


@dataclass(frozen=True)
class Point:
    """One point of the grid: its overrides and the value of each swept key."""

    overrides: tuple[str, ...]
    values: dict[str, str] = field(hash=False)


def points(overrides: list[str]) -> tuple[list[str], list[Point]]:
    """(swept keys, the grid's points) of ``overrides``; one point when none is swept.
    A problem (unparsable, a continuous sweep, a key swept twice) is a ConfigError."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        raise ConfigError(f"bad override: {' '.join(str(exc).split())}") from None
    keys: list[str] = []
    choices: list[list[tuple[str, str | None]]] = []
    for override in parsed:
        text = override.input_line or ""
        if not override.is_sweep_override():
            choices.append([(text, None)])
            continue
        key = override.key_or_group
        if not override.is_discrete_sweep():
            raise ConfigError(
                f"{text}: a grid takes comma lists, choice(...) and range(...), not intervals"
            )
        if key in FIXED_KEYS:
            raise ConfigError(f"{text}: a grid runs into one results folder; give one {key}")
        if key in keys:
            raise ConfigError(f"{key} is swept twice; give its values in one list")
        keys.append(key)
        element = override.get_key_element()
        values = list(override.sweep_string_iterator())
        wrap = "[{}]" if key in LIST_KEYS else "{}"
        choices.append([(f"{element}={wrap.format(v)}", v) for v in values])
    fixed = {o.key_or_group: o.input_line for o in parsed if not o.is_sweep_override()}
    for key in set(keys) & set(fixed):
        raise ConfigError(
            f"{key} is swept and also set ({fixed[key]}; a flag such as --agents, --seeds "
            "or --eval-episodes sets its key): give its values in the swept list only"
        )
    grid = []
    for combination in itertools.product(*choices):
        values = [v for _, v in combination if v is not None]
        grid.append(Point(tuple(o for o, _ in combination), dict(zip(keys, values, strict=True))))
    return keys, grid


@dataclass
class GridOutcome:
    """What a grid did: each point's sweep outcome, the cells computed, the files written."""

    keys: list[str]
    outcomes: list[Any]
    cells: int = 0
    ran: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    wall_seconds: float = 0.0
    outputs: dict[str, Path] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed and all(o.ok for o in self.outcomes)


def run_grid(
    keys: list[str],
    grid: list[tuple[Point, SweepConfig]],
    results: Path,
    *,
    resume: bool = True,
    loggers: tuple[str, ...] = (),
    announce: Any = None,
    **sweep: Any,
) -> GridOutcome:
    """Run every point (``run_sweep`` without its outputs) into ``results``, then write
    the grid's tables, ``grid.json`` and the logs. ``announce(i, point, cfg)`` is called
    before each point; ``sweep`` goes to ``run_sweep`` (key, isolate, console, ...)."""
    from clinbench.sweep.execute import run_sweep

    t0 = time.perf_counter()
    outcome = GridOutcome(keys=keys, outcomes=[])
    done: dict[str, dict[str, Any]] = {}  # hash -> record, over the points so far
    for i, (point, cfg) in enumerate(grid):
        if announce is not None:
            announce(i, point, cfg)
        result = run_sweep(
            cfg, resume=resume, outputs=False, keep=frozenset(done), loggers=(), **sweep
        )
        outcome.outcomes.append(result)
        outcome.ran += result.ran
        for r in result.records:
            done.setdefault(r["hash"], r)
        if result.stopped_early:
            break
    outcome.cells = len(done)
    outcome.failed = [r for r in done.values() if r["status"] == "failed"]
    outcome.outputs = write_grid(keys, grid[: len(outcome.outcomes)], outcome.outcomes, results)
    if loggers:
        from clinbench.sweep.logs import write_logs

        outcome.outputs.update(write_logs(list(done.values()), results, loggers, by_hash=True))
    outcome.wall_seconds = time.perf_counter() - t0
    return outcome


def write_grid(
    keys: list[str], grid: list[tuple[Point, SweepConfig]], outcomes: list[Any], results: Path
) -> dict[str, Path]:
    """The three tidy tables with every point's rows (the swept keys first, as columns)
    and ``grid.json`` (the keys, each point's overrides, values, cells and config)."""
    from clinbench.sweep.store import write_json_atomic
    from clinbench.sweep.tidy import curves_frame, results_frame, trajectories_frame

    out = {
        "sweep_results": results / "sweep_results.csv",
        "training_curves": results / "training_curves.csv",
        "progress_by_time": results / "progress_by_time.csv",
    }
    makers = {
        "sweep_results": results_frame,
        "training_curves": curves_frame,
        "progress_by_time": trajectories_frame,
    }
    for name, make in makers.items():
        frames = []
        for (point, _), result in zip(grid, outcomes, strict=True):
            frame = make(result.records)
            for j, key in enumerate(keys):
                frame.insert(j, key, point.values[key])
            frames.append(frame)
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=keys)
        table.to_csv(out[name], index=False, lineterminator="\n")
    write_json_atomic(
        results / GRID_FILE,
        {
            "keys": keys,
            "points": [
                {
                    "overrides": list(point.overrides),
                    "values": point.values,
                    "cells": [r["hash"] for r in result.records],
                    "failed": sum(r["status"] == "failed" for r in result.records),
                    "config": json.loads(json.dumps(cfg.raw, default=str)),
                }
                for (point, cfg), result in zip(grid, outcomes, strict=True)
            ],
        },
    )
    out["grid"] = results / GRID_FILE
    return out
