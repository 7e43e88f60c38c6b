"""The recruitment macro-actions: one shared list for learning agents and Gymnasium.

Each macro-action is a day's action with its arguments filled in from the
observation by a fixed, documented rule, and has a validity mask computed from the
observation alone. Masked-out macro-actions are never sampled by clinbench agents.

Macro -> action: argument rule; valid when.

- ``screen_best`` -> screen_patient: the best pre-screen (eligibility - 0.5 x dropout
  risk); arrivals waiting, no hold, affordable.
- ``recontact_urgent`` -> recontact: the eligible patient about to cool off (longest
  since contact within the cool-off), else the least cooled; candidates, affordable.
- ``allocate_urgent`` -> allocate_to_site: the consented patient with the fewest consent
  days left, to the open site with the best optimistic conversion estimate (times
  ``other_site_conversion`` for a site other than the home site); consented patients,
  an opened site with capacity and no audit, affordable.
- ``increase_outreach`` -> adjust_strategy; affordable (again restarts its days).
- ``relax_criteria`` / ``tighten_criteria`` -> adjust_strategy (a protocol amendment);
  fee affordable, none under review, amendments left, not already at that level.
- ``focus_site_<X>`` / ``negotiate_site_<X>`` -> adjust_strategy at site X; affordable
  (focus: X not focused).
- ``plan`` -> plan_next_phase, phase from the funnel; always.
- ``summarize`` -> summarize_and_index under key ``day-<t>``; always.
- ``retrieve`` -> retrieve_relevant_history of the most recent key; memory not empty.
- ``stop`` -> stop_recruitment; always.
"""

from __future__ import annotations

import numpy as np

from clinbench.env.base import MacroSpace
from clinbench.env.recruitment.actions import GLOBAL_STRATEGIES, Action, ActionType
from clinbench.env.recruitment.observation import AVAILABLE, ROW_STATE, Observation, SiteView
from clinbench.env.recruitment.tasks import TaskParams
from clinbench.env.recruitment.world import patient_id, site_id

#: Pseudo-attempts at the site's reported conversion in the optimistic estimate.
PRIOR_ATTEMPTS = 2.0
_CRITERIA_FEATURE = {"tight": 0.0, "normal": 0.5, "relaxed": 1.0}
#: The ufunc behind ``np.clip`` (same values, without the wrapper's cost on tiny arrays).
_clip = np._core.umath.clip


def site_estimate(site: SiteView, wait_penalty: float) -> float:
    """Optimistic success estimate of an allocation at ``site``.

    Observed recent successes / attempts with a prior of ``PRIOR_ATTEMPTS`` at the
    site's reported conversion, times the wait discount of the model.
    """
    conv = (site.recent_successes + PRIOR_ATTEMPTS * site.reported_conversion) / (
        site.recent_attempts + PRIOR_ATTEMPTS
    )
    return conv / (1.0 + wait_penalty * site.wait_days)


def is_open(site: SiteView) -> bool:
    """A site takes allocations today: opened, a slot free, not under audit."""
    return site.active and site.capacity_remaining > 0 and not site.under_audit


