"""The recruitment macro-actions: one shared list for learning agents and Gymnasium.

Each macro-action is a day's action with its arguments filled in from the
observation by a fixed, documented rule, and has a validity mask computed from the
observation alone. Masked-out macro-actions are never sampled by clinbench agents.

| macro | action | argument rule | valid when |
|---|---|---|---|
| ``screen_best`` | screen_patient | best pre-screen: eligibility - 0.5 x dropout risk | arrivals waiting, no hold, affordable |
| ``recontact_urgent`` | recontact | the eligible patient about to cool off (longest since contact within the cool-off), else the least cooled | candidates, affordable |
| ``allocate_urgent`` | allocate_to_site | consented patient with the fewest consent days left, to the open site with the best optimistic conversion estimate | consented patients, an open site with capacity, affordable |
| ``increase_outreach`` / ``relax_criteria`` / ``tighten_criteria`` | adjust_strategy | - | affordable (criteria: not already at that level; outreach again restarts its days) |
| ``focus_site_<X>`` / ``negotiate_site_<X>`` | adjust_strategy | site X | affordable (focus: X not focused) |
| ``plan`` | plan_next_phase | phase from the funnel | always |
| ``summarize`` | summarize_and_index | key ``day-<t>`` | always |
| ``retrieve`` | retrieve_relevant_history | the most recent key | memory not empty |
| ``stop`` | stop_recruitment | - | always |
"""

from __future__ import annotations

import numpy as np

from clinbench.env.base import MacroSpace
from clinbench.env.recruitment.actions import GLOBAL_STRATEGIES, Action, ActionType
from clinbench.env.recruitment.observation import Observation, SiteView
from clinbench.env.recruitment.tasks import TaskParams
from clinbench.env.recruitment.world import patient_id, site_id

#: Pseudo-attempts at the site's reported conversion in the optimistic estimate.
PRIOR_ATTEMPTS = 2.0


def site_estimate(site: SiteView, wait_penalty: float) -> float:
    """Optimistic success estimate of an allocation at ``site``.

    Observed recent successes / attempts with a prior of ``PRIOR_ATTEMPTS`` at the
    site's reported conversion, times the wait discount of the model.
    """
    conv = (site.recent_successes + PRIOR_ATTEMPTS * site.reported_conversion) / (
        site.recent_attempts + PRIOR_ATTEMPTS
    )
    return conv / (1.0 + wait_penalty * site.wait_days)


def best_open_site(obs: Observation, wait_penalty: float) -> int:
    """Index of the open site (capacity, no audit) with the best estimate, else -1."""
    best, best_v = -1, -1.0
    for s, site in enumerate(obs.sites):
        if site.capacity_remaining > 0 and not site.under_audit:
            v = site_estimate(site, wait_penalty)
            if v > best_v:
                best, best_v = s, v
    return best


def best_screen_candidate(obs: Observation) -> int:
    """Patient index with the best pre-screen among arrivals, else -1."""
    idx = obs.available_idx
    if idx.size == 0:
        return -1
    w = obs.visible
    value = w.prescreen_eligibility[idx] - 0.5 * w.prescreen_dropout[idx]
    return int(idx[int(np.argmax(value))])


def urgent_recontact_candidate(obs: Observation, cooloff_days: int) -> int:
    """The eligible patient about to cool off, else the least cooled one, else -1."""
    idx = obs.recontact_idx
    if idx.size == 0:
        return -1
    since = obs.days_since_contact(idx)
    warm = since <= cooloff_days
    if warm.any():
        return int(idx[warm][int(np.argmax(since[warm]))])
    return int(idx[int(np.argmin(since))])


def urgent_allocation_candidate(obs: Observation) -> int:
    """The consented patient with the fewest consent days left, else -1."""
    idx = obs.allocation_idx
    if idx.size == 0:
        return -1
    return int(idx[int(np.argmin(obs.consent_days_left(idx)))])


