"""Rolling out a macro-action policy: one episode at a time, or N at once.

A *sampler* (:class:`Sampler`) chooses the macro-actions of a batch of worlds in one
policy forward pass. Each episode gets its own handle from ``sampler.start()`` (its
generator and the method's per-episode input state), in the order episodes start, so
an episode's actions depend only on its world seed and its handle: played one by one
through the native environment or N at once through the family's batched core
(``env.batch(n)``, :class:`clinbench.protocol.TrainingBatch`), the same episodes give
the same trajectories (``tests/test_batched_collection.py``).

A group is G episodes of the *same* world seed: world and outcome stream are
identical (common random numbers), so the returns differ only through the actions.
Training budgets are counted in environment steps: a rollout given ``steps_left``
stops when the budget runs out, and marks the unfinished episodes ``budget_cut`` (the
learners drop them: a partial score is not an outcome).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from clinbench.env.base import Env


class Sampler(Protocol):
    """Chooses macro-actions for a batch of episodes (see the module docstring)."""

    def start(self) -> Any:
        """The handle of a new episode."""

    def __call__(
        self,
        features: np.ndarray,
        masks: np.ndarray,
        summaries: list[dict[str, float]],
        episodes: list[Any],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(macro indices, their log probs, policy input rows) of the batch's rows."""


@dataclass
class Trajectory:
    """One (possibly cut) episode as the policy saw it."""

    world_seed: int
    x: np.ndarray  # (T, n_in) policy inputs as used when acting
    mask: np.ndarray  # (T, n_actions) bool
    actions: np.ndarray  # (T,) int
    logp: np.ndarray  # (T,) log prob of the action when acting
    rewards: np.ndarray  # (T,)
    days: np.ndarray  # (T,) day of each decision
    errors: list[str | None] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    features: np.ndarray | None = None  # (T, n_features) raw macro features
    #: ``obs.summary()`` before the first step and after every step (T + 1 entries)
    summaries: list[dict[str, float]] = field(default_factory=list)
    #: stopped because the training budget ran out (not an outcome; learners drop it)
    budget_cut: bool = False

    @property
    def score(self) -> float:
        """The episode score (the partial score at the cut for cut episodes)."""
        return float(self.rewards.sum())

    def __len__(self) -> int:
        return int(self.actions.size)


class _Episode:
    """What a rollout records of one episode while it runs."""

    def __init__(self, world_seed: int, handle: Any, summary: dict[str, float]):
        self.world_seed, self.handle = world_seed, handle
        self.x: list[np.ndarray] = []
        self.features: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []
        self.actions: list[int] = []
        self.logp: list[float] = []
        self.rewards: list[float] = []
        self.days: list[float] = []
        self.errors: list[str | None] = []
        self.infos: list[dict[str, Any]] = []
        self.summaries = [summary]

    def record(self, f, m, a, lp, x, reward, info, summary) -> None:
        self.days.append(self.summaries[-1]["time"])
        self.features.append(f)
        self.masks.append(m)
        self.actions.append(a)
        self.logp.append(lp)
        self.x.append(x)
        self.rewards.append(reward)
        self.errors.append(info["error"])
        self.infos.append(info)
        self.summaries.append(summary)

    def trajectory(self, budget_cut: bool) -> Trajectory:
        return Trajectory(
            world_seed=self.world_seed,
            x=np.asarray(self.x),
            mask=np.asarray(self.masks),
            actions=np.asarray(self.actions, dtype=np.int64),
            logp=np.asarray(self.logp),
            rewards=np.asarray(self.rewards),
            days=np.asarray(self.days),
            errors=self.errors,
            infos=self.infos,
            features=np.asarray(self.features),
            summaries=self.summaries,
            budget_cut=budget_cut,
        )


def rollout(
    env: Env,
    act: Sampler,
    world_seed: int,
    horizon: int | None = None,
    steps_left: int | None = None,
) -> Trajectory:
    """Play one episode of ``world_seed`` through ``env``; stop at time ``horizon`` if
    given (a cut), or after ``steps_left`` environment steps (a ``budget_cut``).

    Times are ``obs.summary()["time"]`` (days, looks: the family's unit)."""
    if steps_left is not None and steps_left < 1:
        raise ValueError(f"no environment steps left to play an episode (got {steps_left})")
    macros = env.macro_space
    obs, _ = env.reset(seed=world_seed)
    ep = _Episode(world_seed, act.start(), obs.summary())
    done = budget_cut = False
    while not done:
        f = macros.features(obs)
        m = macros.mask(obs)
        a, lp, x = act(f[None], m[None], [ep.summaries[-1]], [ep.handle])
        k = int(a[0])
        obs, r, done, _, info = env.step(macros.to_action(k, obs))
        ep.record(f, m, k, float(lp[0]), x[0], r, info, obs.summary())
        if horizon is not None and ep.summaries[-1]["time"] >= horizon:
            break
        if not done and steps_left is not None and len(ep.actions) >= steps_left:
            budget_cut = True
            break
    return ep.trajectory(budget_cut)


