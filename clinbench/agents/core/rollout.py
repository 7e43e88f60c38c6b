"""Rolling out a macro-action policy, and the group collector of GRPO-style methods.

A group is G episodes of the *same* world seed: world and outcome stream are
identical (common random numbers), so the returns differ only through the actions.
Training budgets are counted in environment steps: a rollout given ``steps_left``
stops when the budget runs out, and marks the unfinished episode ``budget_cut`` (the
learners drop it: its partial score is not an outcome).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clinbench.env.base import Env

#: act_fn(features, mask, obs) -> (macro index, log prob, policy input row)
ActFn = Callable[[np.ndarray, np.ndarray, Any], tuple[int, float, np.ndarray]]


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


def rollout(
    env: Env,
    act: ActFn,
    world_seed: int,
    horizon: int | None = None,
    steps_left: int | None = None,
) -> Trajectory:
    """Play one episode of ``world_seed``; stop at time ``horizon`` if given (a cut), or
    after ``steps_left`` environment steps (a ``budget_cut``).

    Times are ``obs.summary()["time"]`` (days, looks: the family's unit)."""
    if steps_left is not None and steps_left < 1:
        raise ValueError(f"no environment steps left to play an episode (got {steps_left})")
    macros = env.macro_space
    obs, _ = env.reset(seed=world_seed)
    xs, masks, acts, logps, rewards, days, errors, infos, feats = [], [], [], [], [], [], [], [], []
    summaries = [obs.summary()]
    done = budget_cut = False
    while not done:
        f = macros.features(obs)
        m = macros.mask(obs)
        a, lp, x = act(f, m, obs)
        days.append(summaries[-1]["time"])
        obs, r, done, _, info = env.step(macros.to_action(a, obs))
        xs.append(x)
        feats.append(f)
        masks.append(m)
        acts.append(a)
        logps.append(lp)
        rewards.append(r)
        errors.append(info["error"])
        infos.append(info)
        summaries.append(obs.summary())
        if horizon is not None and summaries[-1]["time"] >= horizon:
            break
        if not done and steps_left is not None and len(acts) >= steps_left:
            budget_cut = True
            break
    return Trajectory(
        world_seed=world_seed,
        x=np.asarray(xs),
        mask=np.asarray(masks),
        actions=np.asarray(acts, dtype=np.int64),
        logp=np.asarray(logps),
        rewards=np.asarray(rewards),
        days=np.asarray(days),
        errors=errors,
        infos=infos,
        features=np.asarray(feats),
        summaries=summaries,
        budget_cut=budget_cut,
    )


def collect_group(
    env: Env,
    act: ActFn,
    world_seed: int,
    size: int,
    horizon: int | None = None,
    steps_left: Callable[[], int] | None = None,
) -> list[Trajectory]:
    """Up to ``size`` finished episodes of one world seed (the policy's sampling makes
    them differ); with ``steps_left``, no episode starts once the budget is spent and
    an episode the budget cuts is dropped."""
    group = []
    for _ in range(size):
        left = None if steps_left is None else steps_left()
        if left is not None and left < 1:
            break
        traj = rollout(env, act, world_seed, horizon, left)
        if not traj.budget_cut:
            group.append(traj)
    return group


def group_advantages(scores: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """GRPO's outcome advantage: (R_i - mean) / std over the group (0 if all equal)."""
    sd = scores.std()
    if sd < eps:
        return np.zeros_like(scores)
    return (scores - scores.mean()) / sd
