"""Datasets of logged decisions that no clinbench agent made: a family's own logs.

A family whose world has its own decision makers (the sponsors of drug programs, say)
registers a builder here (:func:`register_logged`, from its registration module); the
generic writer stores what it builds as a Minari dataset, so the paper-style data
(``clinbench dataset logged``) sit beside the behaviour-agent datasets of
:mod:`clinbench.offline.dataset` and load with ``minari.load_dataset``. This module
knows no family by name.

A builder returns a :class:`Logged`: the observation and action spaces, one
:class:`LoggedTrajectory` per decision maker's episode (observations one longer than
actions, as Minari stores them) and the dataset's metadata.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import json
import shutil
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import clinbench


@dataclass(frozen=True)
class LoggedTrajectory:
    observations: Any
    actions: np.ndarray
    rewards: np.ndarray
    #: per-episode metadata (plain JSON data)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Logged:
    observation_space: Any
    action_space: Any
    trajectories: list[LoggedTrajectory]
    description: str
    metadata: dict[str, Any]


#: family -> "module:function" of its builder(programs, seed) -> Logged (imported when used)
_BUILDERS: dict[str, str] = {}


def register_logged(family: str, builder: str) -> None:
    """Register ``family``'s logged-data builder, ``"module:function"`` (its registration
    module calls this; the module is imported only when a dataset is built)."""
    _BUILDERS[family] = builder


def builder(family: str) -> Callable[[int, int], Logged]:
    module, _, name = _BUILDERS[family].partition(":")
    return getattr(importlib.import_module(module), name)


def logged_families() -> list[str]:
    from clinbench.env.registry import families

    families()  # the registry's scan imports every family, which registers its builder
    return sorted(_BUILDERS)


def digest(logged: Logged) -> str:
    """sha256 of every trajectory's actions, rewards and observations."""
    h = hashlib.sha256()
    for t in logged.trajectories:
        h.update(np.ascontiguousarray(t.actions).tobytes())
        h.update(np.ascontiguousarray(t.rewards).tobytes())
        h.update(json.dumps(t.observations, sort_keys=True, default=_plain).encode())
    return h.hexdigest()


def _plain(x: Any) -> Any:
    return x.tolist() if isinstance(x, np.ndarray) else str(x)


def create_logged(
    name: str, family: str, programs: int, seed: int, root: Path, force: bool = False
) -> dict[str, Any]:
    """Build ``family``'s logged data (``programs`` units from ``seed``) and write it as
    the Minari dataset ``name`` under ``root``; its clinbench metadata."""
    from clinbench.offline.dataset import (
        DatasetError,
        _minari_root,
        _require_minari,
        check_name,
    )

    _require_minari()
    check_name(name)
    if family not in logged_families():
        valid = ", ".join(logged_families()) or "none"
        raise DatasetError(f"no logged data for {family!r}; families with logged data: {valid}")
    if programs < 1:
        raise DatasetError("--programs must be at least 1")
    target = root / name
    if target.exists() and not force:
        raise DatasetError(f"dataset {name!r} exists in {root}: pass --force to replace it")
    logged = builder(family)(programs, seed)
    if not logged.trajectories:
        raise DatasetError("the builder logged no episode")
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    buffers = [
        EpisodeBuffer(
            id=i, seed=seed, observations=t.observations, actions=t.actions, rewards=t.rewards,
            terminations=np.r_[np.zeros(len(t.actions) - 1, bool), [True]],
            truncations=np.zeros(len(t.actions), bool),
        )
        for i, t in enumerate(logged.trajectories)
    ]
    meta = {
        **logged.metadata,
        "name": name,
        "family": family,
        "programs": programs,
        "seed": seed,
        "clinbench_version": clinbench.__version__,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "episodes": len(buffers),
        "transitions": int(sum(len(t.actions) for t in logged.trajectories)),
        "digest": digest(logged),
    }
    if target.exists():
        shutil.rmtree(target)
    with _minari_root(root), warnings.catch_warnings(), _size_once():
        warnings.simplefilter("ignore", UserWarning)  # Minari's reminders of optional fields
        ds = minari.create_dataset_from_buffers(
            name, buffers, observation_space=logged.observation_space,
            action_space=logged.action_space, algorithm_name=f"{family} logged decisions",
            author="clinbench", description=logged.description, data_format="arrow",
        )
        ds.storage.update_metadata({"clinbench": meta})
        ds.storage.update_episode_metadata([t.metadata for t in logged.trajectories])
    ds.storage.update_metadata({"dataset_size": ds.storage.get_size()})
    return meta


@contextmanager
def _size_once() -> Iterator[None]:
    """Minari 0.5's arrow storage re-measures the whole dataset folder after each
    episode's metadata (``MinariStorage.get_size``, a glob of every file): quadratic in
    episodes, over 10 minutes for 10,000 programs. While writing, the size is not
    measured; the caller measures it once at the end."""
    from minari.dataset.minari_storage import MinariStorage

    measure = MinariStorage.get_size
    MinariStorage.get_size = lambda self: 0.0
    try:
        yield
    finally:
        MinariStorage.get_size = measure
