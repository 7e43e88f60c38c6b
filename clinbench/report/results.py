"""Reading a results folder back: the manifest, the cell files, and what is missing.

The report works on one number per (agent, task, seed): the mean score over that
cell's evaluation episodes. Every agent at seed s met the same evaluation worlds, so
comparisons are paired by seed.
"""

from __future__ import annotations

import functools
import json
import math
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

    def task_env(self, task: str) -> str:
        """The environment family of ``task`` (the manifest's grid says; a results folder
        from before several families names one for all its tasks)."""
        grid = self.manifest["grid"]
        return (grid.get("task_envs") or {}).get(task) or grid["env"]

    @property
    def envs(self) -> list[str]:
        """The families of the tasks, in task order."""
        return list(dict.fromkeys(self.task_env(t) for t in self.tasks))

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

    @functools.cached_property
    def planned(self) -> set[tuple[str, str]]:
        """The (task, agent) pairs the manifest declares cells for (run, missing or failed)."""
        return {(c["task"], c["agent"]) for c in self.manifest["cells"]}

    def plays(self, agent: str, task: str) -> bool:
        """Whether the grid declares cells of ``agent`` on ``task`` (an agent that plays
        one family only has none on the other's tasks: no comparison there is possible)."""
        return (task, agent) in self.planned

    def agents_on(self, tasks: list[str]) -> list[str]:
        """Agents with declared cells on every task of ``tasks``, in report order."""
        return [a for a in self.agents if all(self.plays(a, t) for t in tasks)]

    def tasks_of(self, env: str) -> list[str]:
        """The tasks of environment family ``env``, in report order."""
        return [t for t in self.tasks if self.task_env(t) == env]

    def complete_seeds(
        self, agents: list[str] | None = None, tasks: list[str] | None = None
    ) -> list[int]:
        """Seeds with a result for every agent (of ``agents``, default all) on every task
        (of ``tasks``, default all)."""
        agents = self.agents if agents is None else agents
        tasks = self.tasks if tasks is None else tasks
        return [
            s for s in self.seeds if all((t, a, s) in self.records for t in tasks for a in agents)
        ]

    def lacking(self, seed: int, agents: list[str], tasks: list[str]) -> list[dict[str, str]]:
        """The cells of ``agents`` on ``tasks`` at ``seed`` that have no result."""
        return [
            {"task": t, "agent": a}
            for t in tasks
            for a in agents
            if (t, a, seed) not in self.records
        ]

    def scope(
        self, min_seeds: int = 3, tasks: list[str] | None = None, agents: list[str] | None = None
    ) -> dict[str, Any]:
        """What an analysis that needs complete blocks (the ranking) uses, and what it drops.

        An agent with fewer than ``min_seeds`` seeds complete on every task would cut every
        other agent down to those seeds, so it is dropped (as long as two agents with
        enough seeds remain; otherwise only agents with no complete seed are dropped);
        then every seed that is not complete for the remaining agents is dropped, with
        the cells it lacks.
        """
        tasks = self.tasks if tasks is None else tasks
        agents = self.agents if agents is None else agents
        complete = {a: len(self.complete_seeds([a], tasks)) for a in agents}
        short = [a for a in agents if complete[a] < min_seeds]
        if len(agents) - len(short) < 2:
            short = [a for a in agents if complete[a] == 0]
        kept = [a for a in agents if a not in short]
        seeds = self.complete_seeds(kept, tasks) if kept else []
        return {
            "agents": kept,
            "seeds": seeds,
            "dropped_agents": [
                {
                    "agent": a,
                    "reason": f"{complete[a]} seed(s) with a result on every task (fewer than "
                    f"{min_seeds})",
                }
                for a in short
            ],
            "dropped_seeds": [
                {"seed": s, "missing": self.lacking(s, kept, tasks)}
                for s in self.seeds
                if s not in seeds
            ],
        }


