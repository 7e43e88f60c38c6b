"""``fixed_design`` on trial_design: the non-adaptive design adaptive ones are compared with.

The planned sample with equal allocation over all four arms, in the fewest cohorts the
100-patient cap allows, and one decision at the end: claim the crossing dose with the
largest z, else stop for futility. It never stops early, drops an arm or changes the
inclusion criteria. (Every step is a look, so the first cohorts spend a little alpha:
under O'Brien-Fleming-type spending almost none.)

Hyper-parameters: none.
"""

from __future__ import annotations

from clinbench.agents.base import Agent
from clinbench.agents.registry import register_agent
from clinbench.env.trial_design.actions import MAX_COHORT, TrialAction
from clinbench.env.trial_design.observation import Observation


@register_agent
class FixedDesign(Agent):
    name = "fixed_design"
    description = "one analysis at the planned sample, equal allocation (the non-adaptive design)"
    envs = ("trial_design",)

    def act(self, obs: Observation) -> TrialAction:
        planned = self.env_spec.params.planned_patients
        enrolled = sum(obs.n)
        if obs.final_analysis or enrolled >= planned:
            arm = self.macros.claim_arm(obs)
            if arm is not None:
                return TrialAction(stop_for_success=True, success_arm=arm)
            return TrialAction(stop_for_futility=True)
        looks_needed = -(-(planned - enrolled) // MAX_COHORT)
        share = (planned - enrolled) / looks_needed / planned
        n = self.macros.cohort_size(obs, share, obs.strictness)
        if n == 0:
            return TrialAction(stop_for_futility=True)
        return TrialAction(n_next_cohort=n)