class RecruitmentMacros(MacroSpace[Observation, Action]):
    """Macro-actions and features for one recruitment task (sizes depend on its sites)."""

    def __init__(self, params: TaskParams):
        self.params = params
        letters = [site_id(s)[-1] for s in range(params.n_sites)]
        names = ["screen_best", "recontact_urgent", "allocate_urgent", *GLOBAL_STRATEGIES]
        names += [f"focus_site_{x}" for x in letters]
        names += [f"negotiate_site_{x}" for x in letters]
        names += ["plan", "summarize", "retrieve", "stop"]
        self.names = tuple(names)
        self.index = {name: k for k, name in enumerate(self.names)}
        self.descriptions = tuple(_describe(n) for n in self.names)
        self._focus0 = self.index[f"focus_site_{letters[0]}"]
        self._neg0 = self.index[f"negotiate_site_{letters[0]}"]
        feats = [
            "day_fraction",
            "budget_fraction",
            "enrolled_fraction",
            "available_scaled",
            "recontact_scaled",
            "consented_scaled",
            "min_consent_days_left",
            "best_prescreen",
            "hold_active",
            "criteria_level",
            "outreach_active",
            "uncertainty",
            "dropout_rate_7d",
            "screening_cost_ratio",
            "memory_used",
            "memory_retrieved",
            "milestone_fraction",
            "pending_negotiations",
        ]
        for x in letters:
            feats += [
                f"site_{x}_capacity",
                f"site_{x}_estimate",
                f"site_{x}_recent_attempts",
                f"site_{x}_wait",
                f"site_{x}_open",
                f"site_{x}_retrieved_conversion",
            ]
        self.feature_names = tuple(feats)

    # ------------------------------------------------------------------ mask
    def mask(self, obs: Observation) -> np.ndarray:
        c, budget = obs.costs, obs.budget_remaining
        m = np.zeros(self.n, dtype=bool)
        m[0] = obs.funnel.available > 0 and not obs.hold_active and budget >= c.screen
        m[1] = obs.funnel.eligible > 0 and budget >= c.recontact
        m[2] = (
            obs.funnel.consented > 0
            and budget >= c.enrol
            and any(s.capacity_remaining > 0 and not s.under_audit for s in obs.sites)
        )
        strategy_ok = budget >= c.strategy
        m[3] = strategy_ok
        m[4] = strategy_ok and obs.criteria != "relaxed"
        m[5] = strategy_ok and obs.criteria != "tight"
        for s, site in enumerate(obs.sites):
            m[self._focus0 + s] = strategy_ok and not site.focused
            m[self._neg0 + s] = budget >= c.negotiate
        m[-4] = True  # plan
        m[-3] = True  # summarize
        m[-2] = bool(obs.indexed_memory_summary)
        m[-1] = True  # stop
        return m

    # ------------------------------------------------------------------ features
    def features(self, obs: Observation) -> np.ndarray:
        p = self.params
        f = obs.funnel
        alloc = obs.allocation_idx
        min_left = (
            float(obs.consent_days_left(alloc).min()) / p.consent_window if alloc.size else 1.0
        )
        best = best_screen_candidate(obs)
        retrieved = obs.retrieved_memory_context[0] if obs.retrieved_memory_context else None
        reached = sum(1 for _, d in obs.milestones if d is not None)
        v = [
            obs.timestamp / p.horizon,
            obs.budget_remaining / obs.initial_budget,
            obs.enrolled_so_far / obs.target_enrollment,
            f.available / 50.0,
            f.eligible / 20.0,
            f.consented / 5.0,
            min_left,
            float(obs.visible.prescreen_eligibility[best]) if best >= 0 else 0.0,
            float(obs.hold_active),
            {"tight": 0.0, "normal": 0.5, "relaxed": 1.0}[obs.criteria],
            float(obs.outreach_active),
            obs.uncertainty_level,
            obs.dropout_rate_7d,
            obs.costs.screen / p.screen_cost - 1.0,
            len(obs.indexed_memory_summary) / obs.memory_capacity,
            float(retrieved is not None),
            reached / 4.0,
            obs.pending_negotiations / 3.0,
        ]
        for s, site in enumerate(obs.sites):
            att = retrieved.site_attempts[s] if retrieved is not None else 0
            v += [
                site.capacity_remaining / max(site.capacity_total, 1),
                site_estimate(site, p.wait_penalty),
                site.recent_attempts / 10.0,
                site.wait_days / 15.0,
                float(site.capacity_remaining > 0 and not site.under_audit),
                retrieved.site_successes[s] / att if att else 0.0,
            ]
        return np.clip(np.asarray(v, dtype=np.float64), 0.0, 1.0)

    # ------------------------------------------------------------------ actions
    def index_of(self, action: Action) -> int:
        """The macro-action a concrete action corresponds to (for imitation labels).

        Only the action's type and strategy are read: the heuristic's arguments are the
        macro rules' own, so its actions map onto macros one to one.
        """
        kind = action.action_type
        if kind is ActionType.ADJUST_STRATEGY:
            return self.index[action.strategy_change]
        return self.index[_MACRO_OF_TYPE[kind]]

    def to_action(self, k: int, obs: Observation) -> Action:
        name = self.names[k]
        p = self.params
        if name == "screen_best":
            i = best_screen_candidate(obs)
            return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i) if i >= 0 else None)
        if name == "recontact_urgent":
            i = urgent_recontact_candidate(obs, p.cooloff_days)
            return Action(ActionType.RECONTACT, patient_id=patient_id(i) if i >= 0 else None)
        if name == "allocate_urgent":
            i = urgent_allocation_candidate(obs)
            s = best_open_site(obs, p.wait_penalty)
            return Action(
                ActionType.ALLOCATE_TO_SITE,
                patient_id=patient_id(i) if i >= 0 else None,
                site_id=site_id(s) if s >= 0 else None,
            )
        if name == "plan":
            return Action(
                ActionType.PLAN_NEXT_PHASE,
                target_phase=phase_for(obs),
                plan_summary=f"{obs.enrolled_so_far}/{obs.target_enrollment} enrolled",
            )
        if name == "summarize":
            return Action(
                ActionType.SUMMARIZE_AND_INDEX,
                memory_key=f"day-{obs.timestamp}",
                memory_payload=f"sites funnel day {obs.timestamp}",
            )
        if name == "retrieve":
            keys = obs.indexed_memory_summary
            return Action(
                ActionType.RETRIEVE_RELEVANT_HISTORY, memory_query=keys[-1][0] if keys else None
            )
        if name == "stop":
            return Action(ActionType.STOP_RECRUITMENT)
        return Action(ActionType.ADJUST_STRATEGY, strategy_change=name)


