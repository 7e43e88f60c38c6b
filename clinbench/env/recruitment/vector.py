"""N recruitment worlds in struct-of-arrays form: the batched core of the VectorEnv.

``gym.make_vec(id, N, vectorization_mode="vector_entry_point")`` steps this core
instead of N simulators (:mod:`clinbench.env.gym_vector`). It plays the macro-actions
of :mod:`clinbench.env.recruitment.macro` directly on per-world rows of shared arrays:

- per patient ``(N, pool)``: state, pre-screen value while available, last contact,
  recontacts left, consent deadline while consented,
  lapsed flag, arrival threshold, follow-up exit day and its kind, enrolling site;
- per site ``(N, sites)``: opened, capacity, cut, audit, wait, recent-window counts,
  cumulative counts; per world ``(N,)``: day, budget, net enrolled, multipliers.

What every world does each day (arrivals, follow-up exits, consent lapses, the window
of recent outcomes, features and masks) is one array operation over all N worlds.
What depends on luck or on one world's history (the handlers' draws from each world's
own outcome generator, events and the effects they switch on and off, amendments,
memory) runs per world, in the simulator's order, with the simulator's arithmetic.

Why a second implementation of the dynamics: the simulator builds a typed
observation, site views and an action object every day, which a batch of feature
vectors never needs, and the per-world Python around each step is what bounds a
vector of simulators. This core is checked against the simulator, not trusted: the
tests play N independent seeded simulators through the Gymnasium adapter beside it
(every task, random valid and invalid macro-actions, both autoreset modes, fixed
worlds) and require identical features, masks, rewards, flags and ``info``.
"""

from __future__ import annotations

import bisect
import math
from typing import Any, NamedTuple

import numpy as np
from gymnasium.utils import seeding

from clinbench.env.base import reset_arguments
from clinbench.env.recruitment.actions import ActionType, ErrorCode
from clinbench.env.recruitment.macro import _MACRO_OF_TYPE, PRIOR_ATTEMPTS, RecruitmentMacros
from clinbench.env.recruitment.observation import (
    AVAILABLE,
    COMPLETED,
    CONSENTED,
    DROPPED_OUT,
    ELIGIBLE,
    ENROLLED,
    INELIGIBLE,
    LOST,
    NOT_ARRIVED,
)
from clinbench.env.recruitment.score import score_parts
from clinbench.env.recruitment.simulator import AMENDMENTS, MILESTONES, TOKEN_COSTS
from clinbench.env.recruitment.tasks import EVENTS, TaskParams
from clinbench.env.recruitment.world import World, draw_world

_SEED_BOUND = np.iinfo(np.int64).max
_NEVER = 1 << 30  # a day that never comes
_E = {e: e.value for e in ErrorCode}  # info["error"] strings
_TYPE_OF_MACRO = {macro: kind for kind, macro in _MACRO_OF_TYPE.items()}  # else a strategy


class _Products(NamedTuple):
    """What a world's active events multiply out to (in their order), and when one ends."""

    hold: bool
    consent: float
    arrival: float
    eligibility: float
    screen_cost: float
    extra_wait: list[float]
    cut: list[int]
    audit: list[bool]
    first_end: int  # the first day an active event no longer holds (``_NEVER``: none)


class _WorldState:
    """What one world keeps outside the shared arrays (its luck and its history)."""

    __slots__ = (
        "amendment",
        "base_wait",
        "effects",
        "focus",
        "hazard",
        "memory",
        "negotiations",
        "products",
        "rng",
        "terminated_by",
        "world",
    )

    def __init__(self, world: World, rng: np.random.Generator):
        self.world = world
        self.rng = rng
        self.hazard = world.hazard_clock.tolist()  # cumulative dropout hazard by day
        #: active events: (site, end (excl.), extra wait, EventKind), in calendar order
        self.effects: list[tuple[int, int, float, Any]] = []
        self.negotiations: list[tuple[int, int]] = []  # (ready day, site)
        self.memory: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self.amendment: tuple[int, int] | None = None  # (approval day, criteria step)
        self.focus: tuple[int, int] | None = None  # (site, end (excl.))
        self.terminated_by = "deadline"
        self.base_wait = world.wait_days.tolist()
        #: the active events' products (``_event_products``), None: to be computed
        self.products: _Products | None = None


