"""Learners whose policy rises and falls (checkpoint-selection tests).

Their "training" walks through ``LEVELS``, one curve point each, the first before any
training step (the untrained policy): at level 1 they act as the heuristic, at level 0
they take the first valid macro-action. Every episode reports the level that played
it, so a test sees which checkpoint the evaluation worlds met.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents import Agent
from clinbench.agents.learner import CurvePoint
from clinbench.agents.registry import make_agent


class DriftingAgent(Agent):
    name = "drifting"
    description = "untrained, then the heuristic, then untrained again"
    learning = True
    LEVELS = (0, 1, 0)

    def __init__(self, context: Any, **config: Any):
        super().__init__(context, **config)
        self.level = 0
        self.expert = make_agent("heuristic", context)

    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self.expert.reset(seed)

    def act(self, obs: Any) -> Any:
        if self.level:
            return self.expert.act(obs)
        return self.macros.to_action(int(np.flatnonzero(self.macros.mask(obs))[0]), obs)

    def episode_stats(self) -> dict[str, float]:
        return {"level": float(self.level)}

    def train(
        self, make_env: Any, steps: int, rng: Any, evaluate: Any = None, curve_points: int = 21
    ) -> list:
        env, curve = make_env(), []
        for i, level in enumerate(self.LEVELS):
            self.level = level
            if i:  # one training step per "update"; the first point is untrained
                obs, _ = env.reset(seed=int(rng.integers(2**31, 2**32)))
                env.step(self.act(obs))
            score = float(evaluate(self)) if evaluate is not None else 0.0
            curve.append(CurvePoint(i, env.budget.used, env.budget.episodes, score))
        return curve


class FallingAgent(DriftingAgent):
    description = "the heuristic untrained, then the first valid macro"
    LEVELS = (1, 0, 0)
