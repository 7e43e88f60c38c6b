"""Logged episodes, and the arrays an offline agent learns from (and nothing else).

A :class:`LoggedEpisode` is one behaviour episode as the dataset stores it, in Minari's
layout: ``T + 1`` observations (the macro features after the reset and after every
step, float32 as in the Gymnasium adapter's observation space), ``T`` macro-action
indices, rewards, and the macro validity mask of every observation (Minari's
``infos["action_mask"]``). Its task, behaviour agent, world seed, score and episode
metrics are the episode's metadata: the protocol uses them to select a split, the
agent never sees them.

:class:`OfflineData` is what the protocol hands an offline agent: transitions as
arrays, built from the selected episodes. It holds no environment, no world seed and
nothing from which one could be rebuilt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class LoggedEpisode:
    """One behaviour episode as stored (Minari's field names)."""

    task: str
    behaviour: str
    world_seed: int
    observations: np.ndarray  # (T + 1, features) float32
    action_masks: np.ndarray  # (T + 1, actions) bool
    actions: np.ndarray  # (T,) int64 macro-action index
    rewards: np.ndarray  # (T,) float64
    terminated: bool
    truncated: bool
    score: float
    metrics: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.actions.size)

    def metadata(self) -> dict:
        """The per-episode metadata the dataset stores beside the arrays."""
        return {
            "task": self.task,
            "behaviour": self.behaviour,
            "world_seed": int(self.world_seed),
            "score": float(self.score),
            "metrics": {k: float(v) for k, v in self.metrics.items()},
        }


@dataclass(frozen=True)
class OfflineData:
    """Transitions of the selected episodes (row t: the decision at observation t).

    ``terminals`` marks the last transition of an episode the environment ended
    (no bootstrapping past it); ``timeouts`` an episode cut before its end.
    ``returns_to_go`` is the undiscounted sum of rewards from each decision on, and
    ``episode_returns`` the return of each episode (``episode`` indexes it).
    """

    observations: np.ndarray
    next_observations: np.ndarray
    masks: np.ndarray
    next_masks: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    timeouts: np.ndarray
    episode: np.ndarray
    returns_to_go: np.ndarray
    episode_returns: np.ndarray
    feature_names: tuple[str, ...]
    macro_names: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.actions.size)

    @property
    def n_episodes(self) -> int:
        return int(self.episode_returns.size)

    def digest(self) -> str:
        """A hash of the arrays (the identity of what an agent was trained on)."""
        h = hashlib.sha256()
        for name in ("observations", "masks", "actions", "rewards", "terminals", "episode"):
            h.update(np.ascontiguousarray(getattr(self, name)).tobytes())
        return h.hexdigest()[:16]

    @classmethod
    def from_episodes(
        cls,
        episodes: Sequence[LoggedEpisode],
        feature_names: Sequence[str],
        macro_names: Sequence[str],
    ) -> OfflineData:
        if not episodes:
            raise ValueError("no episodes selected: the split leaves nothing to learn from")
        obs = [e.observations[:-1] for e in episodes]
        nxt = [e.observations[1:] for e in episodes]
        masks = [e.action_masks[:-1] for e in episodes]
        next_masks = [e.action_masks[1:] for e in episodes]
        terminals, timeouts, rtg = [], [], []
        for e in episodes:
            end = np.zeros(len(e), dtype=bool)
            term, cut = end.copy(), end.copy()
            if len(e):
                term[-1], cut[-1] = e.terminated, not e.terminated
            terminals.append(term)
            timeouts.append(cut)
            rtg.append(np.cumsum(e.rewards[::-1])[::-1])
        return cls(
            observations=np.concatenate(obs).astype(np.float64),
            next_observations=np.concatenate(nxt).astype(np.float64),
            masks=np.concatenate(masks).astype(bool),
            next_masks=np.concatenate(next_masks).astype(bool),
            actions=np.concatenate([e.actions for e in episodes]).astype(np.int64),
            rewards=np.concatenate([e.rewards for e in episodes]).astype(np.float64),
            terminals=np.concatenate(terminals),
            timeouts=np.concatenate(timeouts),
            episode=np.concatenate([np.full(len(e), i) for i, e in enumerate(episodes)]),
            returns_to_go=np.concatenate(rtg).astype(np.float64),
            episode_returns=np.array([float(e.rewards.sum()) for e in episodes]),
            feature_names=tuple(feature_names),
            macro_names=tuple(macro_names),
        )
