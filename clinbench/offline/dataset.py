"""Datasets of behaviour episodes: created like a sweep, stored in Minari's format.

``create`` plays each (task, behaviour agent) unit on training worlds (``[2**31,
2**32)``, disjoint from every evaluation world) in parallel, keeps each finished unit
in a staging folder (a crash loses at most the units running), and writes the
dataset with ``minari.create_dataset_from_buffers`` once all are done. Every random
stream is derived from the dataset seed: the worlds of a task (shared by its
behaviour agents), each agent's acting seeds, its noise and, for a learning agent, its
training. The same spec gives the same arrays in any process and with any number of
jobs.

Layout (Minari 0.5, arrow): ``<data dir>/<name>/data/`` with ``metadata.json`` and one
folder per episode. Observations are the macro features (float32, as the Gymnasium
adapter's observation space), actions the macro-action index, both in the layout of
the dataset (its tasks' names united, :mod:`clinbench.offline.layout`; for tasks of one
layout, theirs), ``infos["action_mask"]``
the validity mask of every observation; each episode's metadata holds its task,
behaviour agent, world seed, score and episode metrics, and the dataset's
``metadata["clinbench"]`` everything it was made from. The data folder is
``$MINARI_DATASETS_PATH`` when set, else ``data/datasets``; other people's code loads a
dataset with ``minari.load_dataset(name)`` under the same ``MINARI_DATASETS_PATH``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

import clinbench
from clinbench.offline import INSTALL_HINT, available
from clinbench.offline.data import LoggedEpisode
from clinbench.offline.layout import Layout, relayout, union

#: Minari's dataset id: [namespace/...]name-v<version>
NAME_RULE = (
    "letters, digits, '-' and '_', ending in -v<version>, optionally under '/'-separated "
    "namespaces (e.g. recruitment-hard-v0, clinbench/trial/tiny-v0)"
)
_UNIT_FORMAT = 1


class DatasetError(ValueError):
    """A dataset problem the user can fix (exit code 2)."""


def data_dir(path: str | Path | None = None) -> Path:
    """Where datasets live: ``path``, else ``$MINARI_DATASETS_PATH``, else ``data/datasets``."""
    return Path(path or os.environ.get("MINARI_DATASETS_PATH") or "data/datasets")


def check_name(name: str) -> str:
    import re

    part = r"[A-Za-z0-9][A-Za-z0-9_-]*"
    if not re.fullmatch(rf"(?:{part}/)*{part}-v\d+", name or ""):
        raise DatasetError(f"bad dataset name {name!r}: {NAME_RULE}")
    return name


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset is made from (stored in its metadata)."""

    name: str
    env: str
    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    episodes: int
    noise: float = 0.0
    seed: int = 0
    #: training environment steps of a learning behaviour agent (before it plays);
    #: None: the family's default budget (``Family.training_steps``)
    behaviour_train_steps: int | None = None
    agent_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    env_overrides: dict[str, Any] = field(default_factory=dict)

    def units(self) -> list[tuple[str, str]]:
        return [(t, a) for t in self.tasks for a in self.agents]


# ---------------------------------------------------------------------- streams
def _stream(spec: DatasetSpec, *parts: Any) -> np.random.Generator:
    from clinbench.protocol import stable_hash

    words = [spec.seed, *(stable_hash(p) if isinstance(p, str) else p for p in parts)]
    return np.random.default_rng(np.random.SeedSequence(words))


def world_seeds(spec: DatasetSpec, task: str) -> list[int]:
    """The training worlds of a task (the same for every behaviour agent)."""
    from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW

    rng = _stream(spec, task, 0)
    return [int(s) for s in rng.integers(TRAIN_SEED_LOW, TRAIN_SEED_HIGH, spec.episodes)]


