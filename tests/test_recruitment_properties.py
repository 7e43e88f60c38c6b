"""Invariants of the recruitment simulator under arbitrary action sequences.

Hypothesis draws a task, a seed, some parameter overrides and a day-by-day script
mixing valid macro-actions with raw actions carrying random or garbage arguments
(sometimes a stop); the invariants below are checked after every step.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clinbench.env import make
from clinbench.env.recruitment import TASKS, Action, ActionType
from clinbench.env.recruitment.actions import GLOBAL_STRATEGIES, PHASES, ErrorCode
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
    ROW_HOME,
    ROW_STATE,
    STATE_NAMES,
)
from clinbench.env.recruitment.simulator import AMENDMENTS, TOKEN_COSTS
from clinbench.env.recruitment.world import PATIENT_ID_OFFSET, SITE_LETTERS, World, patient_id

FINAL_STATES = (INELIGIBLE, DROPPED_OUT, LOST, COMPLETED)
RAW_TYPES = [t for t in ActionType if t is not ActionType.STOP_RECRUITMENT]
GARBAGE_TEXT = st.text(max_size=8)
KEYS = st.sampled_from(["alpha", "beta", "site A", "day-3", "", "  "]) | GARBAGE_TEXT

patient_ids = st.one_of(
    st.none(),
    st.integers(-3, 503).map(lambda k: f"P-{PATIENT_ID_OFFSET + k}"),  # around every pool's ids
    st.sampled_from(["P-", "P-01000", "p-1000", "P-1000 ", "P-+1000", "1000"]),
    GARBAGE_TEXT,
    st.integers(),
)
site_ids = st.one_of(
    st.none(),
    st.sampled_from(["site_A", "site_B", "site_C", "site_E", "site_F", "site_Z", "site_a", "A"]),
    GARBAGE_TEXT,
)
strategies = st.one_of(
    st.none(),
    st.sampled_from(list(GLOBAL_STRATEGIES)),
    st.builds(
        lambda kind, x: f"{kind}_site_{x}",
        st.sampled_from(["focus", "negotiate"]),
        st.sampled_from(["A", "B", "C", "E", "F", "a", "", "AB"]),
    ),
    GARBAGE_TEXT,
)
raw_actions = st.builds(
    Action,
    action_type=st.sampled_from(RAW_TYPES),
    patient_id=patient_ids,
    site_id=site_ids,
    strategy_change=strategies,
    target_phase=st.one_of(st.none(), st.sampled_from(PHASES), GARBAGE_TEXT),
    plan_summary=st.one_of(st.none(), GARBAGE_TEXT),
    memory_key=KEYS,
    memory_payload=st.one_of(st.none(), GARBAGE_TEXT),
    memory_query=KEYS,
    hypothesis=st.one_of(st.none(), GARBAGE_TEXT),
    confidence=st.one_of(st.none(), st.floats(allow_nan=False)),
)
# Optionally aim a raw action at the k-th patient in some state (lost, enrolled, ...),
# which garbage ids would rarely hit.
aims = st.one_of(st.none(), st.tuples(st.integers(0, len(STATE_NAMES) - 1), st.integers(0, 50)))


class AllocateAt(NamedTuple):
    """A day that allocates the first consented patient to the k-th site, open or not."""

    k: int


# One day of the script: a funnel macro-action by name (so that patients move along),
# a protocol amendment, an index into the valid macro-actions, an allocation to any
# site (open or not yet), or a raw action.
FUNNEL = ("screen_best", "recontact_urgent", "allocate_urgent")
days = st.one_of(
    st.sampled_from(FUNNEL),
    st.sampled_from(sorted(AMENDMENTS)),
    st.integers(0, 1000),
    st.integers(0, 25).map(AllocateAt),
    st.tuples(raw_actions, aims),
    st.tuples(raw_actions, aims),  # twice as likely: most error codes come from these
)
overrides = st.fixed_dictionaries(
    {},
    optional={
        "budget": st.sampled_from([3_000.0, 15_000.0, 40_000.0]),
        "site_capacity": st.integers(0, 4),
        # task version 2: site start-up and rates, follow-up, amendments
        "activation_span": st.sampled_from([0, 60]),
        "never_enrol_prob": st.sampled_from([0.0, 0.5]),
        "site_rate_cv": st.sampled_from([0.0, 1.5]),
        "followup_days": st.sampled_from([0, 1, 10]),
        "dropout_base": st.sampled_from([0.0, 0.05]),
        "amendment_delay": st.sampled_from([(0, 0), (1, 3)]),
        "max_amendments": st.integers(0, 2),
        "event_rates": st.sampled_from(
            [{}, {"regulatory_hold": 0.2, "site_audit": 0.2, "capacity_cut": 0.2}]
        ),
    },
)


def choose(day, env, obs) -> Action:
    """The action of one scripted day (macro indices pick among the valid ones, no stop;
    a funnel macro-action that is not valid today falls back to the first valid one)."""
    if isinstance(day, AllocateAt):
        idx = obs.allocation_idx
        return Action(
            ActionType.ALLOCATE_TO_SITE,
            patient_id=patient_id(int(idx[0])) if idx.size else None,
            site_id=f"site_{SITE_LETTERS[day.k % env.params.n_sites]}",
        )
    if isinstance(day, str) and day in AMENDMENTS:
        return Action(ActionType.ADJUST_STRATEGY, strategy_change=day)
    if isinstance(day, tuple):
        action, aim = day
        if aim is not None:
            idx = np.flatnonzero(obs.patients[ROW_STATE] == aim[0])
            if idx.size:
                return replace(action, patient_id=patient_id(int(idx[aim[1] % idx.size])))
        return action
    macros = env.macro_space
    mask = macros.mask(obs)
    if isinstance(day, str):
        k = macros.index[day]
        day = k if mask[k] else 0
    valid = np.flatnonzero(mask[:-1])
    return macros.to_action(int(valid[day % valid.size]), obs)


def expected_charge(prev, action: Action, info) -> float:
    """Money a valid action pays, at the prices shown the day it was taken."""
    c, kind = prev.costs, action.action_type
    if info["error"] is not None:
        return 0.0
    if kind is ActionType.SCREEN_PATIENT:
        return c.screen
    if kind is ActionType.RECONTACT:
        return c.recontact
    if kind is ActionType.ALLOCATE_TO_SITE:
        return c.enrol if info["outcome"] == "enrolled" else 0.0
    if kind is ActionType.ADJUST_STRATEGY:
        if action.strategy_change in AMENDMENTS:
            return c.amendment
        return c.negotiate if action.strategy_change.startswith("negotiate_") else c.strategy
    return 0.0


def ever_enrolled(obs) -> int:
    """Patients ever enrolled: in follow-up, completed or dropped out."""
    return obs.funnel.enrolled + obs.funnel.completed + obs.funnel.dropped_out


def site_of(action: Action, params) -> int:
    """The index of the site an action names, else -1."""
    sid = action.site_id
    if type(sid) is str and len(sid) == 6 and sid.startswith("site_"):
        s = SITE_LETTERS.find(sid[5])
        return s if 0 <= s < params.n_sites else -1
    return -1


def check_state(obs, params, world: World, terminal: bool) -> None:
    """Invariants of one observation."""
    assert 0.0 <= obs.budget_remaining <= obs.initial_budget
    f, n_states = obs.funnel, len(STATE_NAMES)
    states = obs.patients[ROW_STATE]
    # each patient is in exactly one known state, and the funnel is a recount of them
    assert 0 <= states.min() and states.max() < n_states
    assert sum(f[:n_states]) == params.pool_size
    assert list(np.bincount(states, minlength=n_states)) == list(f[:n_states])
    # Every transition out of `available` is a screening, and no state leads back to
    # `available` or `not_arrived` (lost, dropped-out and completed patients were
    # screened first); so each patient past them was screened exactly once:
    #   screened == ineligible + eligible + consented + enrolled + completed
    #               + dropped_out + lost
    #            == pool_size - not_arrived - available
    past = f.ineligible + f.eligible + f.consented + f.enrolled + f.completed
    past += f.dropped_out + f.lost
    assert f.screened == past == params.pool_size - f.not_arrived - f.available
    # net enrolment: in follow-up plus completed; nobody is left in follow-up at the end
    assert obs.enrolled_so_far == f.enrolled + f.completed
    assert sum(s.active_enrolled for s in obs.sites) == f.enrolled + f.completed
    if terminal:
        assert f.enrolled == 0
    assert ever_enrolled(obs) <= sum(s.capacity_total for s in obs.sites)
    for s, site in enumerate(obs.sites):
        assert 0 <= site.capacity_remaining <= site.capacity_total
        if not terminal:  # a site shows open from its activation day on
            assert site.active == (obs.timestamp >= world.activation_day[s])
        if not site.active:  # nobody was ever allocated there
            assert site.recent_attempts == site.active_enrolled == site.recent_dropouts == 0
    # a patient's home site is shown from their arrival on, and it is an open site
    homes, here = obs.patients[ROW_HOME], states != NOT_ARRIVED
    assert np.all(homes[~here] == -1)
    assert np.array_equal(homes[here], world.home_site[here])
    assert all(obs.sites[h].active for h in np.unique(homes[here]).tolist())
    listed = params.max_listed
    for view, state, count in (
        (obs.available_patients, AVAILABLE, f.available),
        (obs.recontact_candidates, ELIGIBLE, f.eligible),
        (obs.allocation_candidates, CONSENTED, f.consented),
    ):
        assert len(view) == min(count, listed)
        assert all(states[int(p["id"][2:]) - PATIENT_ID_OFFSET] == state for p in view)


def check_step(prev, action, obs, reward, terminated, truncated, info, params) -> None:
    """Invariants of one transition."""
    s = site_of(action, params)
    if action.action_type is ActionType.ALLOCATE_TO_SITE and s >= 0 and not prev.sites[s].active:
        assert info["error"] is not None  # never an allocation at a site not yet open
    if info["error"] == ErrorCode.SITE_NOT_ACTIVE.value:
        assert s >= 0 and not prev.sites[s].active
    assert math.isfinite(reward)
    assert truncated is False
    if action.action_type is ActionType.STOP_RECRUITMENT:
        assert obs.timestamp == params.horizon
    else:
        assert obs.timestamp == prev.timestamp + 1
    assert terminated == (obs.timestamp == params.horizon)
    charge = expected_charge(prev, action, info)
    assert prev.budget_remaining - obs.budget_remaining == pytest.approx(charge, abs=1e-6)
    assert obs.token_usage_so_far == prev.token_usage_so_far + TOKEN_COSTS[action.action_type]
    # ineligible, dropped-out and lost patients stay so
    was, now = prev.patients[ROW_STATE], obs.patients[ROW_STATE]
    final = np.isin(was, FINAL_STATES)
    assert np.array_equal(now[final], was[final])
    # only a successful allocation enrols (recontact never does), one patient at a time
    assert ever_enrolled(obs) - ever_enrolled(prev) == (info["outcome"] == "enrolled")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    task=st.sampled_from(list(TASKS)),
    seed=st.integers(0, 2**16),
    extra=overrides,
    script=st.lists(days, min_size=1, max_size=40),
    stop_day=st.one_of(st.none(), st.integers(0, 200)),
)
def test_invariants_hold_under_any_action_sequence(task, seed, extra, script, stop_day):
    env = make(f"recruitment/{task}", **extra)
    params = env.params
    obs, _ = env.reset(seed=seed)
    world = env.world
    assert obs.funnel.not_arrived == params.pool_size  # nobody is there on day 0
    check_state(obs, params, world, terminal=False)
    total, done, t = 0.0, False, 0
    enrolled_on: dict[int, int] = {}  # patient -> day of their successful allocation
    while not done:
        if t == stop_day:
            action = Action(ActionType.STOP_RECRUITMENT)
        else:
            action = choose(script[t % len(script)], env, obs)
        prev = obs
        obs, reward, done, truncated, info = env.step(action)
        check_step(prev, action, obs, reward, done, truncated, info, params)
        check_state(obs, params, world, terminal=done)
        if info["outcome"] == "enrolled":
            enrolled_on[int(action.patient_id[2:]) - PATIENT_ID_OFFSET] = prev.timestamp
        # every enrolment is in follow-up, completed or dropped out, and leaves follow-up
        # within ``followup_days``
        assert ever_enrolled(obs) == len(enrolled_on)
        if enrolled_on:
            who = np.fromiter(enrolled_on, dtype=np.int64)
            since = obs.timestamp - np.fromiter(enrolled_on.values(), dtype=np.int64)
            states = obs.patients[ROW_STATE, who]
            assert np.all(np.isin(states, (ENROLLED, COMPLETED, DROPPED_OUT)))
            assert not np.any((states == ENROLLED) & (since >= params.followup_days))
        total += reward
        t += 1
    assert total == pytest.approx(info["score"], abs=1e-9)
    assert 0.0 <= info["score"] <= 1.0
    assert info["net_enrolled"] == obs.funnel.completed
