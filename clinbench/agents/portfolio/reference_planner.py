"""The portfolio reference planner: expected-value development with the truth in hand.

It reads the hidden program (true effects, toxicity, the regime change), which no agent
sees, and at each decision starts, best first, every next trial whose expected
discounted value is positive: the approval's value times the chance of passing every
remaining phase and the review under the outcome model, minus the expected costs, for
the best design (biomarker selection, combination or not). Trial luck it cannot see. It
is the upper reference of the normalised score, not a baseline, and is not registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.observation import IndicationView, Observation
from clinbench.env.portfolio.trials import TrialDesign
from clinbench.env.portfolio.value import best_path_value, pass_probability, path_value
from clinbench.env.portfolio.world import Program

__all__ = ["PortfolioReferencePlanner", "pass_probability", "path_value"]


class PortfolioReferencePlanner(Agent):
    """Expected-value choices from the hidden program, handed in as ``world()``."""

    name = "reference_planner"
    description = "positive expected-value trials, read from the hidden program"
    envs = ("portfolio",)

    def __init__(self, context: AgentContext, world: Callable[[], Program], **config: Any):
        super().__init__(context, **config)
        self._hidden = world

    def best_next(self, obs: Observation, i: IndicationView) -> tuple[float, TrialDesign] | None:
        phase = i.earned + 1
        if i.filed or phase > 3 or phase in i.tried:
            return None
        return best_path_value(self._hidden(), i.key, phase, obs.month)

    def act(self, obs: Observation) -> PortfolioAction:
        ranked = []
        for i in obs.indications:
            best = self.best_next(obs, i)
            if best is not None and best[0] > 0:
                ranked.append(best)
        ranked.sort(key=lambda o: -o[0])
        return PortfolioAction(trials=self.macros.fit(obs, [d for _, d in ranked]))