class RecruitmentVectorCore:
    """N recruitment worlds of one task, stepped by macro index.

    The interface :class:`clinbench.env.gym_vector.MacroVectorEnv` uses:
    ``reset(i, seed, options) -> info``, ``step(idx, ks) -> (rewards, terminated,
    infos)`` and ``observe(obs, masks, rows)``; see there.
    """

    def __init__(self, params: TaskParams, macro_space: RecruitmentMacros, num_envs: int):
        p = self.params = params
        self.macro_space = macro_space
        self.num_envs = n = num_envs
        pool, s, h = p.pool_size, p.n_sites, p.horizon
        self._np_random: list[np.random.Generator | None] = [None] * n
        self._worlds: list[_WorldState | None] = [None] * n
        self._canonical: World | None = None
        # per patient
        self.state = np.zeros((n, pool), dtype=np.int8)
        self.last_contact = np.zeros((n, pool), dtype=np.int32)
        self.recontacts_left = np.zeros((n, pool), dtype=np.int32)
        #: a consented patient's consent deadline (``_NEVER`` for everyone else)
        self.deadline = np.zeros((n, pool), dtype=np.int32)
        self.lapsed = np.zeros((n, pool), dtype=np.bool_)
        self.threshold = np.full((n, pool), np.inf)  # arrival clock reading (inf: site closed)
        self.leave_day = np.full((n, pool), -1, dtype=np.int32)  # follow-up exit day
        self.leave_drops = np.zeros((n, pool), dtype=np.bool_)  # exit by dropout
        #: per day: follow-up exits and consent deadlines scheduled (which worlds to look at)
        self.leaving_on = np.zeros((n, h + p.followup_days + 2), dtype=np.int64)
        self.lapsing_on = np.zeros((n, h + 1), dtype=np.int64)
        self.site_of = np.zeros((n, pool), dtype=np.int64)
        #: the screen_best rule's pre-screen value of an available patient (else -inf)
        self.avail_value = np.full((n, pool), -np.inf)
        self.value = np.zeros((n, pool))
        self.pre_elig = np.zeros((n, pool))
        # per site
        self.opened = np.zeros((n, s), dtype=np.bool_)
        self.activation = np.zeros((n, s), dtype=np.int64)
        self.cap_total = np.zeros((n, s), dtype=np.int64)
        self.cap_used = np.zeros((n, s), dtype=np.int64)
        self.cap_cut = np.zeros((n, s), dtype=np.int64)
        self.audit = np.zeros((n, s), dtype=np.bool_)
        self.wait = np.zeros((n, s))
        self.reported = np.zeros((n, s))
        self.cum_att = np.zeros((n, s), dtype=np.int64)
        self.cum_succ = np.zeros((n, s), dtype=np.int64)
        #: recent outcomes per site: rows 0 attempts, 1 successes, 2 dropouts; ``log``
        #: holds them per day so that the ``history_window`` sums can drop old days
        self.window = np.zeros((n, 3, s), dtype=np.int64)
        self.log = np.zeros((n, h + 1, 3, s), dtype=np.int64)
        self.ret_conv = np.zeros((n, s))  # the retrieved record's conversion per site
        # per world
        self.day = np.zeros(n, dtype=np.int64)
        self.budget = np.zeros(n)
        self.net = np.zeros(n, dtype=np.int64)
        self.max_net = np.zeros(n, dtype=np.int64)
        self.day_target = np.full(n, -1, dtype=np.int64)
        self.tokens = np.zeros(n, dtype=np.int64)
        self.steps = np.zeros(n, dtype=np.int64)
        self.last_score = np.zeros(n)
        self.clock = np.zeros(n)  # the arrival clock
        #: in-window dropouts counted before each day (cumulative: the 7-day rate)
        self.drops_before = np.zeros((n, h + 2), dtype=np.int64)
        self.hold = np.zeros(n, dtype=np.bool_)
        self.consent_mult = np.ones(n)
        self.arrival_mult = np.ones(n)
        self.elig_mult = np.ones(n)
        self.screen_cost = np.zeros(n)
        self.uncertainty = np.zeros(n)
        self.criteria = np.ones(n, dtype=np.int64)  # index into CRITERIA_LEVELS
        self.amendments_used = np.zeros(n, dtype=np.int64)
        self.pending_amendment = np.zeros(n, dtype=np.bool_)
        self.outreach_until = np.full(n, -1, dtype=np.int64)
        self.focus_site = np.full(n, -1, dtype=np.int64)
        self.memory_used = np.zeros(n, dtype=np.int64)
        self.retrieved = np.zeros(n, dtype=np.bool_)
        self.retrieved_day = np.full(n, -1, dtype=np.int64)  # the retrieved record's day
        self.screened = np.zeros(n, dtype=np.int64)  # screenings so far
        self.pending_negotiations = np.zeros(n, dtype=np.int64)
        # the next day something of a world's own history changes (effects end, ...)
        self.next_change = np.full(n, _NEVER, dtype=np.int64)
        self.has_event = np.zeros((n, h + 1), dtype=np.bool_)
        # what observe() leaves for the next step's macro rules
        self.best = np.full(n, -1, dtype=np.int64)
        self.estimate = np.zeros((n, s))
        self._rows = np.arange(n)
        self._milestone_counts = np.array(
            [max(1, math.ceil(f * p.target)) for _, f in MILESTONES], dtype=np.int64
        )
        self._retention_mult = np.zeros((n, s))
        self._conversion = np.zeros((n, s))
        names = macro_space.names
        self._stop = macro_space.index["stop"]
        self._handler = [self._handler_of(name) for name in names]
        self._tokens = [TOKEN_COSTS[self._type_of(name)] for name in names]
        self._site_range = np.arange(s)
        # the fixed prices (the simulator's ``Costs``; screening's varies with events)
        self.negotiate_cost = p.strategy_cost * p.negotiate_cost_multiplier
        self.amendment_cost = p.strategy_cost * p.amendment_cost_multiplier

    # ------------------------------------------------------------------ reset
    def reset(self, i: int, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        """Start world ``i`` as ``MacroGymEnv.reset(seed=seed, options=options)`` would."""
        if seed is not None:
            self._np_random[i], _ = seeding.np_random(seed)
        elif self._np_random[i] is None:
            self._np_random[i], _ = seeding.np_random()
        native_seed = int(self._np_random[i].integers(_SEED_BOUND)) if seed is None else seed
        native_seed, fixed = reset_arguments(native_seed, options)
        p = self.params
        world_seq, outcome_seq = np.random.SeedSequence(native_seed).spawn(2)
        if fixed:
            if self._canonical is None:
                canon_seq = np.random.SeedSequence(0).spawn(2)[0]
                self._canonical = draw_world(p, np.random.default_rng(canon_seq))
            world = self._canonical
        else:
            world = draw_world(p, np.random.default_rng(world_seq))
        self._worlds[i] = _WorldState(world, np.random.default_rng(outcome_seq))
        self.state[i] = NOT_ARRIVED
        self.last_contact[i] = -1
        self.recontacts_left[i] = p.max_recontacts
        self.deadline[i] = _NEVER
        self.avail_value[i] = -np.inf
        self.lapsed[i] = False
        self.threshold[i] = np.inf
        self.leave_day[i] = -1
        self.leave_drops[i] = False
        self.leaving_on[i] = 0
        self.lapsing_on[i] = 0
        self.value[i] = world.prescreen_eligibility - 0.5 * world.prescreen_dropout
        self.pre_elig[i] = world.visible.prescreen_eligibility
        self.opened[i] = False
        self.activation[i] = world.activation_day
        self.cap_total[i] = p.site_capacity
        for a in (self.cap_used, self.cum_att, self.cum_succ):
            a[i] = 0
        self.window[i] = 0
        self.log[i] = 0
        self.ret_conv[i] = 0.0
        self.reported[i] = world.reported_conversion
        self._retention_mult[i] = [(1.0 - r) / 0.125 for r in world.retention.tolist()]
        self._conversion[i] = world.conversion
        self.day[i] = 0
        self.budget[i] = float(p.budget)
        self.net[i] = self.max_net[i] = self.tokens[i] = self.steps[i] = 0
        self.day_target[i] = -1
        self.last_score[i] = 0.0
        self.clock[i] = 0.0
        self.drops_before[i] = 0
        self.criteria[i] = 1
        self.amendments_used[i] = 0
        self.pending_amendment[i] = False
        self.outreach_until[i] = -1
        self.memory_used[i] = 0
        self.retrieved[i] = False
        self.retrieved_day[i] = -1
        self.screened[i] = 0
        self.pending_negotiations[i] = 0
        self.has_event[i] = False
        days = [d for d in world.calendar if d <= p.horizon]
        self.has_event[i, days] = True
        self._open_sites(i)
        self._recompute_effects(i)
        return {"seed": native_seed, "fixed_world": fixed, "error": None}

    # ------------------------------------------------------------------ step
    def step(
        self, idx: list[int], ks: list[int]
    ) -> tuple[list[float], list[bool], list[dict[str, Any]]]:
        """Play macro ``ks[j]`` in world ``idx[j]``: rewards, terminated flags, infos."""
        day = self.day.tolist()
        infos = []
        ended: list[int] = []
        handler, tokens = self._handler, self._tokens
        self.retrieved[idx] = False
        self.retrieved_day[idx] = -1
        self.ret_conv[idx] = 0.0
        for i, k in zip(idx, ks, strict=True):
            info = {"day": day[i], "error": None, "outcome": None}
            error = handler[k](i, k, day[i], info)
            if error is not None:
                info["error"] = _E[error]
            info["tokens"] = tokens[k]
            infos.append(info)
            if k == self._stop and error is None:
                self._worlds[i].terminated_by = "stop"
                ended.append(i)
        self.tokens[idx] += np.asarray(tokens)[ks]
        self.steps[idx] += 1
        advance = np.zeros(self.num_envs, dtype=np.bool_)
        advance[idx] = True
        advance[ended] = False
        if advance.any():
            self._advance_day(advance)
            ended += np.flatnonzero(advance & (self.day >= self.params.horizon)).tolist()
        for i in ended:
            self._end_recruitment(i)
        now = self._score(idx)
        rewards = (now - self.last_score[idx]).tolist()
        self.last_score[idx] = now
        done = (self.day[idx] >= self.params.horizon).tolist()
        usage = self.tokens[idx].tolist()
        for j, i in enumerate(idx):
            info = infos[j]
            if done[j]:
                info.update(self._final_info(i))
            info["token_usage"] = usage[j]
        return rewards, done, infos

    def _final_info(self, i: int) -> dict[str, Any]:
        p = self.params
        budget = float(self.budget[i])
        dt = int(self.day_target[i])
        parts = score_parts(
            int(self.net[i]), p.target, budget, p.budget, dt if dt >= 0 else None, p.horizon
        )
        return {
            "score_parts": parts,
            "score": parts["score"],
            "terminated_by": self._worlds[i].terminated_by,
            "net_enrolled": int(self.net[i]),
            "budget_used": p.budget - budget,
            "steps": int(self.steps[i]),
        }

    def _score(self, idx: list[int]) -> np.ndarray:
        """``score.score`` of worlds ``idx`` (the same operations, elementwise)."""
        p = self.params
        net = self.net[idx]
        e = np.minimum(1.0, np.maximum(net, 0) / p.target)
        b = self.budget[idx] / p.budget
        dt = self.day_target[idx]
        t = np.where(dt >= 0, 1.0 - dt / p.horizon, 0.0)
        return np.where(net > 0, e * (0.75 + 0.15 * b + 0.10 * t), 0.0)

    # ------------------------------------------------------------------ handlers
    def _type_of(self, name: str) -> ActionType:
        return _TYPE_OF_MACRO.get(name, ActionType.ADJUST_STRATEGY)

    def _handler_of(self, name: str) -> Any:
        return {
            "screen_best": self._screen,
            "recontact_urgent": self._recontact,
            "allocate_urgent": self._allocate,
            "increase_outreach": self._outreach,
            "relax_criteria": self._amend,
            "tighten_criteria": self._amend,
            "plan": self._nothing,
            "summarize": self._summarize,
            "retrieve": self._retrieve,
            "stop": self._nothing,
        }.get(name, self._site_strategy)

    def _pay(self, i: int, cost: float) -> bool:
        budget = self.budget[i]
        if cost > budget + 1e-9:
            return False
        self.budget[i] = max(0.0, budget - cost)
        return True

    def _consent(self, i: int, patient: int, day: int) -> None:
        self.state[i, patient] = CONSENTED
        deadline = day + self.params.consent_window + 1
        self.deadline[i, patient] = deadline
        if deadline <= self.params.horizon:
            self.lapsing_on[i, deadline] += 1

    def _record(self, row: int, i: int, s: int, day: int) -> None:
        self.log[i, day, row, s] += 1
        self.window[i, row, s] += 1

    def _nothing(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        return None

    def _screen(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        b = int(self.best[i])
        if b < 0:
            return ErrorCode.MISSING_PATIENT_ID
        if self.hold[i]:
            return ErrorCode.REGULATORY_HOLD_ACTIVE
        if not self._pay(i, self.screen_cost[i]):
            return ErrorCode.INSUFFICIENT_BUDGET
        ws = self._worlds[i]
        w = ws.world
        self.screened[i] += 1
        self.last_contact[i, b] = day
        self.avail_value[i, b] = -np.inf
        if w.eligibility_u[b] >= w.eligibility[b] * self.elig_mult[i]:
            self.state[i, b] = INELIGIBLE
            info["outcome"] = "ineligible"
        elif ws.rng.random() < w.willingness[b] * self.consent_mult[i]:
            self._consent(i, b, day)
            info["outcome"] = "consented"
        else:
            self.state[i, b] = ELIGIBLE
            info["outcome"] = "eligible"
        return None

    def _recontact(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        p = self.params
        eligible = self.state[i] == ELIGIBLE
        if not eligible.any():
            return ErrorCode.MISSING_PATIENT_ID
        since = day - self.last_contact[i]
        warm = eligible & (since <= p.cooloff_days)
        if warm.any():
            c = int(np.where(warm, since, -_NEVER).argmax())
        else:
            c = int(np.where(eligible, since, _NEVER).argmin())
        if not self._pay(i, p.recontact_cost):
            return ErrorCode.INSUFFICIENT_BUDGET
        last = int(self.last_contact[i, c])
        self.last_contact[i, c] = day
        ws = self._worlds[i]
        cooled = p.cooloff_decay ** max(0, day - last - p.cooloff_days)
        if ws.rng.random() < ws.world.willingness[c] * cooled * self.consent_mult[i]:
            self._consent(i, c, day)
            info["outcome"] = "consented"
            return None
        left = int(self.recontacts_left[i, c]) - 1
        self.recontacts_left[i, c] = left
        if left <= 0:
            self.state[i, c] = LOST
            info["outcome"] = "declined"
        else:
            info["outcome"] = "no_consent"
        return None

    def _allocate(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        p = self.params
        consented = self.state[i] == CONSENTED
        if not consented.any():
            return ErrorCode.MISSING_PATIENT_ID
        c = int(self.deadline[i].argmin())
        ws = self._worlds[i]
        home = int(ws.world.home_site[c])
        cap = self.cap_total[i] - self.cap_cut[i] - self.cap_used[i]
        is_open = self.opened[i] & (cap > 0) & ~self.audit[i]
        if not is_open.any():
            return ErrorCode.MISSING_SITE_ID
        v = self.estimate[i] * np.where(self._site_range == home, 1.0, p.other_site_conversion)
        s = int(np.where(is_open, v, -1.0).argmax())
        if self.params.enrol_cost > self.budget[i] + 1e-9:
            return ErrorCode.INSUFFICIENT_BUDGET
        self.cum_att[i, s] += 1
        self._record(0, i, s, day)
        p_success = self._conversion[i, s] / (1.0 + p.wait_penalty * self.wait[i, s])
        if s != home:
            p_success *= p.other_site_conversion
        if ws.rng.random() < p_success:
            self._pay(i, self.params.enrol_cost)
            self.cum_succ[i, s] += 1
            self._record(1, i, s, day)
            self._enrol(i, c, s, day)
            info["outcome"] = "enrolled"
        elif ws.rng.random() < p.loss_on_failed_allocation:
            self.state[i, c] = LOST
            self.deadline[i, c] = _NEVER
            info["outcome"] = "lost"
        else:
            info["outcome"] = "not_enrolled"
        return None

    def _enrol(self, i: int, c: int, s: int, day: int) -> None:
        p, ws = self.params, self._worlds[i]
        w = ws.world
        self.state[i, c] = ENROLLED
        self.deadline[i, c] = _NEVER
        self.site_of[i, c] = s
        self.cap_used[i, s] += 1
        crit = int(self.criteria[i])
        crit_mult = (
            p.relax_dropout_multiplier
            if crit == 2
            else p.tighten_dropout_multiplier
            if crit == 0
            else 1.0
        )
        retention = float(self._retention_mult[i, s])
        h = p.dropout_base * float(w.dropout_risk[c]) * retention * crit_mult
        end = day + p.followup_days
        drop_day = end + 1
        if h > 0.0:
            need = ws.hazard[day] + float(w.dropout_clock[c]) / h
            drop_day = bisect.bisect_left(ws.hazard, need, day + 1)
        leave = drop_day if drop_day <= end else max(end, day + 1)
        self.leave_day[i, c], self.leave_drops[i, c] = leave, drop_day <= end
        self.leaving_on[i, leave] += 1
        net = int(self.net[i]) + 1
        self.net[i] = net
        self.max_net[i] = max(self.max_net[i], net)
        if net >= p.target and self.day_target[i] < 0:
            self.day_target[i] = day

    def _outreach(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        if not self._pay(i, self.params.strategy_cost):
            return ErrorCode.INSUFFICIENT_BUDGET
        self.outreach_until[i] = day + self.params.outreach_days
        self._multipliers(i, day)
        return self._changed(i, k, day, info)

    def _amend(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        p, ws = self.params, self._worlds[i]
        step = AMENDMENTS[self.macro_space.names[k]]
        if ws.amendment is not None:
            return ErrorCode.AMENDMENT_PENDING
        if not 0 <= int(self.criteria[i]) + step < 3:
            return ErrorCode.STRATEGY_ALREADY_ACTIVE
        if self.amendments_used[i] >= p.max_amendments:
            return ErrorCode.AMENDMENT_LIMIT_REACHED
        if not self._pay(i, self.amendment_cost):
            return ErrorCode.INSUFFICIENT_BUDGET
        lo, hi = p.amendment_delay
        ws.amendment = (day + int(ws.rng.integers(lo, hi + 1)), step)
        self.pending_amendment[i] = True
        self.amendments_used[i] += 1
        return self._changed(i, k, day, info)

    def _site_strategy(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        p, ws = self.params, self._worlds[i]
        macros = self.macro_space
        negotiate = k >= macros._neg0
        s = k - (macros._neg0 if negotiate else macros._focus0)
        if not self._pay(i, self.negotiate_cost if negotiate else p.strategy_cost):
            return ErrorCode.INSUFFICIENT_BUDGET
        if negotiate:
            ws.negotiations.append((day + p.negotiate_delay, s))
            self.pending_negotiations[i] += 1
        else:
            ws.focus = (s, day + p.focus_days)
            self._waits(i, day)
        return self._changed(i, k, day, info)

    def _changed(self, i: int, k: int, day: int, info: dict[str, Any]) -> None:
        """A strategy took effect (its own part of the effects already redone)."""
        info["outcome"] = self.macro_space.names[k]
        self._next_change(i, day)

    def _summarize(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        memory = self._worlds[i].memory
        key = f"day-{day}"
        if key in memory:
            del memory[key]
            info["memory_overwritten"] = key
        elif len(memory) >= self.params.memory_capacity:
            oldest = next(iter(memory))
            del memory[oldest]
            info["memory_evicted"] = oldest
        memory[key] = (tuple(self.cum_att[i].tolist()), tuple(self.cum_succ[i].tolist()))
        self.memory_used[i] = len(memory)
        return None

    def _retrieve(self, i: int, k: int, day: int, info: dict[str, Any]) -> ErrorCode | None:
        memory = self._worlds[i].memory
        if not memory:
            return ErrorCode.MISSING_MEMORY_QUERY
        key = next(reversed(memory))
        attempts, successes = memory[key]
        self.retrieved[i] = True
        self.retrieved_day[i] = int(key.removeprefix("day-"))
        self.ret_conv[i] = [succ / att if att else 0.0 for att, succ in zip(attempts, successes)]
        return None

    # ------------------------------------------------------------------ effects
    def _recompute_effects(self, i: int) -> None:
        """The simulator's ``_recompute_effects`` for world ``i`` (same products, same order).

        Split in parts so that a strategy redoes only the part it changes (outreach: the
        multipliers; focus: the waits; every strategy: the next day of change); the
        parts it leaves are unchanged since the last full recompute, as in the simulator.
        """
        p, ws = self.params, self._worlds[i]
        day = int(self.day[i])
        ws.products = products = self._event_products(i)
        self.cap_cut[i] = products.cut
        self.audit[i] = products.audit
        self.screen_cost[i] = p.screen_cost * products.screen_cost
        self.uncertainty[i] = min(1.0, 0.25 * len(ws.effects))
        self._multipliers(i, day)
        self._waits(i, day)
        self._next_change(i, day)

    def _multipliers(self, i: int, day: int) -> None:
        p, ws = self.params, self._worlds[i]
        hold, consent, arrival, elig = ws.products[:4]
        if day < self.outreach_until[i]:
            arrival *= p.outreach_arrival_multiplier
            consent *= p.outreach_consent_multiplier
        crit = int(self.criteria[i])
        if crit == 2:
            elig *= p.relax_eligibility_multiplier
        elif crit == 0:
            elig *= p.tighten_eligibility_multiplier
        self.hold[i] = hold
        self.consent_mult[i] = consent
        self.arrival_mult[i] = arrival
        self.elig_mult[i] = elig

    def _waits(self, i: int, day: int) -> None:
        ws = self._worlds[i]
        focus = ws.focus[0] if ws.focus is not None and day < ws.focus[1] else -1
        extra_wait = ws.products.extra_wait
        self.wait[i] = [
            (b + extra) * (0.5 if j == focus else 1.0)
            for j, (b, extra) in enumerate(zip(ws.base_wait, extra_wait, strict=True))
        ]
        self.focus_site[i] = focus

    def _next_change(self, i: int, day: int) -> None:
        """The next day on which an effect ends, outreach or focus ends, an amendment is
        approved or a negotiation completes: a day the effects must be recomputed."""
        ws = self._worlds[i]
        nxt = ws.products.first_end
        outreach_until = int(self.outreach_until[i])
        if outreach_until > day:
            nxt = min(nxt, outreach_until)
        if ws.focus is not None and ws.focus[1] > day:
            nxt = min(nxt, ws.focus[1])
        if ws.amendment is not None:
            nxt = min(nxt, ws.amendment[0])
        if ws.negotiations:
            nxt = min(nxt, ws.negotiations[0][0])
        self.next_change[i] = nxt

    def _event_products(self, i: int) -> _Products:
        """What world ``i``'s active events multiply out to, in their order."""
        ws = self._worlds[i]
        s = len(ws.base_wait)
        hold = False
        consent = arrival = elig = screen_cost = 1.0
        extra_wait = [0.0] * s
        cut = [0] * s
        audit = [False] * s
        cap_total = self.cap_total[i].tolist()
        for site, _, mag, e in ws.effects:
            hold = hold or e.hold
            consent *= e.consent
            arrival *= e.arrival
            elig *= e.eligibility
            screen_cost *= e.screen_cost
            if site >= 0:
                extra_wait[site] += mag
                cut[site] += math.ceil(e.capacity_cut * cap_total[site])
                audit[site] = audit[site] or e.closes_site
        ends = min((e[1] for e in ws.effects), default=_NEVER)
        return _Products(hold, consent, arrival, elig, screen_cost, extra_wait, cut, audit, ends)

    # ------------------------------------------------------------------ days
    def _open_sites(self, i: int) -> None:
        """Open world ``i``'s sites whose day has come; their patients start arriving."""
        ws = self._worlds[i]
        now = float(self.clock[i])
        for k in np.flatnonzero(~self.opened[i] & (self.activation[i] <= self.day[i])).tolist():
            self.opened[i, k] = True
            times, who = ws.world.site_arrivals[k]
            self.threshold[i, who] = now + times

    def _advance_day(self, adv: np.ndarray) -> None:
        """End the day of the worlds ``adv`` (a mask): the simulator's ``_advance_day``."""
        p = self.params
        rows = np.flatnonzero(adv)
        sel = slice(None) if rows.size == self.num_envs else rows  # a view when all advance
        day, state = self.day, self.state
        # arrivals through the open sites (an arrived patient's threshold is inf again)
        self.clock[sel] += self.arrival_mult[sel]
        r, c = np.nonzero(self.threshold[sel] <= self.clock[sel, None])
        if r.size:
            w = rows[r]
            state[w, c] = AVAILABLE
            self.avail_value[w, c] = self.value[w, c]
            self.threshold[w, c] = np.inf
        # patients leaving follow-up: dropouts of today, completions of tomorrow
        w = rows[self.leaving_on[rows, day[rows] + 1] > 0]
        if w.size:
            r, c = np.nonzero(self.leave_day[w] == (day[w] + 1)[:, None])
            w = w[r]
            self.leave_day[w, c] = -1
            drops = self.leave_drops[w, c]
            state[w[~drops], c[~drops]] = COMPLETED
            if drops.any():
                self._drop_out(w[drops], c[drops], day[w[drops]], in_window=True)
        # the day's events (visible from tomorrow)
        events = rows[self.has_event[rows, day[rows]]]
        for i in events.tolist():
            ws, d = self._worlds[i], int(day[i])
            for ev in ws.world.calendar[d]:
                ws.effects.append((ev.site, d + 1 + ev.duration, ev.magnitude, EVENTS[ev.kind]))
        day[sel] += 1
        opening = rows[(~self.opened[sel] & (self.activation[sel] <= day[sel, None])).any(1)]
        for i in opening.tolist():
            self._open_sites(i)
        # effects that end, strategies that end, amendments approved, negotiations done
        changed = np.zeros(self.num_envs, dtype=np.bool_)
        changed[rows[self.next_change[sel] <= day[sel]]] = True
        changed[events] = True
        new_events = set(events.tolist())
        for i in np.flatnonzero(changed).tolist():
            d = int(day[i])
            if self._expire(i, d) or i in new_events:
                self._recompute_effects(i)
            else:  # only the parts after the events' products
                self._multipliers(i, d)
                self._waits(i, d)
                self._next_change(i, d)
        # the recent window loses the day that falls out of it
        old = day[sel] - 1 - p.history_window
        keep = old >= 0
        if keep.any():
            w = rows[keep]
            self.window[w] -= self.log[w, old[keep]]
        # consent lapses (``lapsing_on`` counts consents by deadline: worlds to look at)
        w = rows[self.lapsing_on[rows, day[rows]] > 0]
        if w.size:
            r, c = np.nonzero(self.deadline[w] <= day[w, None])
            w = w[r]
            self.deadline[w, c] = _NEVER
            again = self.lapsed[w, c]
            state[w[again], c[again]] = LOST
            w, c = w[~again], c[~again]
            self.lapsed[w, c] = True
            state[w, c] = ELIGIBLE
            self.recontacts_left[w, c] = 1

    def _expire(self, i: int, day: int) -> bool:
        """World ``i``'s effects that end, amendment approved, negotiations completed;
        True if the events' products must be redone (effects ended, slots added)."""
        p, ws = self.params, self._worlds[i]
        redo = False
        if ws.products.first_end <= day:
            ws.effects = [e for e in ws.effects if e[1] > day]
            redo = True
        if ws.amendment is not None and ws.amendment[0] <= day:
            self.criteria[i] += ws.amendment[1]
            ws.amendment = None
            self.pending_amendment[i] = False
        while ws.negotiations and ws.negotiations[0][0] <= day:
            _, s = ws.negotiations.pop(0)
            self.cap_total[i, s] += p.negotiate_slots
            self.pending_negotiations[i] -= 1
            # more slots change the events' products only through a capacity cut there
            redo = redo or any(e[0] == s and e[3].capacity_cut for e in ws.effects)
        return redo

    def _drop_out(self, w: np.ndarray, c: np.ndarray, day: np.ndarray, in_window: bool) -> None:
        """Patients ``c`` of worlds ``w`` drop out (``day``: the day they are counted on)."""
        s = self.site_of[w, c]
        self.state[w, c] = DROPPED_OUT
        np.subtract.at(self.net, w, 1)
        if in_window:
            np.add.at(self.log, (w, day, 2, s), 1)
            np.add.at(self.window, (w, 2, s), 1)
            for i, d in zip(w.tolist(), day.tolist(), strict=True):
                self.drops_before[i, d + 1 :] += 1
        lost = w[self.net[w] < self.params.target]
        self.day_target[lost] = -1

    def _end_recruitment(self, i: int) -> None:
        """Recruitment is over: everyone still in follow-up reaches its end now."""
        p = self.params
        c = np.flatnonzero(self.leave_day[i] >= 0)
        if c.size:
            drops = self.leave_drops[i, c]
            self.state[i, c[~drops]] = COMPLETED
            if drops.any():
                d = c[drops]
                self._drop_out(np.full(d.size, i), d, self.leave_day[i, d] - 1, in_window=False)
            self.leave_day[i, c] = -1
        self.day[i] = p.horizon
        self._open_sites(i)

    # ------------------------------------------------------------------ features and masks
    def observe(self, obs: np.ndarray, masks: np.ndarray, rows: np.ndarray) -> None:
        """Features (float32, clipped in float64 as ``features``) and masks of ``rows``."""
        p, macros = self.params, self.macro_space
        state = self.state
        n_avail = (state == AVAILABLE).sum(1, dtype=np.int32)
        n_elig = (state == ELIGIBLE).sum(1, dtype=np.int32)
        n_cons = (state == CONSENTED).sum(1, dtype=np.int32)
        best = self.avail_value.argmax(1)
        best[n_avail == 0] = -1
        self.best = best
        day = self.day
        min_deadline = self.deadline.min(1)
        min_left = np.where(n_cons > 0, (min_deadline - day) / p.consent_window, 1.0)
        best_pre = np.where(best >= 0, self.pre_elig[self._rows, best], 0.0)
        before = self.drops_before
        drops7 = before[self._rows, day] - before[self._rows, np.maximum(day - 7, 0)]
        milestones = (self.max_net[:, None] >= self._milestone_counts).sum(1)
        n, f, s = self.num_envs, macros.n_features, p.n_sites
        x = np.empty((n, f))
        x[:, 0] = day / p.horizon
        x[:, 1] = self.budget / p.budget
        x[:, 2] = self.net / p.target
        x[:, 3] = n_avail / 50.0
        x[:, 4] = n_elig / 20.0
        x[:, 5] = n_cons / 5.0
        x[:, 6] = min_left
        x[:, 7] = best_pre
        x[:, 8] = self.hold
        x[:, 9] = self.criteria * 0.5
        outreach = day < self.outreach_until
        x[:, 10] = outreach
        x[:, 11] = self.uncertainty
        x[:, 12] = drops7 / np.maximum(1, self.net + drops7)
        x[:, 13] = self.screen_cost / p.screen_cost - 1.0
        x[:, 14] = self.memory_used / p.memory_capacity
        x[:, 15] = self.retrieved
        x[:, 16] = milestones / 4.0
        x[:, 17] = self.pending_negotiations / 3.0
        cap_total = self.cap_total
        cap = np.maximum(0, cap_total - self.cap_cut - self.cap_used)
        att, succ = self.window[:, 0], self.window[:, 1]
        conv = (succ + PRIOR_ATTEMPTS * self.reported) / (att + PRIOR_ATTEMPTS)
        self.estimate = est = conv / (1.0 + p.wait_penalty * self.wait)
        is_open = self.opened & (cap > 0) & ~self.audit
        sites = x[:, 18:].reshape(n, s, 6)
        sites[:, :, 0] = cap / np.maximum(cap_total, 1)
        sites[:, :, 1] = est
        sites[:, :, 2] = att / 10.0
        sites[:, :, 3] = self.wait / 15.0
        sites[:, :, 4] = is_open
        sites[:, :, 5] = self.ret_conv
        np.clip(x, 0.0, 1.0, out=x)
        obs[rows] = x[rows]
        # masks
        budget = self.budget
        strategy_ok = budget >= p.strategy_cost
        amend_ok = (
            (budget >= self.amendment_cost)
            & (self.amendments_used < p.max_amendments)
            & ~self.pending_amendment
        )
        m = np.empty((n, macros.n), dtype=np.bool_)
        m[:, 0] = (n_avail > 0) & ~self.hold & (budget >= self.screen_cost)
        m[:, 1] = (n_elig > 0) & (budget >= p.recontact_cost)
        m[:, 2] = (n_cons > 0) & (budget >= p.enrol_cost) & is_open.any(1)
        m[:, 3] = strategy_ok
        m[:, 4] = amend_ok & (self.criteria != 2)
        m[:, 5] = amend_ok & (self.criteria != 0)
        f0, n0 = macros._focus0, macros._neg0
        m[:, f0 : f0 + s] = strategy_ok[:, None] & (self._site_range != self.focus_site[:, None])
        m[:, n0 : n0 + s] = (budget >= self.negotiate_cost)[:, None]
        m[:, n0 + s :] = True
        m[:, n0 + s + 2] = self.memory_used > 0
        masks[rows] = m[rows]

    def summaries(self, rows: list[int]) -> list[dict[str, float]]:
        """``obs.summary()`` of worlds ``rows`` (what the learners read besides features)."""
        p = self.params
        state = self.state[rows]
        kinds = (INELIGIBLE, CONSENTED, DROPPED_OUT, COMPLETED)
        count = [(state == s).sum(1).tolist() for s in kinds]
        day, net = self.day[rows].tolist(), self.net[rows].tolist()
        budget = self.budget[rows].tolist()
        screened, slots = self.screened[rows].tolist(), self.memory_used[rows].tolist()
        retrieved = self.retrieved_day[rows].tolist()
        return [
            {
                "time": day[j],
                "progress": net[j],
                "enrolled": net[j],
                "target": p.target,
                "budget_remaining": budget[j],
                "screened": screened[j],
                "ineligible": count[0][j],
                "consented": count[1][j],
                "dropped_out": count[2][j],
                "completed": count[3][j],
                "horizon": p.horizon,
                "memory_slots": slots[j],
                "retrieved_day": retrieved[j],
            }
            for j in range(len(rows))
        ]

    def close(self) -> None:
        """Nothing to release (no native environments, no files)."""


#: What :mod:`clinbench.env.gym_vector` builds for this family's ids.
VectorCore = RecruitmentVectorCore