def play_unit(spec: DatasetSpec, task: str, agent_ref: str) -> list[LoggedEpisode]:
    """The episodes of one behaviour agent on one task (trained first if it learns)."""
    from threadpoolctl import threadpool_limits

    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import make_agent
    from clinbench.env.registry import make
    from clinbench.offline.collect import play_logged
    from clinbench.protocol import training_env_factory

    env_id = f"{spec.env}/{task}"
    with threadpool_limits(limits=1, user_api="blas"):
        env = make(env_id, **spec.env_overrides)
        agent = make_agent(agent_ref, AgentContext.of(env), **spec.agent_params.get(agent_ref, {}))
        steps = spec.behaviour_train_steps
        if steps is None:
            from clinbench.env.registry import family

            steps = family(spec.env).training_steps
        if agent.learning and steps:
            train_rng = np.random.default_rng(
                int(_stream(spec, task, agent_ref, 1).integers(2**63))
            )
            agent.train(
                training_env_factory(env_id, None, steps, **spec.env_overrides),
                steps,
                train_rng,
            )
        acting = _stream(spec, task, agent_ref, 2)
        noise = _stream(spec, task, agent_ref, 3)
        return [
            play_logged(
                env, agent, task, agent_ref, w, int(acting.integers(2**63)), spec.noise, noise
            )
            for w in world_seeds(spec, task)
        ]


# ---------------------------------------------------------------------- staging
def _unit_key(spec: DatasetSpec, task: str, agent: str) -> str:
    from clinbench.sweep.cells import canonical_json, code_id

    payload = {k: v for k, v in asdict(spec).items() if k not in ("name", "tasks", "agents")}
    payload.update(task=task, agent=agent, code=code_id(spec.env), format=_UNIT_FORMAT)
    payload["agent_code"] = _agent_code(agent)
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:20]


def _agent_code(ref: str) -> str:
    from clinbench.agents.registry import agent_entry

    return agent_entry(ref).code


def _save_unit(path: Path, episodes: list[LoggedEpisode]) -> None:
    arrays: dict[str, np.ndarray] = {}
    meta = []
    for i, e in enumerate(episodes):
        arrays[f"o{i}"], arrays[f"m{i}"] = e.observations, e.action_masks
        arrays[f"a{i}"], arrays[f"r{i}"] = e.actions, e.rewards
        meta.append({**e.metadata(), "terminated": e.terminated, "truncated": e.truncated})
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load_unit(path: Path) -> list[LoggedEpisode]:
    with np.load(path) as z:
        meta = json.loads(z["meta"].tobytes())
        return [
            _episode(m, z[f"o{i}"], z[f"m{i}"], z[f"a{i}"], z[f"r{i}"]) for i, m in enumerate(meta)
        ]


def _episode(meta: dict, obs, masks, actions, rewards) -> LoggedEpisode:
    return LoggedEpisode(
        task=meta["task"],
        behaviour=meta["behaviour"],
        world_seed=int(meta["world_seed"]),
        observations=np.asarray(obs, dtype=np.float32),
        action_masks=np.asarray(masks, dtype=bool),
        actions=np.asarray(actions, dtype=np.int64),
        rewards=np.asarray(rewards, dtype=np.float64),
        terminated=bool(meta["terminated"]),
        truncated=bool(meta["truncated"]),
        score=float(meta["score"]),
        metrics=dict(meta.get("metrics", {})),
    )


def _run_unit(spec_dict: dict, task: str, agent: str, path: str) -> tuple[str, str]:
    spec = DatasetSpec(
        **{**spec_dict, "tasks": tuple(spec_dict["tasks"]), "agents": tuple(spec_dict["agents"])}
    )
    _save_unit(Path(path), play_unit(spec, task, agent))
    return task, agent


# ---------------------------------------------------------------------- create
@contextmanager
def _minari_root(root: Path) -> Iterator[None]:
    """Minari reads its data folder from ``MINARI_DATASETS_PATH`` at each call."""
    old = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(root.resolve())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old


def _require_minari() -> None:
    if not available():
        raise DatasetError(f"datasets need Minari (the optional extra 'offline'): {INSTALL_HINT}")