_MACRO_OF_TYPE = {
    ActionType.SCREEN_PATIENT: "screen_best",
    ActionType.RECONTACT: "recontact_urgent",
    ActionType.ALLOCATE_TO_SITE: "allocate_urgent",
    ActionType.PLAN_NEXT_PHASE: "plan",
    ActionType.SUMMARIZE_AND_INDEX: "summarize",
    ActionType.RETRIEVE_RELEVANT_HISTORY: "retrieve",
    ActionType.STOP_RECRUITMENT: "stop",
}


def phase_for(obs: Observation) -> str:
    """The phase a planner would name now, from the funnel."""
    if obs.enrolled_so_far >= obs.target_enrollment:
        return "wrap_up"
    if obs.funnel.consented:
        return "allocation"
    if obs.funnel.eligible:
        return "conversion"
    return "screening"


def _describe(name: str) -> str:
    fixed = {
        "screen_best": "screen the arrival with the best pre-screen",
        "recontact_urgent": "recontact the eligible patient about to cool off",
        "allocate_urgent": "allocate the most urgent consented patient to the best open site",
        "increase_outreach": "adjust_strategy increase_outreach",
        "relax_criteria": "adjust_strategy relax_criteria",
        "tighten_criteria": "adjust_strategy tighten_criteria",
        "plan": "plan_next_phase (free, takes the day)",
        "summarize": "summarize_and_index the current state under day-<t>",
        "retrieve": "retrieve_relevant_history of the most recent key",
        "stop": "stop_recruitment and fast-forward to the deadline",
    }
    return fixed.get(name, f"adjust_strategy {name}")
