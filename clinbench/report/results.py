"""Reading a results folder back: the manifest, the cell files, and what is missing.

The report works on one number per (agent, task, seed): the mean score over that
cell's evaluation episodes. Every agent at seed s met the same evaluation worlds, so
comparisons are paired by seed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from clinbench.sweep.store import CorruptCell, read_cell


class ResultsError(ValueError):
    """The results folder cannot be reported on at all (exit code 2)."""


@dataclass
class Results:
    """Cell records of one sweep, indexed by (task, agent, seed)."""

    folder: Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    tasks: list[str]
    agents: list[str]
    seeds: list[int]
    records: dict[tuple[str, str, int], dict[str, Any]]
    missing: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def score(self, task: str, agent: str, seed: int) -> float | None:
        r = self.records.get((task, agent, seed))
        return None if r is None else float(np.mean([e["score"] for e in r["episodes"]]))

    def scores(self, task: str, agent: str) -> dict[int, float]:
        """Per-seed cell means of one agent on one task (present cells only)."""
        out = {}
        for seed in self.seeds:
            value = self.score(task, agent, seed)
            if value is not None:
                out[seed] = value
        return out

    def complete_seeds(self) -> list[int]:
        """Seeds with a result for every agent on every task."""
        return [s for s in self.seeds if all((t, a, s) in self.records for t in self.tasks for a in self.agents)]


def load_results(folder: Path) -> Results:
    """Read ``manifest.json`` and the cell files it lists; say what is missing or odd."""
    folder = Path(folder)
    manifest_path = folder / "manifest.json"
    if not folder.is_dir():
        raise ResultsError(f"no results folder at {folder}")
    if not manifest_path.exists():
        raise ResultsError(f"{folder} has no manifest.json: run `clinbench sweep --results {folder}` first")
    try:
        manifest = json.loads(manifest_path.read_text())
        grid, cells = manifest["grid"], manifest["cells"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ResultsError(f"{manifest_path} is unreadable: {exc}") from None
    config_path = folder / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.load(config_path)) if config_path.exists() else {}
    res = Results(folder, manifest, config, list(grid["tasks"]), list(grid["agents"]), [int(s) for s in grid["seeds"]], {})
    eval_episodes = manifest.get("protocol", {}).get("eval_episodes")
    for cell in cells:
        key = (cell["task"], cell["agent"], int(cell["seed"]))
        path = folder / "runs" / f"{cell['hash']}.json"
        where = {"task": key[0], "agent": key[1], "seed": key[2]}
        if not path.exists():
            res.missing.append({**where, "reason": "no cell file"})
            continue
        try:
            record = read_cell(path, cell["hash"])
        except CorruptCell as exc:
            res.missing.append({**where, "reason": f"corrupt: {exc}"})
            continue
        if record["status"] != "ok":
            tb = record.get("traceback", "").strip().splitlines()
            res.failed.append({**where, "error": tb[-1] if tb else "failed"})
            res.missing.append({**where, "reason": "failed"})
            continue
        if eval_episodes is not None and len(record["episodes"]) != eval_episodes:
            res.warnings.append(
                f"{key[1]} on {key[0]} seed {key[2]} has {len(record['episodes'])} evaluation "
                f"episodes, the protocol says {eval_episodes}"
            )
        res.records[key] = record
    if not res.records:
        raise ResultsError(f"{folder} holds no finished cells ({len(res.missing)} missing or failed)")
    if res.missing:
        res.warnings.append(
            f"{len(res.missing)} of {len(cells)} cells are missing or failed; statistics use the cells "
            f"present, and paired tests and the aggregate use only seeds complete for every agent and task"
        )
    return res