def create(
    spec: DatasetSpec,
    root: Path,
    jobs: int = 1,
    force: bool = False,
    on_unit: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """Play every unit (resuming finished ones), write the dataset, return its metadata."""
    _require_minari()
    check_name(spec.name)
    target = root / spec.name
    if target.exists():
        if not force:
            raise DatasetError(f"dataset {spec.name!r} exists in {root}; --force replaces it")
        shutil.rmtree(target)
    staging = root / ".staging" / spec.name
    staging.mkdir(parents=True, exist_ok=True)
    paths = {u: staging / f"{_unit_key(spec, *u)}.npz" for u in spec.units()}
    todo = [u for u, p in paths.items() if not p.exists()]
    for u in spec.units():
        if u not in todo and on_unit:
            on_unit(*u)
    if todo:
        from joblib import Parallel, delayed

        spec_dict = asdict(spec)
        calls = (delayed(_run_unit)(spec_dict, t, a, str(paths[(t, a)])) for t, a in todo)
        for task, agent in Parallel(n_jobs=min(jobs, len(todo)), return_as="generator_unordered")(
            calls
        ):
            if on_unit:
                on_unit(task, agent)
    lay = layout(spec)
    tasks = {t: _task_layout(spec.env, t, spec.env_overrides) for t in spec.tasks}
    episodes = [
        relayout(e, tasks[e.task], lay) for u in spec.units() for e in _load_unit(paths[u])
    ]
    meta = _write(spec, root, episodes, lay)
    shutil.rmtree(staging)
    for parent in staging.parents:  # a namespaced id's empty folders
        if parent == root or any(parent.iterdir()):
            break
        parent.rmdir()
    return meta


def layout(spec: DatasetSpec) -> Layout:
    """The dataset's observation layout: its tasks' macro features and actions united by
    name (:mod:`clinbench.offline.layout`; the trial tasks share one, the recruitment
    tasks differ by their sites)."""
    return tasks_layout(asdict(spec), spec.tasks)


def tasks_layout(spec: dict[str, Any], tasks: Sequence[str]) -> Layout:
    """The layout of some of a dataset's tasks (their names united); ``spec`` is the
    dataset's spec as stored in its metadata (``meta["spec"]``)."""
    return union([_task_layout(spec["env"], t, spec["env_overrides"]) for t in tasks])


def _task_layout(env: str, task: str, overrides: dict[str, Any]) -> Layout:
    from clinbench.env.registry import make

    return Layout.of(make(f"{env}/{task}", **overrides).macro_space)


def _spaces(lay: Layout):
    import gymnasium as gym

    obs = gym.spaces.Box(-np.inf, np.inf, (len(lay.feature_names),), np.float32)
    return obs, gym.spaces.Discrete(len(lay.macro_names))


def _write(
    spec: DatasetSpec, root: Path, episodes: list[LoggedEpisode], lay: Layout
) -> dict[str, Any]:
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    from clinbench.env.registry import spec as task_spec
    from clinbench.sweep.cells import code_id

    obs_space, act_space = _spaces(lay)
    env, refs = minari_env(spec)
    buffers = [
        EpisodeBuffer(
            id=i,
            seed=e.world_seed,
            observations=e.observations,
            actions=e.actions,
            rewards=e.rewards,
            terminations=np.r_[np.zeros(len(e) - 1, bool), [e.terminated]],
            truncations=np.r_[np.zeros(len(e) - 1, bool), [e.truncated]],
            infos={"action_mask": e.action_masks},
        )
        for i, e in enumerate(episodes)
    ]
    scores: dict[str, dict[str, float]] = {}
    for t in spec.tasks:
        for a in spec.agents:
            s = [e.score for e in episodes if e.task == t and e.behaviour == a]
            scores.setdefault(t, {})[a] = float(np.mean(s))
        scores[t]["mixture"] = float(np.mean([e.score for e in episodes if e.task == t]))
    meta = {
        "name": spec.name,
        "spec": asdict(spec),
        "env_ids": [f"{spec.env}/{t}" for t in spec.tasks],
        "task_versions": {t: task_spec(f"{spec.env}/{t}").version for t in spec.tasks},
        "behaviour_code": {a: _agent_code(a) for a in spec.agents},
        "code": code_id(spec.env),
        "clinbench_version": clinbench.__version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "feature_names": list(lay.feature_names),
        "macro_names": list(lay.macro_names),
        "episodes": len(episodes),
        "transitions": int(sum(len(e) for e in episodes)),
        "behaviour_scores": scores,
        "digest": episodes_digest(episodes),
    }
    with _minari_root(root), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Minari's reminders of optional fields
        ds = minari.create_dataset_from_buffers(
            spec.name,
            buffers,
            observation_space=obs_space,
            action_space=act_space,
            algorithm_name="+".join(spec.agents)
            + (f" (epsilon {spec.noise})" if spec.noise else ""),
            author="clinbench",
            description=(
                f"clinbench {spec.env} behaviour episodes of {', '.join(spec.agents)} on "
                f"{', '.join(spec.tasks)} ({spec.episodes} training worlds per task)"
            ),
            data_format="arrow",
            env=env,
            **refs,
        )
        ds.storage.update_metadata({"clinbench": meta})
        ds.storage.update_episode_metadata([e.metadata() for e in episodes])
    return meta


def minari_env(spec: DatasetSpec) -> tuple[Any, dict[str, float]]:
    """The Gymnasium spec Minari stores (so ``recover_environment()`` builds the task's
    environment) and, for a one-task dataset, the reference scores ``get_normalized_score``
    uses: random's and the reference planner's means on the task's reference worlds, the
    0 and 1 of clinbench's normalised score (episode return equals score). A dataset of
    several tasks stores its first task's environment and no reference scores: they are
    per task (``metadata["clinbench"]["env_ids"]`` lists every task)."""
    import dataclasses
    import importlib

    import gymnasium as gym

    from clinbench.env.gym_adapter import gym_id, register_gym_envs
    from clinbench.env.registry import family

    register_gym_envs()
    env_id = f"{spec.env}/{spec.tasks[0]}"
    env_spec = gym.spec(gym_id(env_id))
    if spec.env_overrides:
        env_spec = dataclasses.replace(
            env_spec, kwargs={**env_spec.kwargs, **spec.env_overrides}
        )
    if len(spec.tasks) != 1 or spec.env_overrides:
        return env_spec, {}
    fam = family(spec.env)
    stored = importlib.import_module(fam.references)
    if stored.TASK_VERSION != fam.task_version:
        return env_spec, {}
    ref = stored.REFERENCE_SCORES[spec.tasks[0]]
    return env_spec, {
        "ref_min_score": float(ref["random"]),
        "ref_max_score": float(ref["reference_planner"]),
    }


def episodes_digest(episodes: list[LoggedEpisode]) -> str:
    """A hash of every stored array and episode field: a dataset's identity."""
    h = hashlib.sha256()
    for e in episodes:
        for a in (e.observations, e.action_masks, e.actions, e.rewards):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update(json.dumps(e.metadata(), sort_keys=True).encode())
        h.update(bytes([e.terminated, e.truncated]))
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------- read
def metadata(name: str, root: Path) -> dict[str, Any]:
    """A dataset's clinbench metadata (read without Minari: for list, info, sweeps)."""
    path = root / name / "data" / "metadata.json"
    if not path.exists():
        valid = ", ".join(names(root)) or "none"
        raise DatasetError(f"no dataset {name!r} in {root}; available: {valid}")
    raw = json.loads(path.read_text())
    if "clinbench" not in raw:
        raise DatasetError(f"dataset {name!r} in {root} was not made by clinbench dataset create")
    return {
        **raw["clinbench"],
        "total_steps": raw.get("total_steps"),
        "minari_version": raw.get("minari_version"),
    }


def names(root: Path) -> list[str]:
    """The clinbench datasets in ``root``."""
    if not root.is_dir():
        return []
    found = (m.parent.parent for m in root.glob("**/data/metadata.json"))
    return sorted(
        p.relative_to(root).as_posix()
        for p in found
        if ".staging" not in p.relative_to(root).parts
        and "clinbench" in json.loads((p / "data" / "metadata.json").read_text())
    )


@cache
def _load_cached(name: str, root: str, digest: str) -> tuple[LoggedEpisode, ...]:
    import minari

    with _minari_root(Path(root)):
        ds = minari.load_dataset(name)
        metas = list(ds.storage.get_episode_metadata(range(ds.total_episodes)))
        out = []
        for ep, m in zip(ds.iterate_episodes(), metas, strict=True):
            out.append(
                _episode(
                    {
                        **m,
                        "terminated": bool(ep.terminations[-1]),
                        "truncated": bool(ep.truncations[-1]),
                    },
                    ep.observations,
                    ep.infos["action_mask"],
                    ep.actions,
                    ep.rewards,
                )
            )
    if episodes_digest(out) != digest:
        raise DatasetError(f"dataset {name!r} in {root} does not match its recorded digest")
    return tuple(out)


def load(name: str, root: Path) -> tuple[dict[str, Any], tuple[LoggedEpisode, ...]]:
    """(metadata, episodes) of a dataset; the episodes are checked against the digest."""
    _require_minari()
    meta = metadata(name, root)
    return meta, _load_cached(name, str(root.resolve()), meta["digest"])
