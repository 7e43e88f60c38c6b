"""``heuristic`` on trial_design: the classical group-sequential design.

What a trial statistician would run: equal allocation over the active arms, fixed
cohorts that reach the planned sample in ``looks`` analyses, a success claim as soon as
a dose crosses its boundary (the crossing dose with the largest z among those not
likely unsafe), futility by predictive probability, and the posterior safety rule:
drop a dose the posterior says is probably unsafe. It never adapts allocation or
strictness.

Hyper-parameters:
    looks (int, default 4): analyses the planned sample is split over.
    futility_pp (float, default 0.10): stop for futility once every active dose's
        predictive probability of success is below this (from the second look on).
    drop_toxic (float, default 0.8): drop a dose whose P(AE rate > threshold | data)
        exceeds this (with at least the task's safety_min_n patients on it).
"""

from __future__ import annotations

from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import register_agent
from clinbench.env.trial_design.actions import TrialAction
from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.tasks import DOSE_ARMS


@register_agent
class GroupSequentialHeuristic(Agent):
    name = "heuristic"
    description = "group-sequential design: equal allocation, fixed cohorts, claim at the boundary"
    envs = ("trial_design",)

    def __init__(
        self,
        context: AgentContext,
        looks: int = 4,
        futility_pp: float = 0.10,
        drop_toxic: float = 0.8,
        **config: Any,
    ):
        super().__init__(context, **config)
        if looks < 1:
            raise ValueError(f"looks must be at least 1, got {looks}")
        self.looks, self.futility_pp, self.drop_toxic = looks, futility_pp, drop_toxic
        self.params = context.spec.params

    def claim(self, obs: Observation) -> str | None:
        """The crossing dose with the largest z among those not likely unsafe."""
        best = None
        for j, arm in enumerate(DOSE_ARMS):
            safe = obs.prob_toxic[j + 1] < 0.5
            if obs.crossed[j] and safe and (best is None or obs.z[j] > obs.z[best]):
                best = j
        return None if best is None else DOSE_ARMS[best]

    def toxic_dose(self, obs: Observation) -> str | None:
        """An active dose the safety posterior says to drop (the most toxic one)."""
        worst, worst_p = None, self.drop_toxic
        for j, arm in enumerate(DOSE_ARMS):
            i = j + 1
            enough = obs.active[i] and obs.n[i] >= self.params.safety_min_n
            if enough and obs.prob_toxic[i] > worst_p:
                worst, worst_p = arm, obs.prob_toxic[i]
        return worst

    def cohort(self, obs: Observation) -> int:
        """The fixed cohort size, cut to what the budget, the duration and the cap allow."""
        return self.macros.cohort_size(obs, 1.0 / self.looks, obs.strictness)

    def act(self, obs: Observation) -> TrialAction:
        arm = self.claim(obs)
        if arm is not None:
            return TrialAction(stop_for_success=True, success_arm=arm)
        if obs.final_analysis:
            return TrialAction(stop_for_futility=True)
        active = [j for j in range(len(DOSE_ARMS)) if obs.active[j + 1]]
        if obs.look >= 2 and all(obs.predictive_probability[j] < self.futility_pp for j in active):
            return TrialAction(stop_for_futility=True)
        drop = self.toxic_dose(obs)
        if drop is not None and len(active) == 1:
            return TrialAction(stop_for_futility=True)  # the last dose is unsafe
        n = self.cohort(obs)
        if n == 0:
            return TrialAction(stop_for_futility=True)
        return TrialAction(n_next_cohort=n, drop_arm=drop)
