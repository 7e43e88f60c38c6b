"""A learner that ignores its budget and keeps stepping (budget-enforcement tests)."""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.base import Agent


class Overspender(Agent):
    name = "overspender"
    description = "steps its training environment until something stops it"
    learning = True

    def train(
        self, make_env: Any, steps: int, rng: Any, evaluate: Any = None, curve_points: int = 21
    ) -> list:
        env = make_env()
        while True:  # never looks at the budget; a second env shares it
            obs, _ = env.reset(seed=int(rng.integers(2**31, 2**32)))
            done = False
            while not done:
                obs, _, done, _, _ = env.step(self.act(obs))
            env = make_env()

    def act(self, obs: Any) -> Any:
        return self.macros.to_action(int(np.flatnonzero(self.macros.mask(obs))[0]), obs)
