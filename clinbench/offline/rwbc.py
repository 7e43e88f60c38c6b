"""``rwbc``: reward-weighted behavioural cloning.

Peters and Schaal, "Reinforcement Learning by Reward-Weighted Regression for
Operational Space Control" (ICML 2007); the best method of "Learning Clinical-Trial
Strategy: Offline Policy Training for Decision Agents" (arXiv 2608.03606). Each logged
action is cloned with weight ``exp(beta * z)``, where ``z`` is its standardised return
(the return-to-go from that decision, or the episode's return), so actions that led to
good outcomes count more; weights are capped at ``max_weight``.

Hyper-parameters (``conf/agent/rwbc.yaml``; the shared ones in ``clinbench/offline/base.py``):
    beta (1.0): inverse temperature of the weights; 0 is exactly ``bc`` (ablation).
    target ("return_to_go"): what is weighted, "return_to_go" or "episode_return".
    max_weight (20.0): cap on a weight (a few lucky episodes cannot take over).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.offline.base import OfflineAgent
from clinbench.offline.data import OfflineData

TARGETS = ("return_to_go", "episode_return")


def standardised(values: np.ndarray) -> np.ndarray:
    """(v - mean) / sd, 0 where every value is the same."""
    sd = values.std()
    return np.zeros_like(values) if sd < 1e-12 else (values - values.mean()) / sd


def reward_weights(z: np.ndarray, beta: float, max_weight: float) -> np.ndarray:
    """``min(exp(beta z), max_weight)``: the weight of each logged action."""
    return np.minimum(np.exp(beta * z), max_weight)


class RWBCAgent(OfflineAgent):
    name = "rwbc"
    description = "reward-weighted behavioural cloning: actions weighted by exp(beta * return)"

    def __init__(
        self,
        context: AgentContext,
        beta: float = 1.0,
        target: str = "return_to_go",
        max_weight: float = 20.0,
        **config: Any,
    ):
        super().__init__(context, **config)
        if target not in TARGETS:
            raise ValueError(f"rwbc target {target!r}; valid: {', '.join(TARGETS)}")
        if beta < 0 or max_weight <= 0:
            raise ValueError("rwbc needs beta >= 0 and max_weight > 0")
        self.beta, self.target, self.max_weight = beta, target, max_weight

    def learn(
        self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng: np.random.Generator
    ) -> None:
        values = (
            data.returns_to_go
            if self.target == "return_to_go"
            else data.episode_returns[data.episode]
        )
        weights = reward_weights(standardised(values), self.beta, self.max_weight)
        self.fit_policy(x, data.masks, data.actions, weights)
