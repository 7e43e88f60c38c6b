"""The patient-recruitment simulator (``recruitment``, task version 2).

One action a day for 180 days. Patients move through one state each
(not arrived -> available -> screened: ineligible | eligible -> consented -> enrolled
(in follow-up) -> completed | dropped out, or lost). Everything is kept in numpy arrays
and small Python structures updated on transitions: a step touches only the patients
it acts on.

Patients arrive through their home site once it has opened, on the site's own Poisson
stream (one heap on the shared arrival clock). Dropout uses the world's cumulative
hazard clock, which depends on the event calendar alone: a patient enrolled on day
``e`` with hazard ``h`` and an Exp(1) threshold ``c`` drops out at the first day whose
clock reaches ``clock[e] + c / h``, if that comes within follow-up. So each
enrolment's fate is known when it happens, and ending recruitment resolves everyone
still in follow-up in one step.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from clinbench.env.base import Env, EnvSpec, reset_arguments
from clinbench.env.recruitment.actions import (
    PHASES,
    Action,
    ActionType,
    ErrorCode,
    as_action,
)
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
    ROW_DEADLINE,
    ROW_HOME,
    ROW_LAST_CONTACT,
    ROW_RECONTACTS_LEFT,
    ROW_STATE,
    Costs,
    EventView,
    Funnel,
    MemoryRecord,
    Observation,
    SiteView,
)
from clinbench.env.recruitment.score import score, score_parts
from clinbench.env.recruitment.tasks import EVENTS, TASK_VERSION, EventKind, TaskParams
from clinbench.env.recruitment.validation import argument_error
from clinbench.env.recruitment.world import (
    PATIENT_ID_OFFSET,
    SITE_LETTERS,
    World,
    draw_world,
    site_id,
)

#: Tokens charged per action type (environment-side accounting; never scored).
TOKEN_COSTS: dict[ActionType, int] = {
    ActionType.SCREEN_PATIENT: 120,
    ActionType.RECONTACT: 80,
    ActionType.ALLOCATE_TO_SITE: 100,
    ActionType.ADJUST_STRATEGY: 150,
    ActionType.PLAN_NEXT_PHASE: 400,
    ActionType.SUMMARIZE_AND_INDEX: 300,
    ActionType.RETRIEVE_RELEVANT_HISTORY: 250,
    ActionType.STOP_RECRUITMENT: 20,
}
#: Milestones: fraction of the target (net enrolled).
MILESTONES: tuple[tuple[str, float], ...] = (
    ("enrolled_25pct", 0.25),
    ("enrolled_50pct", 0.50),
    ("enrolled_75pct", 0.75),
    ("enrolled_100pct", 1.00),
)
CRITERIA_LEVELS = ("tight", "normal", "relaxed")
#: Protocol amendments and the step each takes along ``CRITERIA_LEVELS`` once approved.
AMENDMENTS = {"relax_criteria": 1, "tighten_criteria": -1}
_WORDS = re.compile(r"[a-z0-9]+")
_PATIENT_ID = re.compile(r"P-[1-9][0-9]*")
_SITE_STRATEGY = re.compile(r"(focus|negotiate)_site_([A-Z])")


class RecruitmentEnv(Env[Observation, Action]):
    """Gymnasium-shaped recruitment environment; see ``docs/environments.md``."""

    def __init__(self, params: TaskParams):
        from clinbench.env.recruitment.macro import RecruitmentMacros

        self.params = params
        self.spec = EnvSpec(
            env="recruitment",
            task=params.name,
            version=TASK_VERSION,
            params=params,
            description=params.description,
        )
        self.macro_space = RecruitmentMacros(params)
        self._root_seq: np.random.SeedSequence | None = None
        self._canonical: World | None = None
        self._done = True
        self._world: World | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        # ``_state_row`` is a view of ``_pat``; pickling makes it a separate array.
        self.__dict__.update(state)
        if "_pat" in state:
            self._state_row = self._pat[ROW_STATE]

    # ------------------------------------------------------------------ public API
    @property
    def world(self) -> World:
        """The current world, hidden state included (for reference planners and tests)."""
        if self._world is None:
            raise RuntimeError("call reset() first")
        return self._world

    @property
    def day(self) -> int:
        return self._day

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Draw the world and outcome stream of ``seed`` and return day 0.

        ``options={"fixed_world": True}`` keeps the canonical world (seed 0) and varies
        only outcome luck.
        """
        seed, fixed = reset_arguments(seed, options)
        if seed is None:
            if self._root_seq is None:
                self._root_seq = np.random.SeedSequence()
            seq = self._root_seq.spawn(1)[0]
        else:
            seq = np.random.SeedSequence(seed)
        world_seq, outcome_seq = seq.spawn(2)
        if fixed:
            if self._canonical is None:
                canon_seq = np.random.SeedSequence(0).spawn(2)[0]
                self._canonical = draw_world(self.params, np.random.default_rng(canon_seq))
            self._world = self._canonical
        else:
            self._world = draw_world(self.params, np.random.default_rng(world_seq))
        self._rng = np.random.default_rng(outcome_seq)
        self._init_state()
        return self._observe(), {"seed": seed, "fixed_world": fixed, "error": None}

    def step(
        self, action: Action | dict[str, Any]
    ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Play one day. Invalid actions take the day, cost nothing and change nothing."""
        if self._done:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        a = as_action(action)
        self._retrieved = ()
        self._info = info = {"day": self._day, "error": None, "outcome": None}
        handler = self._HANDLERS[a.action_type]
        error = argument_error(a) or handler(self, a)
        if error is not None:
            info["error"] = error.value
        tokens = TOKEN_COSTS[a.action_type]
        self._tokens += tokens
        info["tokens"] = tokens
        if error is not ErrorCode.INVALID_ARGUMENT and (
            a.hypothesis is not None or a.confidence is not None
        ):
            self._hypotheses.append((self._day, a.hypothesis, a.confidence))
            info["hypothesis"] = {"hypothesis": a.hypothesis, "confidence": a.confidence}
        self._steps += 1
        if a.action_type is ActionType.STOP_RECRUITMENT and error is None:
            self._terminated_by = "stop"
            self._end_recruitment()
        else:
            self._advance_day()
            if self._day >= self.params.horizon:
                self._end_recruitment()
        now = self._score()
        reward = now - self._last_score
        self._last_score = now
        terminated = self._day >= self.params.horizon
        if terminated:
            self._done = True
            info["score_parts"] = self.score_parts()
            info["score"] = info["score_parts"]["score"]
            info["terminated_by"] = self._terminated_by
            info["net_enrolled"] = self._net
            info["budget_used"] = self.params.budget - self._budget
            info["steps"] = self._steps
        info["token_usage"] = self._tokens
        return self._observe(), reward, terminated, False, info

    def score_parts(self) -> dict[str, float]:
        """E, B, T and the score of the trial if it ended now."""
        p = self.params
        return score_parts(self._net, p.target, self._budget, p.budget, self._day_target, p.horizon)

    # ------------------------------------------------------------------ state
    def _init_state(self) -> None:
        p, w = self.params, self._world
        n, s = p.pool_size, p.n_sites
        self._day = 0
        self._steps = 0
        self._done = False
        self._terminated_by = "deadline"
        self._budget = float(p.budget)
        self._tokens = 0
        self._pat = np.zeros((5, n), dtype=np.int16)
        self._pat[ROW_STATE] = NOT_ARRIVED
        self._pat[ROW_LAST_CONTACT] = -1
        self._pat[ROW_RECONTACTS_LEFT] = p.max_recontacts
        self._pat[ROW_DEADLINE] = -1
        self._pat[ROW_HOME] = -1
        self._state_row = self._pat[ROW_STATE]
        self._counts = [n, 0, 0, 0, 0, 0, 0, 0, 0]
        self._screened = 0
        # arrivals: a site's patients join one heap on the shared arrival clock when it opens
        self._arr_clock = 0.0
        self._arr_heap: list[tuple[float, int]] = []
        self._opening = sorted((int(d), k) for k, d in enumerate(w.activation_day.tolist()))
        self._active = [False] * s
        # follow-up: each enrolment's fate (drop day or completion day) is known from the
        # calendar's hazard clock; patients leave follow-up on the scheduled day
        self._clock = w.hazard_clock.tolist()
        self._leaving: dict[int, list[tuple[int, bool]]] = {}  # day -> (patient, drops)
        self._site_of: dict[int, int] = {}
        self._consented: dict[int, int] = {}
        self._lapsed: set[int] = set()
        self._net = 0
        self._day_target: int | None = None
        self._dropout_days: deque[int] = deque()
        self._last_score = 0.0
        # sites
        self._cap_total = [p.site_capacity] * s
        self._cap_used = [0] * s
        self._site_active = [0] * s
        self._cum_att = [0] * s
        self._cum_succ = [0] * s
        self._cum_drop = [0] * s
        # Outcomes of the last ``history_window`` days per site: a log per day of
        # (row, site) with rows 0 attempts, 1 successes, 2 dropouts, and running sums.
        self._log: dict[int, list[tuple[int, int]]] = {}
        self._window = [[0] * s, [0] * s, [0] * s]
        self._site_rows: list[SiteView | None] = [None] * s
        self._sites_view: tuple[SiteView, ...] | None = None
        self._wait: list[float] | None = None  # set by _recompute_effects
        self._retention_mult = [(1.0 - r) / 0.125 for r in w.retention.tolist()]
        self._conversion = w.conversion.tolist()
        self._base_wait = w.wait_days.tolist()
        self._reported = w.reported_conversion.tolist()
        self._site_ids = [site_id(i) for i in range(s)]
        # effects (recomputed from the active lists whenever one starts or ends)
        #: active events: kind, site, end (excl.), magnitude, its EventKind, its constraint text
        self._effects: list[tuple[str, int, int, float, EventKind, str]] = []
        self._criteria = 1  # index into CRITERIA_LEVELS
        self._amendment: tuple[int, int] | None = None  # approval day, criteria step
        self._amendments_used = 0
        self._outreach_until = -1
        self._focus: tuple[int, int] | None = None  # site, end (excl.)
        self._negotiations: list[tuple[int, int]] = []  # ready day, site
        self._events_so_far: list[EventView] = []
        self._recent_events: tuple[EventView, ...] = ()
        self._memory: dict[str, MemoryRecord] = {}
        self._memory_summary: tuple[tuple[str, int], ...] = ()
        self._retrieved: tuple[MemoryRecord, ...] = ()
        self._plan: tuple[str, str, int] | None = None
        self._hypotheses: list[tuple[int, str | None, float | None]] = []
        self._milestone_days: list[int | None] = [None] * len(MILESTONES)
        self._milestone_counts = [max(1, math.ceil(f * p.target)) for _, f in MILESTONES]
        self._milestones = tuple((m[0], None) for m in MILESTONES)
        self._open_sites()
        self._recompute_effects()

    def _recompute_effects(self) -> None:
        """Derive every multiplier from the active effects (so all of them fully recover).

        What each event does is data (``tasks.EVENTS``); this only multiplies it out."""
        p, s, day = self.params, self.params.n_sites, self._day
        hold = False
        consent = arrival = elig = screen_cost = 1.0
        extra_wait = [0.0] * s
        cut = [0] * s
        audit = [False] * s
        constraints = []
        for _, site, _, mag, e, text in self._effects:
            constraints.append(text)
            hold = hold or e.hold
            consent *= e.consent
            arrival *= e.arrival
            elig *= e.eligibility
            screen_cost *= e.screen_cost
            if site >= 0:
                extra_wait[site] += mag
                cut[site] += math.ceil(e.capacity_cut * self._cap_total[site])
                audit[site] = audit[site] or e.closes_site
        outreach = day < self._outreach_until
        if outreach:
            arrival *= p.outreach_arrival_multiplier
            consent *= p.outreach_consent_multiplier
            constraints.append(f"increase_outreach until day {self._outreach_until}")
        crit = CRITERIA_LEVELS[self._criteria]
        if crit == "relaxed":
            elig *= p.relax_eligibility_multiplier
        elif crit == "tight":
            elig *= p.tighten_eligibility_multiplier
        if crit != "normal":
            constraints.append(f"criteria_{crit}")
        if self._amendment is not None:
            change = "relax_criteria" if self._amendment[1] > 0 else "tighten_criteria"
            constraints.append(f"{change} amendment under review")
        focus = self._focus[0] if self._focus is not None and day < self._focus[1] else -1
        if focus >= 0:
            constraints.append(f"focus_site_{SITE_LETTERS[focus]} until day {self._focus[1]}")
        for ready, site in self._negotiations:
            constraints.append(f"negotiate_site_{SITE_LETTERS[site]} ready on day {ready}")
        self._uncertainty = min(1.0, 0.25 * len(self._effects))
        self._hold = hold
        self._consent_mult = consent
        self._arrival_mult = arrival
        self._elig_mult = elig
        wait = [
            (self._base_wait[i] + extra_wait[i]) * (0.5 if i == focus else 1.0) for i in range(s)
        ]
        if self._wait is not None:
            old_focus = self._focus_site
            for i in range(s):
                if (
                    wait[i] != self._wait[i]
                    or cut[i] != self._cap_cut[i]
                    or audit[i] != self._audit[i]
                    or (i == focus) != (i == old_focus)
                ):
                    self._touch(i)
        else:
            self._site_rows = [None] * s
        self._wait = wait
        self._cap_cut = cut
        self._audit = audit
        self._focus_site = focus
        self._constraints = tuple(constraints)
        self._costs = Costs(
            screen=p.screen_cost * screen_cost,
            recontact=p.recontact_cost,
            enrol=p.enrol_cost,
            strategy=p.strategy_cost,
            negotiate=p.strategy_cost * p.negotiate_cost_multiplier,
            amendment=p.strategy_cost * p.amendment_cost_multiplier,
        )

    def _capacity_remaining(self, s: int) -> int:
        return max(0, self._cap_total[s] - self._cap_cut[s] - self._cap_used[s])

    def _set_state(self, i: int, new: int) -> None:
        self._counts[self._state_row[i]] -= 1
        self._counts[new] += 1
        self._state_row[i] = new

    # ------------------------------------------------------------------ days
    def _end_recruitment(self) -> None:
        """Recruitment is over (stop or deadline): follow every patient still in follow-up
        to its end with the same hazard, in this one step, so the return stays the score."""
        for day in sorted(self._leaving):
            for i, drops in self._leaving[day]:
                if drops:
                    self._drop_out(i, day - 1, in_window=False)
                else:
                    self._set_state(i, COMPLETED)
        self._leaving.clear()
        self._day = self.params.horizon
        if self._opening:  # the deadline's view: every site has opened by now
            self._open_sites()

    def _open_sites(self) -> None:
        """Open the sites whose activation day has come; their patients start arriving."""
        opening, day = self._opening, self._day
        while opening and opening[0][0] <= day:
            _, k = opening.pop(0)
            self._active[k] = True
            times, idx = self._world.site_arrivals[k]
            heap, now = self._arr_heap, self._arr_clock
            for t, i in zip(times.tolist(), idx.tolist(), strict=True):
                heapq.heappush(heap, (now + t, i))
            self._touch(k)

    def _advance_day(self) -> None:
        """End the current day: arrivals, follow-up, the day's events; then the next day."""
        p, w, day = self.params, self._world, self._day
        # arrivals through the open sites
        self._arr_clock += self._arrival_mult
        heap = self._arr_heap
        while heap and heap[0][0] <= self._arr_clock:
            _, i = heapq.heappop(heap)
            self._set_state(i, AVAILABLE)
            self._pat[ROW_HOME, i] = w.home_site[i]
        # patients leaving follow-up (dropouts of today, completions of tomorrow)
        leaving = self._leaving.pop(day + 1, None)
        if leaving:
            for i, drops in leaving:
                if drops:
                    self._drop_out(i, day)
                else:
                    self._set_state(i, COMPLETED)
        # the day's events (visible from tomorrow)
        changed = False
        for ev in w.calendar.get(day, ()):
            end = day + 1 + ev.duration
            where = f" at {site_id(ev.site)}" if ev.site >= 0 else ""
            text = f"{ev.kind}{where} until day {end}"
            self._effects.append((ev.kind, ev.site, end, ev.magnitude, EVENTS[ev.kind], text))
            self._events_so_far.append(
                EventView(day, ev.kind, site_id(ev.site) if ev.site >= 0 else None, ev.duration)
            )
            changed = True
        self._day = day = day + 1
        if self._opening and self._opening[0][0] <= day:
            self._open_sites()
        # expiries
        if any(e[2] <= day for e in self._effects):
            self._effects = [e for e in self._effects if e[2] > day]
            changed = True
        if self._outreach_until == day or (self._focus is not None and self._focus[1] == day):
            changed = True
        if self._amendment is not None and self._amendment[0] <= day:
            self._criteria += self._amendment[1]
            self._amendment = None
            changed = True
        if self._negotiations and self._negotiations[0][0] <= day:
            while self._negotiations and self._negotiations[0][0] <= day:
                _, s = self._negotiations.pop(0)
                self._cap_total[s] += p.negotiate_slots
                self._touch(s)
            changed = True
        if changed:
            self._recompute_effects()
        lo = day - p.history_window
        if changed or (self._recent_events and self._recent_events[0].day < lo):
            self._recent_events = self._events_since(lo)
        expired = self._log.pop(day - 1 - p.history_window, None)
        if expired:
            for row, k in expired:
                self._window[row][k] -= 1
                self._touch(k)
        # consent lapses
        if self._consented:
            for i, deadline in list(self._consented.items()):
                if deadline <= day:
                    del self._consented[i]
                    if i in self._lapsed:
                        self._set_state(i, LOST)
                    else:
                        self._lapsed.add(i)
                        self._set_state(i, ELIGIBLE)
                        self._pat[ROW_RECONTACTS_LEFT, i] = 1
                        self._pat[ROW_DEADLINE, i] = -1

    def _events_since(self, lo: int) -> tuple[EventView, ...]:
        recent = []
        for e in reversed(self._events_so_far):
            if e.day < lo:
                break
            recent.append(e)
        return tuple(reversed(recent))

    def _drop_out(self, i: int, day: int, in_window: bool = True) -> None:
        """Patient ``i`` drops out on ``day``; ``in_window=False`` for the dropouts resolved
        when recruitment ends (they count, but are no recent site outcome)."""
        s = self._site_of[i]
        self._set_state(i, DROPPED_OUT)
        self._net -= 1
        self._site_active[s] -= 1
        self._cum_drop[s] += 1
        if in_window:
            self._record(2, s, day)
            self._dropout_days.append(day)
        self._touch(s)
        if self._net < self.params.target:
            self._day_target = None

    def _enrol(self, i: int, s: int) -> None:
        p, w = self.params, self._world
        self._set_state(i, ENROLLED)
        del self._consented[i]
        self._site_of[i] = s
        self._cap_used[s] += 1
        self._site_active[s] += 1
        crit = CRITERIA_LEVELS[self._criteria]
        crit_mult = (
            p.relax_dropout_multiplier
            if crit == "relaxed"
            else p.tighten_dropout_multiplier
            if crit == "tight"
            else 1.0
        )
        h = p.dropout_base * float(w.dropout_risk[i]) * self._retention_mult[s] * crit_mult
        # Drops at the first day start whose cumulative hazard reaches the patient's Exp(1)
        # threshold, if that comes within follow-up; else completes follow-up.
        day, end = self._day, self._day + p.followup_days
        drop_day = end + 1
        if h > 0.0:  # dropout_base=0 (or a zero multiplier): nobody drops out
            need = self._clock[day] + float(w.dropout_clock[i]) / h
            drop_day = bisect.bisect_left(self._clock, need, day + 1)
        if drop_day <= end:
            self._leaving.setdefault(drop_day, []).append((i, True))
        else:
            self._leaving.setdefault(max(end, day + 1), []).append((i, False))
        self._net += 1
        if self._net >= p.target and self._day_target is None:
            self._day_target = self._day
        for k, need in enumerate(self._milestone_counts):
            if self._milestone_days[k] is None and self._net >= need:
                self._milestone_days[k] = self._day
                self._milestones = tuple(
                    (m[0], d) for m, d in zip(MILESTONES, self._milestone_days, strict=True)
                )

    # ------------------------------------------------------------------ actions
    def _patient(self, a: Action) -> tuple[int, ErrorCode | None]:
        pid = a.patient_id
        if pid is None or pid == "":
            return -1, ErrorCode.MISSING_PATIENT_ID
        if not isinstance(pid, str) or len(pid) > 12 or _PATIENT_ID.fullmatch(pid) is None:
            return -1, ErrorCode.PATIENT_NOT_FOUND
        i = int(pid[2:]) - PATIENT_ID_OFFSET
        if not 0 <= i < self.params.pool_size:
            return -1, ErrorCode.PATIENT_NOT_FOUND
        st = self._state_row[i]
        if st == NOT_ARRIVED:
            return i, ErrorCode.PATIENT_NOT_ARRIVED
        if st == DROPPED_OUT or st == LOST:
            return i, ErrorCode.PATIENT_DROPPED
        if st == ENROLLED or st == COMPLETED:
            return i, ErrorCode.ALREADY_ENROLLED
        return i, None

    def _site(self, sid: str | None) -> tuple[int, ErrorCode | None]:
        if sid is None or sid == "":
            return -1, ErrorCode.MISSING_SITE_ID
        if not isinstance(sid, str) or not sid.startswith("site_") or len(sid) != 6:
            return -1, ErrorCode.SITE_NOT_FOUND
        s = SITE_LETTERS.find(sid[5])
        if not 0 <= s < self.params.n_sites:
            return -1, ErrorCode.SITE_NOT_FOUND
        return s, None

    def _pay(self, cost: float) -> bool:
        if cost > self._budget + 1e-9:
            return False
        self._budget = max(0.0, self._budget - cost)
        return True

    def _screen(self, a: Action) -> ErrorCode | None:
        i, err = self._patient(a)
        if err is not None:
            return err
        if self._state_row[i] != AVAILABLE:
            return ErrorCode.ALREADY_SCREENED
        if self._hold:
            return ErrorCode.REGULATORY_HOLD_ACTIVE
        if not self._pay(self._costs.screen):
            return ErrorCode.INSUFFICIENT_BUDGET
        w = self._world
        self._screened += 1
        self._pat[ROW_LAST_CONTACT, i] = self._day
        if w.eligibility_u[i] >= w.eligibility[i] * self._elig_mult:
            self._set_state(i, INELIGIBLE)
            self._info["outcome"] = "ineligible"
            return None
        if self._rng.random() < w.willingness[i] * self._consent_mult:
            self._consent(i)
            self._info["outcome"] = "consented"
        else:
            self._set_state(i, ELIGIBLE)
            self._info["outcome"] = "eligible"
        return None

    def _consent(self, i: int) -> None:
        self._set_state(i, CONSENTED)
        # usable on the next ``consent_window`` days, lapsing at the start of the day after
        deadline = self._day + self.params.consent_window + 1
        self._consented[i] = deadline
        self._pat[ROW_DEADLINE, i] = deadline

    def _recontact(self, a: Action) -> ErrorCode | None:
        i, err = self._patient(a)
        if err is not None:
            return err
        st = self._state_row[i]
        if st != ELIGIBLE and st != CONSENTED:
            return ErrorCode.NOT_A_RECONTACT_CANDIDATE
        if not self._pay(self.params.recontact_cost):
            return ErrorCode.INSUFFICIENT_BUDGET
        p, day = self.params, self._day
        last = int(self._pat[ROW_LAST_CONTACT, i])
        self._pat[ROW_LAST_CONTACT, i] = day
        if st == CONSENTED:
            self._consent(i)
            self._info["outcome"] = "renewed"
            return None
        cooled = p.cooloff_decay ** max(0, day - last - p.cooloff_days)
        if self._rng.random() < self._world.willingness[i] * cooled * self._consent_mult:
            self._consent(i)
            self._info["outcome"] = "consented"
            return None
        left = int(self._pat[ROW_RECONTACTS_LEFT, i]) - 1
        self._pat[ROW_RECONTACTS_LEFT, i] = left
        if left <= 0:
            self._set_state(i, LOST)
            self._info["outcome"] = "declined"
        else:
            self._info["outcome"] = "no_consent"
        return None

    def _allocate(self, a: Action) -> ErrorCode | None:
        i, err = self._patient(a)
        if err is not None:
            return err
        if self._state_row[i] != CONSENTED:
            return ErrorCode.NOT_CONSENTED
        s, err = self._site(a.site_id)
        if err is not None:
            return err
        if not self._active[s]:
            return ErrorCode.SITE_NOT_ACTIVE
        if self._audit[s]:
            return ErrorCode.SITE_UNDER_AUDIT
        if self._capacity_remaining(s) <= 0:
            return ErrorCode.SITE_AT_CAPACITY
        p, day = self.params, self._day
        if self._costs.enrol > self._budget + 1e-9:
            return ErrorCode.INSUFFICIENT_BUDGET
        self._cum_att[s] += 1
        self._record(0, s, day)
        p_success = self._conversion[s] / (1.0 + p.wait_penalty * self._wait[s])
        if s != self._world.home_site[i]:
            p_success *= p.other_site_conversion
        if self._rng.random() < p_success:
            self._pay(self._costs.enrol)
            self._cum_succ[s] += 1
            self._record(1, s, day)
            self._enrol(i, s)
            self._info["outcome"] = "enrolled"
        elif self._rng.random() < p.loss_on_failed_allocation:
            del self._consented[i]
            self._set_state(i, LOST)
            self._info["outcome"] = "lost"
        else:
            self._info["outcome"] = "not_enrolled"
        return None

    def _adjust(self, a: Action) -> ErrorCode | None:
        p, day = self.params, self._day
        change = a.strategy_change if isinstance(a.strategy_change, str) else ""
        if change == "increase_outreach":
            if not self._pay(self._costs.strategy):
                return ErrorCode.INSUFFICIENT_BUDGET
            self._outreach_until = day + p.outreach_days
        elif change in AMENDMENTS:
            # A protocol amendment: a larger fee, and it acts only once approved.
            step = AMENDMENTS[change]
            if self._amendment is not None:
                return ErrorCode.AMENDMENT_PENDING
            if not 0 <= self._criteria + step < len(CRITERIA_LEVELS):
                return ErrorCode.STRATEGY_ALREADY_ACTIVE
            if self._amendments_used >= p.max_amendments:
                return ErrorCode.AMENDMENT_LIMIT_REACHED
            if not self._pay(self._costs.amendment):
                return ErrorCode.INSUFFICIENT_BUDGET
            lo, hi = p.amendment_delay
            self._amendment = (day + int(self._rng.integers(lo, hi + 1)), step)
            self._amendments_used += 1
        elif (site_change := _SITE_STRATEGY.fullmatch(change)) is not None:
            negotiate = site_change.group(1) == "negotiate"
            s, err = self._site("site_" + site_change.group(2))
            if err is not None:
                return err
            cost = self._costs.negotiate if negotiate else self._costs.strategy
            if not self._pay(cost):
                return ErrorCode.INSUFFICIENT_BUDGET
            if negotiate:
                self._negotiations.append((day + p.negotiate_delay, s))
            else:
                self._focus = (s, day + p.focus_days)
        else:
            return ErrorCode.UNKNOWN_STRATEGY
        self._info["outcome"] = change
        self._recompute_effects()
        return None

    def _plan_phase(self, a: Action) -> ErrorCode | None:
        if a.target_phase not in PHASES:
            return ErrorCode.INVALID_TARGET_PHASE
        self._plan = (a.target_phase, str(a.plan_summary or ""), self._day)
        return None

    def _summarize(self, a: Action) -> ErrorCode | None:
        key = a.memory_key.strip() if isinstance(a.memory_key, str) else ""
        if not key:
            return ErrorCode.MISSING_MEMORY_KEY
        record = MemoryRecord(
            key=key,
            day=self._day,
            payload=str(a.memory_payload or ""),
            site_attempts=tuple(self._cum_att),
            site_successes=tuple(self._cum_succ),
            site_dropouts=tuple(self._cum_drop),
            funnel=self._funnel(),
            events=tuple(self._events_so_far),
        )
        if key in self._memory:
            del self._memory[key]
            self._info["memory_overwritten"] = key
        elif len(self._memory) >= self.params.memory_capacity:
            oldest = next(iter(self._memory))
            del self._memory[oldest]
            self._info["memory_evicted"] = oldest
        self._memory[key] = record
        self._memory_summary = tuple((k, r.day) for k, r in self._memory.items())
        return None

    def _retrieve(self, a: Action) -> ErrorCode | None:
        query = a.memory_query.strip() if isinstance(a.memory_query, str) else ""
        if not query:
            return ErrorCode.MISSING_MEMORY_QUERY
        if query in self._memory:
            found = [self._memory[query]]
        else:
            words = set(_WORDS.findall(query.lower()))
            found = [
                r
                for r in reversed(self._memory.values())
                if words & set(_WORDS.findall(f"{r.key} {r.payload}".lower()))
            ][:3]
        if not found:
            return ErrorCode.MEMORY_NOT_FOUND
        self._retrieved = tuple(found)
        return None

    def _stop(self, a: Action) -> ErrorCode | None:
        return None

    _HANDLERS: ClassVar[dict[ActionType, Callable[..., ErrorCode | None]]] = {
        ActionType.SCREEN_PATIENT: _screen,
        ActionType.RECONTACT: _recontact,
        ActionType.ALLOCATE_TO_SITE: _allocate,
        ActionType.ADJUST_STRATEGY: _adjust,
        ActionType.PLAN_NEXT_PHASE: _plan_phase,
        ActionType.SUMMARIZE_AND_INDEX: _summarize,
        ActionType.RETRIEVE_RELEVANT_HISTORY: _retrieve,
        ActionType.STOP_RECRUITMENT: _stop,
    }

    # ------------------------------------------------------------------ views
    def _score(self) -> float:
        p = self.params
        return score(self._net, p.target, self._budget, p.budget, self._day_target, p.horizon)

    def _funnel(self) -> Funnel:
        return Funnel(*self._counts, self._screened)

    def _record(self, row: int, s: int, day: int) -> None:
        """Count an attempt / success / dropout at site ``s`` in the recent window."""
        self._log.setdefault(day, []).append((row, s))
        self._window[row][s] += 1
        self._touch(s)

    def _touch(self, s: int) -> None:
        """Site ``s`` changed: rebuild its view (only its) for the next observation."""
        self._site_rows[s] = None
        self._sites_view = None

    def _sites(self) -> tuple[SiteView, ...]:
        if self._sites_view is None:
            rows = self._site_rows
            att, succ, drop = self._window
            rep, ids, focus = self._reported, self._site_ids, self._focus_site
            total, cut, used = self._cap_total, self._cap_cut, self._cap_used
            wait, active, audit, opened = self._wait, self._site_active, self._audit, self._active
            for s, row in enumerate(rows):
                if row is None:
                    # Positional SiteView fields, in order (see observation.SiteView).
                    rows[s] = SiteView(
                        ids[s],
                        wait[s],
                        max(0, total[s] - cut[s] - used[s]),  # _capacity_remaining(s)
                        total[s],
                        att[s],
                        succ[s],
                        drop[s],
                        active[s],
                        rep[s],
                        audit[s],
                        s == focus,
                        opened[s],
                    )
            self._sites_view = tuple(rows)
        return self._sites_view

    def _pending_amendment(self) -> str | None:
        if self._amendment is None:
            return None
        return "relax_criteria" if self._amendment[1] > 0 else "tighten_criteria"

    def _observe(self) -> Observation:
        p, day = self.params, self._day
        drops = self._dropout_days
        while drops and drops[0] < day - 7:
            drops.popleft()
        return Observation.from_fields(
            {
                "timestamp": day,
                "max_steps": p.horizon,
                "task_id": p.name,
                "budget_remaining": self._budget,
                "initial_budget": p.budget,
                "enrolled_so_far": self._net,
                "target_enrollment": p.target,
                "funnel": self._funnel(),
                "sites": self._sites(),
                "costs": self._costs,
                "recent_events": self._recent_events,
                "dropout_rate_7d": len(drops) / max(1, self._net + len(drops)),
                "uncertainty_level": self._uncertainty,
                "active_constraints": self._constraints,
                "milestones": self._milestones,
                "current_plan": self._plan,
                "indexed_memory_summary": self._memory_summary,
                "retrieved_memory_context": self._retrieved,
                "token_usage_so_far": self._tokens,
                "hold_active": self._hold,
                "criteria": CRITERIA_LEVELS[self._criteria],
                "outreach_active": day < self._outreach_until,
                "pending_negotiations": len(self._negotiations),
                "pending_amendment": self._pending_amendment(),
                "amendments_left": p.max_amendments - self._amendments_used,
                "memory_capacity": p.memory_capacity,
                "max_listed": p.max_listed,
                "visible": self._world.visible,
                "patients": _read_only(self._pat.copy()),
            }
        )


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