def best_open_site(obs: Observation, params: TaskParams, patient: int = -1) -> int:
    """Index of the open site with the best estimate for ``patient``, else -1.

    Sites other than the patient's home site convert at ``other_site_conversion``
    times their rate (a stated penalty of the task)."""
    home = obs.home_site(patient) if patient >= 0 else -1
    other, pen = params.other_site_conversion, params.wait_penalty
    best, best_v = -1, -1.0
    for s, site in enumerate(obs.sites):
        if is_open(site):
            v = site_estimate(site, pen) * (1.0 if s == home else other)
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
        self._n_head = 18
        self._buf = np.empty(len(feats))
        self._buf_sp: tuple | None = None
        self._best_obs: Observation | None = None
        self._best = -1
        self._value_of = None
        self._value = np.empty(0)
        self._order: np.ndarray | None = None
        self._sp_sites = self._sp_retrieved = None
        self._site_cache: dict[SiteView, tuple[float, ...]] = {}
        self._sp: tuple[list[float], list[bool], bool] = ([], [], False)
        # Actions that take nothing from the observation are immutable: build them once.
        self._fixed_actions: dict[int, Action] = {
            k: Action(ActionType.ADJUST_STRATEGY, strategy_change=name)
            for k, name in enumerate(self.names)
            if name not in _MACRO_OF_TYPE.values()
        }
        self._fixed_actions[self.index["stop"]] = Action(ActionType.STOP_RECRUITMENT)

    # ------------------------------------------------------------------ shared per-observation work
    def _best_screen(self, obs: Observation) -> int:
        """``best_screen_candidate(obs)``, computed once per observation.

        ``features`` and ``to_action`` both need it for the same observation. Per world
        the pool is ordered best pre-screen first (the same elementwise value; a stable
        sort, so ties keep index order), and the first arrival in that order is the
        first maximum over the arrivals: the same patient as the argmax, cheaper.
        """
        if obs is self._best_obs:
            return self._best
        if obs.funnel.available == 0:
            best = -1
        else:
            w = obs.visible
            if w is not self._value_of:
                value = w.prescreen_eligibility - 0.5 * w.prescreen_dropout
                self._value = value
                # NaN sorts last but argmax picks it first: keep the argmax then.
                self._order = None if np.isnan(value).any() else np.argsort(-value, kind="stable")
                self._value_of = w
            order = self._order
            if order is None:
                best = int(
                    np.where(obs.patients[ROW_STATE] == AVAILABLE, self._value, -np.inf).argmax()
                )
            else:
                best = int(order[(obs.patients[ROW_STATE].take(order) == AVAILABLE).argmax()])
        self._best_obs, self._best = obs, best
        return best

    def _site_features(self, site: SiteView) -> tuple[float, ...]:
        """The first five features of a site (``site_estimate`` inlined).

        Cached by the site's value: equal views give equal numbers (a ``-0.0`` wait, the
        only value equal to another with other bits, becomes ``0.0`` once clipped).
        """
        _, wait, cap, cap_total, att_r, succ_r, _, _, rep, audit, _, active = site
        conv = (succ_r + PRIOR_ATTEMPTS * rep) / (att_r + PRIOR_ATTEMPTS)
        return (
            cap / max(cap_total, 1),
            conv / (1.0 + self.params.wait_penalty * wait),
            att_r / 10.0,
            wait / 15.0,
            float(active and cap > 0 and not audit),
        )

    def _site_part(self, obs: Observation) -> tuple[list[float], list[bool], bool]:
        """Per-site features, "not focused" flags and "any site open", cached per sites view.

        The simulator hands out the same immutable ``sites`` tuple until a site changes,
        and memory records are immutable too, so identity is a safe cache key.
        """
        sites = obs.sites
        retrieved = obs.retrieved_memory_context[0] if obs.retrieved_memory_context else None
        if sites is self._sp_sites and retrieved is self._sp_retrieved:
            return self._sp
        cache = self._site_cache
        if len(cache) > 4096:  # bounded: one task sees few distinct site states per world
            cache.clear()
        v: list[float] = []
        for s, site in enumerate(sites):
            part = cache.get(site)
            if part is None:
                part = cache[site] = self._site_features(site)
            v += part
            if retrieved is not None:
                att = retrieved.site_attempts[s]
                v.append(retrieved.site_successes[s] / att if att else 0.0)
            else:
                v.append(0.0)
        not_focused = [not site.focused for site in sites]
        any_open = any(is_open(site) for site in sites)
        self._sp_sites, self._sp_retrieved = sites, retrieved
        self._sp = (v, not_focused, any_open)
        return self._sp

    # ------------------------------------------------------------------ mask
    def mask_row(self, obs: Observation) -> list[bool]:
        """The mask as a list of bools (what ``mask`` and the batched env fill arrays from)."""
        c, budget = obs.costs, obs.budget_remaining
        f = obs.funnel
        strategy_ok = budget >= c.strategy
        neg_ok = budget >= c.negotiate
        amend_ok = (
            budget >= c.amendment and obs.amendments_left > 0 and obs.pending_amendment is None
        )
        _, not_focused, any_open = self._site_part(obs)
        row = [
            f.available > 0 and not obs.hold_active and budget >= c.screen,
            f.eligible > 0 and budget >= c.recontact,
            f.consented > 0 and budget >= c.enrol and any_open,
            strategy_ok,
            amend_ok and obs.criteria != "relaxed",
            amend_ok and obs.criteria != "tight",
        ]
        row += not_focused if strategy_ok else [False] * len(not_focused)
        row += [neg_ok] * len(not_focused)
        row += [True, True, bool(obs.indexed_memory_summary), True]  # plan summarize retrieve stop
        return row

    def mask(self, obs: Observation) -> np.ndarray:
        return np.array(self.mask_row(obs), dtype=bool)

    # ------------------------------------------------------------------ features
    def _feature_head(self, obs: Observation) -> list[float]:
        """The features before the per-site ones, unclipped."""
        p = self.params
        f = obs.funnel
        if f.consented:  # the funnel counts the patients in each state
            alloc = obs.allocation_idx
            min_left = float(obs.consent_days_left(alloc).min()) / p.consent_window
        else:
            min_left = 1.0
        best = self._best_screen(obs)
        return [
            obs.timestamp / p.horizon,
            obs.budget_remaining / obs.initial_budget,
            obs.enrolled_so_far / obs.target_enrollment,
            f.available / 50.0,
            f.eligible / 20.0,
            f.consented / 5.0,
            min_left,
            float(obs.visible.prescreen_eligibility[best]) if best >= 0 else 0.0,
            float(obs.hold_active),
            _CRITERIA_FEATURE[obs.criteria],
            float(obs.outreach_active),
            obs.uncertainty_level,
            obs.dropout_rate_7d,
            obs.costs.screen / p.screen_cost - 1.0,
            len(obs.indexed_memory_summary) / obs.memory_capacity,
            float(bool(obs.retrieved_memory_context)),
            sum(1 for _, d in obs.milestones if d is not None) / 4.0,
            obs.pending_negotiations / 3.0,
        ]

    def feature_row(self, obs: Observation) -> list[float]:
        """The features before clipping to [0, 1], as a list (see ``mask_row``)."""
        return self._feature_head(obs) + self._site_part(obs)[0]

    def features(
        self, obs: Observation, out: np.ndarray | None = None, dtype: type | None = None
    ) -> np.ndarray:
        """The clipped features, float64; ``out`` or ``dtype`` (e.g. float32) get them cast."""
        # The float64 row lives in a reused buffer whose site part is rewritten only when
        # the sites change; it is clipped in place (clipping again changes nothing) and
        # cast on the way out, like clipping in float64 and then ``astype``.
        buf = self._buf
        buf[: self._n_head] = self._feature_head(obs)
        sp = self._site_part(obs)
        if sp is not self._buf_sp:
            buf[self._n_head :] = sp[0]
            self._buf_sp = sp
        _clip(buf, 0.0, 1.0, out=buf)
        if out is not None:
            out[...] = buf
            return out
        return buf.astype(np.float64 if dtype is None else dtype)

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
        fixed = self._fixed_actions.get(k)
        if fixed is not None:
            return fixed
        name = self.names[k]
        p = self.params
        if name == "screen_best":
            i = self._best_screen(obs)
            return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i) if i >= 0 else None)
        if name == "recontact_urgent":
            i = urgent_recontact_candidate(obs, p.cooloff_days)
            return Action(ActionType.RECONTACT, patient_id=patient_id(i) if i >= 0 else None)
        if name == "allocate_urgent":
            i = urgent_allocation_candidate(obs)
            s = best_open_site(obs, p, i)
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
