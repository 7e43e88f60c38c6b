"""``hcapo``: GRPO plus a step-level hindsight advantage.

Tan et al., "Hindsight Credit Assignment for Long-Horizon LLM Agents", arXiv 2603.08754.

Kept: the group outcome advantage of GRPO (the macro term) plus a micro term from a
hindsight action model. Replaced: the LLM scoring its own actions in hindsight is a
multinomial logistic regression h(a | s, z) of the action on the standardised
features and the episode's outcome class z (1 = above the group mean), refit on a
rolling buffer of recent groups.

Per group: pi_hind(a_t) = h(a_t | s_t, z)^(1 / temperature) (renormalised over the valid
actions), rho_t = clip(pi_hind(a_t) / mean_t pi_hind, 0.8, 1.2),
Q_t = rho_t * gamma^(T - t) * R, optionally smoothed Q_t <- (Q_t + Q_{t+1}) / 2, micro
advantage = Q standardised over all (i, t) of the group; A = A_macro + omega * A_micro
with negative micro terms zeroed in successful trajectories. omega = 0 is exactly GRPO.

Hyper-parameters (``conf/agent/hcapo.yaml``; GRPO's too):
    omega (0.25): weight of the micro advantage; 0 collapses to GRPO exactly; chosen by
        the search on training worlds (``experiments/hparam_search.py``).
    gamma (0.986): the paper's 0.95 over 50 steps rescaled to 180 days.
    temperature (5.0): pi_hind = h^(1 / temperature).
    rho_clip ([0.8, 1.2]): bounds of the hindsight ratio.
    smoothing (true): average Q_t with Q_{t+1}.
    buffer_groups (2): groups kept to fit the hindsight model.
    hindsight_l2 (1.0): L2 penalty of the hindsight model.
    hindsight_rows (1500): at most this many rows (the most recent) per fit
        (``experiments/update_cost.py``: non-inferior to 3,000, and cheaper).
    hindsight_iters (30): L-BFGS iterations per refit (warm-started from the last fit).
    groups (1), minibatch (64; GRPO's default is 0): groups per update, collected at
        once, and stable-baselines3's minibatch schedule for the update; chosen by the
        search.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.regression import MultinomialLogistic
from clinbench.agents.core.rollout import Trajectory
from clinbench.agents.grpo import GRPOAgent
from clinbench.agents.registry import register_agent


@register_agent
class HCAPOAgent(GRPOAgent):
    name = "hcapo"
    description = "GRPO + hindsight step-level credit from a learned hindsight action model"
    experience = ("buffer",)

    def __init__(
        self,
        context: AgentContext,
        omega: float = 0.25,
        gamma: float = 0.986,
        temperature: float = 5.0,
        rho_clip: tuple[float, float] = (0.8, 1.2),
        smoothing: bool = True,
        buffer_groups: int = 2,
        hindsight_l2: float = 1.0,
        hindsight_rows: int = 1500,
        hindsight_iters: int = 30,
        groups: int = 1,
        minibatch: int = 64,
        **config: Any,
    ):
        super().__init__(context, groups=groups, minibatch=minibatch, **config)
        self.omega, self.gamma, self.temperature = omega, gamma, temperature
        self.rho_clip, self.smoothing = tuple(rho_clip), smoothing
        self.hindsight_rows = hindsight_rows
        self.buffer: deque[tuple[list[Trajectory], np.ndarray]] = deque(maxlen=buffer_groups)
        self.hindsight = MultinomialLogistic(
            self.macros.n, alpha=hindsight_l2, max_iter=hindsight_iters
        )

    def step_advantages(self, group: list[Trajectory]) -> list[np.ndarray]:
        macro = super().step_advantages(group)
        if self.omega == 0.0:
            return macro
        scores = np.array([t.score for t in group])
        success = (scores > scores.mean()).astype(float)
        self.buffer.append((group, success))
        self._fit_hindsight()
        micro = self.micro_advantages(group, success)
        out = []
        for a_macro, a_micro, ok in zip(macro, micro, success, strict=True):
            if ok:
                a_micro = np.maximum(a_micro, 0.0)
            out.append(a_macro + self.omega * a_micro)
        return out

    def _inputs(self, traj: Trajectory, z: float) -> np.ndarray:
        x = self.std(traj.x)
        return np.hstack([x, np.full((len(traj), 1), z)])

    def _fit_hindsight(self) -> None:
        rows, labels = [], []
        for group, success in self.buffer:
            for traj, z in zip(group, success, strict=True):
                rows.append(self._inputs(traj, z))
                labels.append(traj.actions)
        x, y = (
            np.concatenate(rows)[-self.hindsight_rows :],
            np.concatenate(labels)[-self.hindsight_rows :],
        )
        self.hindsight.fit(x, y)

    def hindsight_prob(self, traj: Trajectory, z: float) -> np.ndarray:
        """pi_hind(a_t): h(a_t | s_t, z) over the valid actions, to the power 1/temperature."""
        p = self.hindsight.predict_proba(self._inputs(traj, z)) * traj.mask
        p /= p.sum(axis=1, keepdims=True)
        return p[np.arange(len(traj)), traj.actions] ** (1.0 / self.temperature)

    def micro_advantages(self, group: list[Trajectory], success: np.ndarray) -> list[np.ndarray]:
        qs = []
        for traj, z in zip(group, success, strict=True):
            ph = self.hindsight_prob(traj, z)
            rho = np.clip(ph / ph.mean(), *self.rho_clip)
            steps_left = len(traj) - 1 - np.arange(len(traj))
            q = rho * self.gamma**steps_left * traj.score
            if self.smoothing and q.size > 1:
                q[:-1] = 0.5 * q[:-1] + 0.5 * q[1:]
            qs.append(q)
        flat = np.concatenate(qs)
        mean, sd = flat.mean(), flat.std()
        if sd < 1e-12:
            return [np.zeros_like(q) for q in qs]
        return [(q - mean) / sd for q in qs]
