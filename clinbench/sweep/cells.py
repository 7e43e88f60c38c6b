"""Cells: the unit of work of a sweep, as plain data, and the function that runs one.

The cell hash covers the cell key, the agent and environment parameters, the protocol
and the code that runs a cell (version plus a hash of the environment, agent and
protocol sources, and for a plugin agent its distribution, version and sources, for an
agent built on an outside library that library's version), so a cell file is reused
only for exactly the same computation, and editing a plugin re-runs only its cells.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import clinbench
from clinbench.config import SweepConfig
from clinbench.evaluation_key import PUBLIC, PUBLIC_KEY, EvaluationKey
from clinbench.numerics import blas_kernel, numpy_simd, torch_capability
from clinbench.sweep.store import FORMAT

#: The agent API every cell runs whatever its agent (no agent's own identity): the
#: base class, the context, the learners' shared loop and a shared name's family dispatch.
SHARED_AGENT_MODULES = ("base", "context", "learner", "variants")
#: Sources whose change changes what a cell of any family computes: the shared
#: environment modules (``env/*.py``), the agent API (``SHARED_AGENT_MODULES``) and the
#: learners' shared code (``agents/core/``), the protocol, the episode loop and the
#: isolated player. Each agent's own modules are in its identity instead
#: (``AgentEntry.code``; ``agents.registry.agent_source_files``): editing one agent
#: re-runs its cells only.
_CELL_CODE = (
    "env/*.py",
    *(f"agents/{m}.py" for m in SHARED_AGENT_MODULES),
    "agents/core/**/*.py",
    "protocol.py",
    "episode.py",
    "evaluation_key.py",
    "isolation.py",
)
#: A family's own sources count for its cells only: its environment package
#: ``env/<family>/`` (except the module that draws its charts, which no cell runs), its
#: own agents, ``agents/<family>/``, and the agent modules those import. Its study
#: (``clinbench.studies``) is not a cell's code either: it has a code identity of its own.
_FAMILY_CODE = ("env/{family}/**/*.py", "agents/{family}/**/*.py")
_NOT_FAMILY_CODE = ("env/{family}/charts.py", "agents/{family}/study.py")


def cell_code_files(env: str) -> list[str]:
    """The sources, relative to the package, whose code a cell of family ``env`` runs
    (its agent's own modules aside)."""
    from clinbench.agents.registry import agent_source_files

    root = Path(clinbench.__file__).parent
    files = [f for part in _CELL_CODE for f in sorted(root.glob(part))]
    for part in _FAMILY_CODE:
        files += sorted(root.glob(part.format(family=env)))
    skip = {part.format(family=env) for part in _NOT_FAMILY_CODE}
    files = [f for f in files if f.relative_to(root).as_posix() not in skip]
    files += agent_source_files(
        files=[f.resolve() for f in files if f.relative_to(root).parts[0] == "agents"]
    )
    return list(dict.fromkeys(f.resolve().relative_to(root.resolve()).as_posix() for f in files))


@cache
def code_id(env: str) -> str:
    """clinbench version plus a hash of the code a cell of family ``env`` runs.

    Editing one family's simulator or its own agents re-runs that family's cells, not
    the others'.
    """
    return f"{clinbench.__version__}+{sources_digest(cell_code_files(env))}"


def sources_digest(rels: Iterable[str]) -> str:
    """12 hex digits of SHA-256 over each source's path (relative to the package) and
    bytes, in the given order."""
    root = Path(clinbench.__file__).parent
    digest = hashlib.sha256()
    for rel in rels:
        digest.update(rel.encode())
        digest.update((root / rel).read_bytes())
    return digest.hexdigest()[:12]


#: Code only some cells run, in their identity only: an offline cell's harness (it fits
#: the agent on a dataset split, whatever the agent's own package) and a remote cell's
#: client (the server's code is the server's).
_OFFLINE_CODE = ("offline/*.py",)
_REMOTE_CODE = ("serve/remote.py", "serve/wire.py")


@cache
def _files_digest(parts: tuple[str, ...]) -> str:
    root = Path(clinbench.__file__).parent
    return sources_digest(
        f.relative_to(root).as_posix() for part in parts for f in sorted(root.glob(part))
    )


def cell_code(env: str, offline: bool = False, remote: bool = False) -> str:
    """The code identity a cell's hash covers: its family's (:func:`code_id`), plus the
    offline harness for a dataset cell and the client for a remote one."""
    parts = [code_id(env)]
    if offline:
        parts.append(f"offline {_files_digest(_OFFLINE_CODE)}")
    if remote:
        parts.append(f"remote {_files_digest(_REMOTE_CODE)}")
    return " ".join(parts)


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Cell:
    """(environment, task, agent, seed) with everything needed to run it."""

    env: str
    task: str
    agent: str
    seed: int
    agent_params: dict[str, Any] = field(hash=False)
    env_overrides: dict[str, Any] = field(hash=False)
    protocol: dict[str, int] = field(hash=False)
    code: str = ""
    #: what the worker loads the agent by (its name, or a plugin's spec string)
    agent_ref: str = ""
    #: a plugin's code identity (``clinbench.agents.registry.plugin_code``)
    agent_code: str = ""
    #: ``ws://host:port`` of the server the cell's environments are played on ("": here)
    remote: str = ""
    #: an offline cell's dataset, its digest, its split and the datasets' folder
    #: (the folder is where to read it, not part of the computation)
    dataset: str = ""
    dataset_digest: str = ""
    split: str = ""
    data_dir: str = field(default="", compare=False)
    #: the evaluation key (hex) and its mode: handed to the worker, never written to a
    #: file by the sweep; the hash and the cell file hold its commitment only
    evaluation_key: str = field(default=PUBLIC_KEY.hex(), compare=False, repr=False)
    key_mode: str = "public"
    #: evaluate the trained agent in a process of its own (``clinbench.isolation``)
    isolate: bool = False

    @property
    def key_of_evaluation(self) -> EvaluationKey:
        return EvaluationKey(bytes.fromhex(self.evaluation_key), self.key_mode)

    @property
    def env_id(self) -> str:
        return f"{self.env}/{self.task}"

    @property
    def key(self) -> dict[str, Any]:
        return {"env": self.env, "task": self.task, "agent": self.agent, "seed": self.seed}

    @property
    def hash(self) -> str:
        from clinbench.env.registry import make

        params = make(self.env_id, **self.env_overrides).spec.params
        payload = {
            "key": self.key,
            "agent_params": self.agent_params,
            "env_params": asdict(params),
            "protocol": self.protocol,
            "code": self.code,
            "evaluation": self.key_of_evaluation.about(),
        }
        if self.isolate:
            payload["isolate"] = True
        if self.agent_code:
            payload["agent_code"] = self.agent_code
        if self.remote:
            payload["remote"] = self.remote
        if self.dataset:
            payload["dataset"] = {"digest": self.dataset_digest, "split": self.split}
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def expected_cost(cell: Cell) -> float:
    """Rough relative cost of a cell, to start the longest first (balances the workers)."""
    from clinbench.agents.registry import agent_entry

    p = cell.protocol
    if cell.dataset:  # fitting on a dataset: seconds, like a short training
        return 100.0 + 0.1 * p["eval_episodes"]
    learning = agent_entry(cell.agent_ref or cell.agent).learning
    # relative costs: a recruitment step ~ a trial_design episode's step; a learner's
    # evaluation episode ~ 20 of its training steps' worth of overhead
    cost = 0.01 * p["null_episodes"] + 0.1 * p["eval_episodes"]
    return p["train_steps"] / 180 + 2 * p["eval_episodes"] + cost if learning else cost


def expand(cfg: SweepConfig, key: EvaluationKey = PUBLIC, isolate: bool = False) -> list[Cell]:
    """The seed x agent x task grid, in report order (task, agent, seed); an agent has
    cells only on the tasks of the families it plays; ``key`` derives their worlds."""
    def protocol(env: str) -> dict[str, int | bool]:
        from clinbench.env.registry import family

        return {
            "train_steps": cfg.protocol.training_steps(env),
            "eval_episodes": cfg.protocol.evaluation_episodes(env),
            "curve_points": cfg.protocol.curve_points,
            "curve_episodes": cfg.protocol.validation_episodes(env),
            "select_checkpoint": cfg.protocol.select_checkpoint,
            "oc_episodes": cfg.protocol.oc_episodes,
            # only where the family has null worlds (other cells' hashes stay put)
            "null_episodes": cfg.protocol.null_episodes
            if family(env).null_world_overrides
            else 0,
        }

    from clinbench.agents.registry import agent_entry, family_parameters

    refs = {a: cfg.agent_refs.get(a, a) for a in cfg.agents}
    entries = {a: agent_entry(refs[a]) for a in cfg.agents}
    offline = cfg.offline.agents if cfg.offline is not None else {}

    def data(agent: str) -> tuple[str, str, str, str]:
        if agent not in offline:
            return "", "", "", ""
        p = cfg.offline
        return p.dataset, p.digest, offline[agent][1], p.data_dir

    return [
        Cell(
            cfg.task_envs[task],
            task,
            agent,
            seed,
            family_parameters(entries[agent], cfg.task_envs[task], cfg.agent_params[agent]),
            cfg.env_overrides[task],
            protocol(cfg.task_envs[task]),
            cell_code(cfg.task_envs[task], agent in offline, bool(cfg.remote)),
            refs[agent],
            entries[agent].code,
            cfg.remote,
            *data(agent),
            evaluation_key=key.key.hex(),
            key_mode=key.mode,
            isolate=isolate,
        )
        for task in cfg.tasks
        for agent in cfg.agents
        if cfg.plays(agent, task)
        for seed in cfg.protocol.seeds
    ]


def run_cell_record(cell: dict[str, Any], cell_hash: str) -> dict[str, Any]:
    """Run one cell (a plain dict) and return its record; never raises.

    Module-level and plain data in and out, so any joblib backend can ship it.
    """
    from clinbench.protocol import Protocol, run_cell

    key = (
        EvaluationKey(bytes.fromhex(cell["evaluation_key"]), cell["key_mode"])
        if cell.get("evaluation_key")
        else PUBLIC
    )
    start = time.perf_counter()
    record: dict[str, Any] = {
        "format": FORMAT,
        "hash": cell_hash,
        "key": {k: cell[k] for k in ("env", "task", "agent", "seed")},
        "config": {
            "agent_params": cell["agent_params"],
            "env_overrides": cell["env_overrides"],
            "protocol": cell["protocol"],
            "code": cell["code"],
            "agent_ref": cell.get("agent_ref") or cell["agent"],
            "agent_code": cell.get("agent_code", ""),
        },
    }
    record["evaluation"] = key.about()
    if cell.get("isolate"):
        record["config"]["isolated"] = True
    if cell.get("remote"):
        record["config"]["remote"] = cell["remote"]
    if cell.get("dataset"):
        for k in ("dataset", "dataset_digest", "split"):
            record["config"][k] = cell[k]
    if not _deterministic(cell):
        record["config"]["deterministic"] = False  # replies of an outside endpoint
    try:
        from clinbench.env.registry import spec

        record["config"]["task_version"] = spec(f"{cell['env']}/{cell['task']}").version
    except KeyError:
        pass  # an unknown task fails below, in run_cell
    try:
        _check_agent_code(cell)
        offline = None
        if cell.get("dataset"):
            result, offline = _run_offline(cell, key)
        else:
            result = run_cell(
                f"{cell['env']}/{cell['task']}",
                cell.get("agent_ref") or cell["agent"],
                cell["seed"],
                Protocol(**cell["protocol"]),
                cell["agent_params"],
                env_overrides=cell["env_overrides"],
                agent_name=cell["agent"],
                remote=cell.get("remote") or None,
                key=key,
                isolate=bool(cell.get("isolate")),
            )
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a failing cell (even sys.exit) is recorded, the sweep goes on
        record.update(status="failed", traceback=traceback.format_exc())
    else:
        record.update(
            status="ok",
            eval_seeds=result.eval_seeds,
            episodes=[
                {
                    "eval_seed": seed,
                    "score": e.score,
                    "return": e.ret,
                    "steps": e.steps,
                    "terminated_by": e.terminated_by,
                    "score_parts": e.score_parts,
                    "metrics": e.metrics,
                    "progress_by_time": e.progress_by_time,
                    **({"agent_stats": e.agent_stats} if e.agent_stats else {}),
                }
                for seed, e in zip(result.eval_seeds, result.episodes, strict=True)
            ],
            # the points' wall-clock lives under timing: the record's numbers repeat
            curve=[{k: v for k, v in asdict(p).items() if k != "seconds"} for p in result.curve],
        )
        if result.oc_metrics:
            record["oc_metrics"] = result.oc_metrics
        if result.null_counts:
            record["null_counts"] = result.null_counts
        if result.training:
            record["training"] = {
                "env_steps": result.training["env_steps"],
                "episodes": result.training["episodes"],
            }
            if "kept" in result.training:  # the checkpoint evaluated (select_checkpoint)
                record["training"]["kept"] = result.training["kept"]
        if offline:
            record["offline"] = offline
        record["timing"] = {
            "train_seconds": result.train_seconds,
            "eval_seconds": result.eval_seconds,
        }
        if result.training:  # wall-clock of each curve point (a second axis for curves)
            record["timing"]["curve_seconds"] = result.training["curve_seconds"]
    record.setdefault("timing", {})["total_seconds"] = time.perf_counter() - start
    record["blas_kernel"] = blas_kernel()  # the worker's (clinbench/numerics.py)
    record["numpy_simd"] = numpy_simd()
    if (capability := torch_capability()) is not None:
        record["torch_capability"] = capability
    return record


def _run_offline(cell: dict[str, Any], key: EvaluationKey):
    """An offline cell (``clinbench.offline.protocol``): fit on the dataset's split."""
    from clinbench.offline.protocol import run_offline_cell
    from clinbench.protocol import Protocol

    return run_offline_cell(
        f"{cell['env']}/{cell['task']}",
        cell.get("agent_ref") or cell["agent"],
        cell["seed"],
        Protocol(**cell["protocol"]),
        cell["agent_params"],
        cell["env_overrides"],
        cell["agent"],
        cell["dataset"],
        cell["split"],
        Path(cell["data_dir"]),
        key=key,
        isolate=bool(cell.get("isolate")),
    )


def _deterministic(cell: dict[str, Any]) -> bool:
    """False for an agent that declares ``deterministic = False`` (an outside model)."""
    from clinbench.agents.registry import AgentLoadError, agent_entry

    try:
        factory = agent_entry(cell.get("agent_ref") or cell["agent"]).factory
    except AgentLoadError:  # fails below, in run_cell
        return True
    return getattr(factory, "deterministic", True) is not False


def _check_agent_code(cell: dict[str, Any]) -> None:
    """A plugin's code in the worker must be the code the cell hash was made with
    (an edit during a sweep would otherwise store new results under the old hash)."""
    if not cell.get("agent_code"):
        return
    from clinbench.agents.registry import agent_entry

    now = agent_entry(cell.get("agent_ref") or cell["agent"]).code
    if now != cell["agent_code"]:
        raise RuntimeError(
            f"agent {cell['agent']!r} changed since the sweep was planned ({cell['agent_code']} "
            f"-> {now}); "
            "run the sweep again to recompute its cells"
        )