def bad_value(record: dict[str, Any]) -> str | None:
    """The first field of a finished cell whose score is not a finite number, or None.

    Cell files are JSON written by the sweep; a hand-edited or foreign file can still
    hold ``NaN``, ``Infinity``, ``null`` or text where a score belongs.
    """
    for i, episode in enumerate(record["episodes"]):
        field_name = f"episodes[{i}].score"
        if not isinstance(episode, dict) or "score" not in episode:
            return f"{field_name} is missing"
        value = episode["score"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{field_name} is {json.dumps(value)}, not a number"
        if not math.isfinite(value):
            return f"{field_name} is {value}"
    with np.errstate(over="ignore"):
        mean = float(np.mean([e["score"] for e in record["episodes"]]))
    if not math.isfinite(mean):
        return "the mean of episodes[*].score overflows"
    return None


def task_versions(
    records: dict[tuple[str, str, int], dict[str, Any]],
) -> dict[str, dict[Any, list[str]]]:
    """Per family, its cells by the task version they ran (a cell file from before
    versions were recorded ran version 1, the only one then)."""
    out: dict[str, dict[Any, list[str]]] = {}
    for (task, agent, seed), record in records.items():
        version = record.get("config", {}).get("task_version", 1)
        env = record.get("key", {}).get("env", "")
        out.setdefault(env, {}).setdefault(version, []).append(f"{agent} on {task} seed {seed}")
    return out


def stray_cell_files(folder: Path, cells: list[dict[str, Any]]) -> list[str]:
    """Names of cell files in ``runs/`` the manifest does not list (never read)."""
    listed = {f"{c['hash']}.json" for c in cells}
    runs = folder / "runs"
    return (
        sorted(p.name for p in runs.glob("*.json") if p.name not in listed) if runs.is_dir() else []
    )


def load_results(folder: Path, skip_bad: bool = False) -> Results:
    """Read ``manifest.json`` and the cell files it lists; say what is missing or odd.

    A finished cell with a score that is not a finite number makes the folder bad input
    (``ResultsError`` naming the file and the field) unless ``skip_bad``, which reports
    such cells as failed and goes on.
    """
    folder = Path(folder)
    manifest_path = folder / "manifest.json"
    if not folder.is_dir():
        raise ResultsError(f"no results folder at {folder}")
    if not manifest_path.exists():
        raise ResultsError(
            f"{folder} has no manifest.json: run `clinbench sweep --results {folder}` first"
        )
    try:
        manifest = json.loads(manifest_path.read_text())
        grid, cells = manifest["grid"], manifest["cells"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ResultsError(f"{manifest_path} is unreadable: {exc}") from None
    seeds = [int(s) for s in grid["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ResultsError(f"{manifest_path} lists a seed more than once: {seeds}")
    keys = [(c["task"], c["agent"], int(c["seed"])) for c in cells]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise ResultsError(
            f"{manifest_path} lists a cell more than once: {', '.join(map(str, twice))}"
        )
    config_path = folder / "config.yaml"
    config = OmegaConf.to_container(OmegaConf.load(config_path)) if config_path.exists() else {}
    res = Results(
        folder,
        manifest,
        config,
        list(grid["tasks"]),
        list(grid["agents"]),
        [int(s) for s in grid["seeds"]],
        {},
    )
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
        problem = bad_value(record)
        if problem is not None:
            if not skip_bad:
                raise ResultsError(
                    f"{path}: {problem} ({key[1]} on {key[0]}, seed {key[2]}); "
                    "fix or delete the cell file, or pass --skip-bad to report such cells as failed"
                )
            res.failed.append({**where, "error": f"bad value: {problem}"})
            res.missing.append({**where, "reason": f"bad value: {problem}"})
            continue
        eval_episodes = record.get("config", {}).get("protocol", {}).get("eval_episodes")
        if eval_episodes is not None and len(record["episodes"]) != eval_episodes:
            res.warnings.append(
                f"{key[1]} on {key[0]} seed {key[2]} has {len(record['episodes'])} evaluation "
                f"episodes, the protocol says {eval_episodes}"
            )
        res.records[key] = record
    stray = stray_cell_files(folder, cells)
    if stray:
        res.warnings.append(
            f"{len(stray)} cell file(s) in {folder / 'runs'} are not in the manifest and were "
            f"ignored (left over from another grid or code): {', '.join(stray[:5])}"
            + (", ..." if len(stray) > 5 else "")
        )
    if not res.records:
        raise ResultsError(
            f"{folder} holds no finished cells ({len(res.missing)} missing or failed)"
        )
    for env, versions in task_versions(res.records).items():
        if len(versions) > 1:
            raise ResultsError(
                f"{folder} mixes task versions of {env} ("
                + "; ".join(
                    f"version {v}: {len(cells)} cells, e.g. {cells[0]}"
                    for v, cells in versions.items()
                )
                + "): scores of different task versions are not comparable; "
                "re-run the sweep with --no-resume"
            )
    if res.missing:
        res.warnings.append(
            f"{len(res.missing)} of {len(cells)} cells are missing or failed; each comparison "
            "uses the seeds its pair shares (on a family's aggregate: on every task of the "
            "family), the ranking the seeds complete for every agent it keeps (each says what "
            "it dropped)"
        )
    return res