def rollout_batch(
    worlds: Any,
    act: Sampler,
    world_seeds: list[int],
    horizon: int | None = None,
    steps_left: int | None = None,
) -> list[Trajectory]:
    """Play the episodes of ``world_seeds`` at once through ``worlds`` (a batched core
    with ``reset(i, seed)``, ``step(rows, macros)``, ``observe(rows)`` and
    ``summaries(rows)``): one policy forward pass per day for all of them.

    Each episode ends as in :func:`rollout`. With ``steps_left``, a day on which the
    budget cannot step every running episode steps the first ones (in seed order) and
    cuts the rest (``budget_cut``)."""
    if steps_left is not None and steps_left < 1:
        raise ValueError(f"no environment steps left to play an episode (got {steps_left})")
    n = len(world_seeds)
    for i, seed in enumerate(world_seeds):
        worlds.reset(i, seed)
    first = worlds.summaries(list(range(n)))
    eps = [_Episode(seed, act.start(), first[i]) for i, seed in enumerate(world_seeds)]
    cut = [False] * n
    active, taken = list(range(n)), 0
    while active:
        if steps_left is not None and taken + len(active) > steps_left:
            room = steps_left - taken
            for i in active[room:]:
                cut[i] = True
            active = active[:room]
            if not active:
                break
        f, m = worlds.observe(active)
        a, lp, x = act(
            f, m, [eps[i].summaries[-1] for i in active], [eps[i].handle for i in active]
        )
        ks = a.tolist()
        rewards, done, infos = worlds.step(active, ks)
        taken += len(active)
        summaries = worlds.summaries(active)
        running = []
        for j, i in enumerate(active):
            ep = eps[i]
            ep.record(f[j], m[j], ks[j], float(lp[j]), x[j], rewards[j], infos[j], summaries[j])
            if done[j] or (horizon is not None and summaries[j]["time"] >= horizon):
                continue
            running.append(i)
        active = running
    return [ep.trajectory(c) for ep, c in zip(eps, cut, strict=True)]


def collect(
    env: Any,
    act: Sampler,
    world_seeds: list[int],
    horizon: int | None = None,
    steps_left: int | None = None,
) -> list[Trajectory]:
    """The episodes of ``world_seeds``: at once through ``env.batch(n)`` where the
    environment offers a batched core, else one by one (the same trajectories)."""
    batch = getattr(env, "batch", None)
    worlds = batch(len(world_seeds)) if batch is not None else None
    if worlds is not None:
        return rollout_batch(worlds, act, world_seeds, horizon, steps_left)
    out = []
    for seed in world_seeds:
        left = None if steps_left is None else steps_left - sum(len(t) for t in out)
        if left is not None and left < 1:
            break
        out.append(rollout(env, act, seed, horizon, left))
    return out


def collect_groups(
    env: Env,
    act: Sampler,
    world_seeds: list[int],
    size: int,
    horizon: int | None = None,
    steps_left: Callable[[], int] | None = None,
) -> list[list[Trajectory]]:
    """A group of up to ``size`` finished episodes per world seed, all collected at once
    (the policy's sampling makes a group's episodes differ); with ``steps_left``,
    episodes the budget cuts are dropped, and groups left empty."""
    left = None if steps_left is None else steps_left()
    if left is not None and left < 1:
        return []
    played = collect(env, act, [s for s in world_seeds for _ in range(size)], horizon, left)
    groups = [
        [t for t in played[k * size : (k + 1) * size] if not t.budget_cut]
        for k in range(len(world_seeds))
    ]
    return [g for g in groups if g]


def collect_group(
    env: Env,
    act: Sampler,
    world_seed: int,
    size: int,
    horizon: int | None = None,
    steps_left: Callable[[], int] | None = None,
) -> list[Trajectory]:
    """Up to ``size`` finished episodes of one world seed (:func:`collect_groups`)."""
    groups = collect_groups(env, act, [world_seed], size, horizon, steps_left)
    return groups[0] if groups else []


def group_advantages(scores: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """GRPO's outcome advantage: (R_i - mean) / std over the group (0 if all equal)."""
    sd = scores.std()
    if sd < eps:
        return np.zeros_like(scores)
    return (scores - scores.mean()) / sd
