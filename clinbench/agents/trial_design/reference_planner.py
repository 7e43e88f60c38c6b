"""The trial_design reference planner: the group-sequential rules with the truth in hand.

It reads the hidden scenario and dose curves (which no agent sees): when a dose is
truly effective and safe it puts every patient on control and the best such dose (half
each), enriched (strictness 1, which multiplies the effect by 1.5 at 1.5 times the cost
per patient), and claims it as soon as it crosses its boundary; otherwise it enrols small
equal cohorts until every dose is ruled out and stops for futility. It never exposes a
patient to an unsafe dose. It is the upper reference of the normalised score, not a
baseline, and is not registered as an agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.env.trial_design.actions import TrialAction
from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.score import ruled_out
from clinbench.env.trial_design.tasks import DOSE_ARMS
from clinbench.env.trial_design.world import World


class TrialReferencePlanner(Agent):
    """Oracle arm choice inside the classical design.

    The one policy outside the agent contract: the hidden world of the episode is handed
    to it explicitly, as ``world()`` (e.g. ``lambda: env.world``)."""

    name = "reference_planner"
    description = "the best effective and safe dose, read from the hidden world"
    envs = ("trial_design",)

    def __init__(
        self,
        context: AgentContext,
        world: Callable[[], World],
        cohort_share: float = 0.25,
        futility_share: float = 0.125,
        strictness: float = 1.0,
        **config: Any,
    ):
        super().__init__(context, **config)
        self._hidden = world
        self.cohort_share, self.futility_share = cohort_share, futility_share
        self.strictness = strictness
        self.params = context.spec.params

    def act(self, obs: Observation) -> TrialAction:
        w = self._hidden()
        good = w.good_arms
        if good.any():
            best = int(np.argmax(np.where(good, w.effect, -np.inf)))
            if obs.crossed[best]:
                return TrialAction(stop_for_success=True, success_arm=DOSE_ARMS[best])
            n = self.macros.cohort_size(obs, self.cohort_share, self.strictness)
            if obs.final_analysis or n == 0:
                return TrialAction(stop_for_futility=True)
            alloc = [0.5, 0.0, 0.0, 0.0]
            alloc[1 + best] = 0.5
            return TrialAction(
                n_next_cohort=n,
                inclusion_criteria_strictness=self.strictness,
                allocation_control=alloc[0],
                allocation_low=alloc[1],
                allocation_mid=alloc[2],
                allocation_high=alloc[3],
            )
        if obs.look > 0 and all(ruled_out(obs, self.params)):
            return TrialAction(stop_for_futility=True)
        n = self.macros.cohort_size(obs, self.futility_share, obs.strictness)
        if obs.final_analysis or n == 0:
            return TrialAction(stop_for_futility=True)
        return TrialAction(n_next_cohort=n)
