"""``grpo``: Group Relative Policy Optimization, the common parent of the learners.

Shao et al., "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open
Language Models", arXiv 2402.03300. Per iteration: ``groups`` groups (the paper's
batch of prompts), each G episodes of one training world (common random numbers),
all collected at once; outcome advantage A_i = (R_i - mean) / std over i's group given
to every step of episode i, then a PPO-clip update on the batch with an exact discrete
KL to the initial (reference) policy. No value network.

Hyper-parameters (``conf/agent/grpo.yaml``):
    group_size (8): episodes per group, all of one world seed.
    groups (1): groups per update, collected at once.
    epochs (4): full-batch Adam steps per update (of at most ``minibatch`` rows).
    lr (0.03): their Adam step size.
    minibatch (0): an update of more rows than this (0: none) takes stable-baselines3's
        PPO schedule instead: ``minibatch_epochs`` (10) shuffled passes, an Adam step
        at ``minibatch_lr`` (3e-4, an Adam of its own) per ``minibatch`` rows
        (docs/agents.md, grpo). Only the schedule: stable-baselines3's per-minibatch
        advantage normalisation, gradient clipping and value network are not here.
    clip_eps (0.2): PPO clipping.
    kl_beta (0.01): weight of KL(pi || reference).
    ent_coef (0.0): entropy bonus.
    hidden (16): hidden units (0 = linear softmax policy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam, minibatches
from clinbench.agents.core.policy import SoftmaxPolicy
from clinbench.agents.core.ppo import ppo_objective, ppo_update
from clinbench.agents.core.rollout import Trajectory, collect_groups, group_advantages
from clinbench.agents.learner import LearningAgent
from clinbench.agents.registry import register_agent
from clinbench.env.base import Env


@register_agent
class GRPOAgent(LearningAgent):
    name = "grpo"
    description = "GRPO: group-relative outcome advantage + PPO-clip + KL (parent of the learners)"

    def __init__(
        self,
        context: AgentContext,
        group_size: int = 8,
        groups: int = 1,
        epochs: int = 4,
        clip_eps: float = 0.2,
        kl_beta: float = 0.01,
        ent_coef: float = 0.0,
        minibatch: int = 0,
        minibatch_epochs: int = 10,
        minibatch_lr: float = 3e-4,
        **config: Any,
    ):
        super().__init__(context, **config)
        if group_size < 1 or groups < 1 or epochs < 0 or minibatch < 0 or minibatch_epochs < 0:
            raise ValueError(
                f"group_size and groups must be >= 1, epochs, minibatch and "
                f"minibatch_epochs >= 0, got {group_size}, {groups}, {epochs}, "
                f"{minibatch}, {minibatch_epochs}"
            )
        self.group_size, self.groups, self.epochs = group_size, groups, epochs
        self.clip_eps, self.kl_beta, self.ent_coef = clip_eps, kl_beta, ent_coef
        self.minibatch, self.minibatch_epochs = minibatch, minibatch_epochs
        self.minibatch_lr = minibatch_lr
        # the minibatch schedule's generator source, Adam and shuffling generator
        self._rng: np.random.Generator | None = None
        self._minibatch_adam: Adam | None = None
        self._shuffle: np.random.Generator | None = None

    def optimiser(self, rng: np.random.Generator) -> Adam:
        """The full-batch updates' Adam at ``lr``; ``rng`` (the training generator) is kept
        for the minibatch schedule, whose Adam and shuffling generator are made at the first
        update that takes it (:meth:`_minibatch_state`)."""
        self._rng, self._minibatch_adam, self._shuffle = rng, None, None
        return Adam(self.policy.params, lr=self.lr)

    def _minibatch_state(self) -> tuple[Adam, np.random.Generator]:
        """The minibatch schedule's Adam at ``minibatch_lr`` and its shuffling generator,
        spawned from the training generator at the first minibatched update: until then
        nothing is spawned, so a run whose updates all take full batches plays exactly
        what it would with ``minibatch: 0`` (the episodes' generators are spawned from
        the same generator)."""
        if self._shuffle is None:
            if self._rng is None:
                raise RuntimeError("GRPO updates need optimiser(rng) first (learn calls it)")
            self._shuffle = self._rng.spawn(1)[0]
            self._minibatch_adam = Adam(self.policy.params, lr=self.minibatch_lr)
        return self._minibatch_adam, self._shuffle

    def step_advantages(self, group: list[Trajectory]) -> list[np.ndarray]:
        """Per-step advantages of each trajectory (GRPO: the episode's group advantage)."""
        adv = group_advantages(np.array([t.score for t in group]))
        return [np.full(len(t), a) for t, a in zip(group, adv, strict=True)]

    def learn(self, env: Env, rng: np.random.Generator) -> None:
        reference = self.policy.copy()
        optimizer = self.optimiser(rng)
        iteration = 0
        while self.steps_left > 0:
            groups = self.collect(env, rng, None, lambda: self.steps_left)
            iteration += 1
            if groups:  # empty when the budget cut every episode
                self.fit_standardiser([t for g in groups for t in g])
                self.update_groups(groups, optimizer, reference)
            self.progress(iteration, unchanged=not groups)

    def collect(
        self,
        env: Env,
        rng: np.random.Generator,
        horizon: int | None,
        steps_left: Callable[[], int],
    ) -> list[list[Trajectory]]:
        """One iteration's groups (``groups`` world seeds drawn from ``rng``)."""
        seeds = [self.world_seed(rng) for _ in range(self.groups)]
        return collect_groups(env, self.sampler(rng), seeds, self.group_size, horizon, steps_left)

    def update_groups(self, groups: list[list[Trajectory]], optimizer: Adam, reference) -> None:
        """One update on the batch, each episode's advantages taken within its group."""
        trajs, advantages = [], []
        for group in groups:
            trajs += group
            advantages += self.step_advantages(group)
        self.update(trajs, advantages, optimizer, reference)

    def update(
        self, group: list[Trajectory], advantages: list[np.ndarray], optimizer: Adam, reference
    ) -> None:
        """One PPO-clip update on the group with the given per-step advantages: full-batch
        steps, or the minibatch schedule when the batch holds more than ``minibatch`` rows."""
        x = self.std(np.concatenate([t.x for t in group]))
        mask = np.concatenate([t.mask for t in group])
        actions = np.concatenate([t.actions for t in group])
        old_logp = np.concatenate([t.logp for t in group])
        adv = np.concatenate(advantages)
        if not np.any(adv):
            return
        ref_logp = reference.forward(x, mask).logp
        batch = (self.policy, x, mask, actions, old_logp, adv, ref_logp)
        objective = {"clip_eps": self.clip_eps, "kl_beta": self.kl_beta, "ent_coef": self.ent_coef}
        if 0 < self.minibatch < actions.size:
            adam, shuffle = self._minibatch_state()
            minibatch_update(
                adam, *batch, self.minibatch, self.minibatch_epochs, shuffle, **objective
            )
        else:
            policy, *arrays = batch
            ppo_update(policy, optimizer, *arrays, epochs=self.epochs, **objective)


def minibatch_update(
    optimizer: Adam,
    policy: SoftmaxPolicy,
    x: np.ndarray,
    mask: np.ndarray,
    actions: np.ndarray,
    old_logp: np.ndarray,
    adv: np.ndarray,
    ref_logp: np.ndarray | None,
    size: int,
    passes: int,
    rng: np.random.Generator,
    **objective: float,
) -> float:
    """stable-baselines3's PPO schedule: ``passes`` passes over the batch in an order
    shuffled by ``rng``, an Adam ascent step on the PPO-clip objective per ``size`` rows
    (a pass's last step may take fewer); returns the last objective value."""
    n = actions.size
    value = 0.0
    for rows in minibatches(n, size, passes * -(-n // size), rng):
        ref = None if ref_logp is None else ref_logp[rows]
        value, grads = ppo_objective(
            policy, x[rows], mask[rows], actions[rows], old_logp[rows], adv[rows], ref, **objective
        )
        optimizer.step(policy.params, grads)
    return value
