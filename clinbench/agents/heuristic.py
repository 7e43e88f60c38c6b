"""``heuristic``: the rule policy a trial operations lead would write.

Rules, first that applies wins:
1. Stop once the net count covers the target plus a dropout margin (patients still
   in follow-up can drop out).
2. Allocate the consented patient whose consent window closes first, to the open
   site with the best conversion estimate: the heuristic keeps its own tally of every
   allocation it made per site (as an operations lead keeps a spreadsheet) with a
   prior at the site's reported rate; other than the patient's home site, the estimate
   is discounted by the task's stated penalty.
3. Negotiate more capacity at the best site when the open slots cannot cover what is
   still needed.
4. Recontact an eligible patient whose follow-up is due (before willingness cools).
5. During a regulatory hold do not screen: plan (free) instead.
6. Screen the best pre-screened arrival, keeping enough budget to enrol.
7. Boost outreach when few arrivals are waiting; otherwise plan (wait).
8. Stop when nothing useful is affordable.

Hyper-parameters:
    stop_margin (float, default 0.1): over-recruit this fraction of the target before
        stopping, to cover dropouts until the deadline.
    recontact_max_days (int, default 6): recontact only patients contacted at most this
        many days ago (later their willingness has cooled).
    outreach_below (int, default 8): boost outreach when fewer arrivals than this wait.
    prior_attempts (float, default 4.0): weight, in allocations, of a site's reported
        conversion in its estimate.
"""

from __future__ import annotations

import math
from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import register_agent
from clinbench.env.recruitment.actions import Action, ActionType
from clinbench.env.recruitment.macro import (
    best_screen_candidate,
    is_open,
    phase_for,
    urgent_allocation_candidate,
    urgent_recontact_candidate,
)
from clinbench.env.recruitment.observation import (
    COMPLETED,
    DROPPED_OUT,
    ENROLLED,
    ROW_STATE,
    Observation,
)
from clinbench.env.recruitment.world import patient_id, site_id

#: States of a patient whose allocation succeeded (enrolled, perhaps since finished).
_ENROLLED = (ENROLLED, COMPLETED, DROPPED_OUT)


@register_agent
class HeuristicAgent(Agent):
    name = "heuristic"
    description = "readable operations rules: allocate, follow up, screen the best, stop at target"
    envs = ("recruitment",)

    def __init__(
        self,
        context: AgentContext,
        stop_margin: float = 0.1,
        recontact_max_days: int = 6,
        outreach_below: int = 8,
        prior_attempts: float = 4.0,
        **config: Any,
    ):
        super().__init__(context, **config)
        self.params = context.spec.params
        self.stop_margin = stop_margin
        self.recontact_max_days = recontact_max_days
        self.outreach_below = outreach_below
        self.prior_attempts = prior_attempts
        self._tally_reset()

    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self._tally_reset()

    def _tally_reset(self) -> None:
        n = self.params.n_sites
        self._attempts, self._successes = [0] * n, [0] * n
        self._last_allocation: tuple[int, int] | None = None

    def _tally(self, obs: Observation) -> None:
        """Book yesterday's allocation: did the patient enrol?"""
        if self._last_allocation is not None:
            i, s = self._last_allocation
            self._attempts[s] += 1
            self._successes[s] += int(obs.patients[ROW_STATE, i] in _ENROLLED)
            self._last_allocation = None

    # Choices a better-informed planner may override ------------------------------
    def pick_screen(self, obs: Observation) -> int:
        return best_screen_candidate(obs)

    def pick_site(self, obs: Observation, patient: int) -> int:
        p, prior = self.params, self.prior_attempts
        home = obs.home_site(patient)
        best, best_v = -1, -1.0
        for s, site in enumerate(obs.sites):
            if is_open(site):
                conv = (self._successes[s] + prior * site.reported_conversion) / (
                    self._attempts[s] + prior
                )
                v = conv / (1.0 + p.wait_penalty * site.wait_days)
                v *= 1.0 if s == home else p.other_site_conversion
                if v > best_v:
                    best, best_v = s, v
        return best

    def pick_recontact(self, obs: Observation) -> int:
        i = urgent_recontact_candidate(obs, self.params.cooloff_days)
        if i >= 0 and obs.days_since_contact(i) > self.recontact_max_days:
            return -1
        return i

    # The rules --------------------------------------------------------------------
    def act(self, obs: Observation) -> Action:
        self._tally(obs)
        p, c = self.params, obs.costs
        budget = obs.budget_remaining
        goal = math.ceil(p.target * (1.0 + self.stop_margin))
        need = goal - obs.enrolled_so_far
        if need <= 0:
            return Action(ActionType.STOP_RECRUITMENT)

        if obs.funnel.consented and budget >= c.enrol:
            i = urgent_allocation_candidate(obs)
            s = self.pick_site(obs, i)
            if s >= 0:
                self._last_allocation = (i, s)
                return Action(
                    ActionType.ALLOCATE_TO_SITE, patient_id=patient_id(i), site_id=site_id(s)
                )

        open_slots = sum(s.capacity_remaining for s in obs.sites if not s.under_audit)
        total_slots = sum(s.capacity_remaining for s in obs.sites)
        if (
            total_slots < need
            and obs.pending_negotiations == 0
            and budget >= c.negotiate + c.enrol * min(need, 5)
        ):
            best = max(range(len(obs.sites)), key=lambda s: obs.sites[s].reported_conversion)
            return Action(
                ActionType.ADJUST_STRATEGY, strategy_change=f"negotiate_site_{site_id(best)[-1]}"
            )

        if obs.funnel.eligible and budget >= c.recontact + c.enrol:
            i = self.pick_recontact(obs)
            if i >= 0:
                return Action(ActionType.RECONTACT, patient_id=patient_id(i))

        can_enrol_more = open_slots > 0 or obs.pending_negotiations > 0
        if not obs.hold_active and can_enrol_more and budget >= c.screen + c.enrol:
            i = self.pick_screen(obs)
            if i >= 0:
                return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i))

        pipeline = obs.funnel.consented + obs.funnel.eligible
        affordable = budget >= c.screen + c.enrol or (pipeline and budget >= c.recontact + c.enrol)
        if not affordable:
            return Action(ActionType.STOP_RECRUITMENT)
        if (
            obs.funnel.available < self.outreach_below
            and not obs.outreach_active
            and budget >= c.strategy + c.screen + c.enrol
            and obs.time_to_deadline_days > 30
        ):
            return Action(ActionType.ADJUST_STRATEGY, strategy_change="increase_outreach")
        return Action(ActionType.PLAN_NEXT_PHASE, target_phase=phase_for(obs), plan_summary="wait")
