"""Regression tests: the flaws of the reference benchmark (spec section 1) and of task
version 1 (spec section 11) stay fixed, and the mechanics of version 2 work as stated.

Each test states the behaviour it rules out. They play the public API (``make`` /
``reset`` / ``step``) and read ``env.world`` (the hidden truth) only to know what the
right answer is.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.recruitment import TASKS, Action, ActionType, ErrorCode
from clinbench.env.recruitment.macro import best_screen_candidate
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
)
from clinbench.env.recruitment.simulator import TOKEN_COSTS
from clinbench.env.recruitment.tasks import EVENT_TYPES, EVENTS
from clinbench.env.recruitment.world import PATIENT_ID_OFFSET, World, patient_id, site_id
from clinbench.episode import play_episode

TASK_NAMES = tuple(TASKS)
SEEDS = (3, 11, 27)
CALIBRATION_SEEDS = tuple(range(500, 530))
#: Agents are reset with a seed of their own, never the world seed (spec section 11).
AGENT_SEED_OFFSET = 10_000
Policy = Callable[..., Action]
PLAN = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening")


# ---------------------------------------------------------------- helpers
class Scripted:
    """A policy function as an agent for ``play_episode``."""

    def __init__(self, choose: Policy):
        self.choose = choose

    def reset(self, seed=None) -> None:
        pass

    def act(self, obs) -> Action:
        return self.choose(obs)


def do_nothing(obs) -> Action:
    return PLAN


def stop_at_once(obs) -> Action:
    return Action(ActionType.STOP_RECRUITMENT)


def screen_only(obs) -> Action:
    """Screen every arrival that can be screened; never allocate."""
    idx = obs.available_idx
    if idx.size and not obs.hold_active and obs.budget_remaining >= obs.costs.screen:
        return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(int(idx[0])))
    return do_nothing(obs)


def heuristic(env, seed: int) -> Policy:
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(AGENT_SEED_OFFSET + seed)
    return agent.act


def random_policy(env, seed: int) -> Policy:
    agent = make_agent("random", AgentContext.of(env))
    agent.reset(AGENT_SEED_OFFSET + seed)
    return agent.act


def idle_then(days: int, choose: Policy) -> Policy:
    """The idle-k-days policy: do nothing for ``days`` days, then ``choose``."""
    return lambda obs: do_nothing(obs) if obs.timestamp < days else choose(obs)


def rollout(env, choose: Policy, seed: int, options=None) -> Iterator[tuple]:
    """Yield ``(obs, action, next_obs, reward, info)`` for each day of an episode."""
    obs, _ = env.reset(seed=seed, options=options)
    done = False
    while not done:
        action = choose(obs)
        nxt, reward, done, _, info = env.step(action)
        yield obs, action, nxt, reward, info
        obs = nxt


def index_of(pid: str) -> int:
    return int(pid[2:]) - PATIENT_ID_OFFSET


def state_of(obs, i: int) -> int:
    return int(obs.patients[ROW_STATE, i])


def ever_enrolled(obs) -> int:
    """Patients ever enrolled: in follow-up, completed or dropped out."""
    f = obs.funnel
    return f.enrolled + f.completed + f.dropped_out


def screen(i: int) -> Action:
    return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i))


def screen_until(env, obs, outcome: str, max_days: int = 60):
    """Screen the best arrival each day (wait while nobody is there; nobody is on day 0)
    until a screening ends in ``outcome``."""
    for _ in range(max_days):
        i = best_screen_candidate(obs)
        obs, _, _, _, info = env.step(screen(i) if i >= 0 else PLAN)
        if i >= 0 and info["outcome"] == outcome:
            return obs, i
    raise AssertionError(f"no screening ended in {outcome!r} within {max_days} days")


def site_index(sid: str) -> int:
    return ord(sid[-1]) - ord("A")


# ---------------------------------------------------------------- scores of non-policies
@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize(
    "policy", [do_nothing, stop_at_once, screen_only], ids=["nothing", "stop", "screen_only"]
)
def test_policies_that_enrol_nobody_score_exactly_zero(task, policy):
    """Reference: screening ~25 and stopping scored 0.37-0.53, idling 0.18-0.24.

    Also a calibration property, so on the 30 calibration world seeds."""
    env = make(f"recruitment/{task}")
    for seed in CALIBRATION_SEEDS:
        ep = play_episode(env, Scripted(policy), seed, agent_seed=0)
        assert ep.score == 0.0
        assert ep.ret == 0.0
        assert ep.metrics["net_enrolled"] == 0
        if policy is screen_only:
            assert ep.metrics["budget_used"] > 0  # it did screen: not for lack of trying


# ---------------------------------------------------------------- dense reward
@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("make_policy", [random_policy, heuristic], ids=["random", "heuristic"])
def test_return_equals_final_score_on_every_episode(task, make_policy):
    env = make(f"recruitment/{task}")
    for seed in SEEDS:
        total, info = 0.0, {}
        for *_, reward, info in rollout(env, make_policy(env, seed), seed):
            assert math.isfinite(reward)
            total += reward
        assert total == pytest.approx(info["score"], abs=1e-9)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_screening_only_earns_no_return_while_enrolling_earns_some(task):
    """Reference: screening only earned a return of 55-58, enrolling 21-28 only 37-45."""
    env = make(f"recruitment/{task}")
    for seed in SEEDS:
        screening = play_episode(env, Scripted(screen_only), seed, agent_seed=0)
        agent = make_agent("heuristic", AgentContext.of(env))
        enrolling = play_episode(env, agent, seed, agent_seed=0)
        assert screening.ret == 0.0
        assert enrolling.metrics["net_enrolled"] > 0
        assert enrolling.ret > screening.ret


# ---------------------------------------------------------------- hidden state
HIDDEN_KEYS = frozenset(
    {
        "world_type",
        "willingness",
        "eligibility",
        "true_eligibility",
        "conversion",
        "true_conversion",
        "conversion_rate",
        "biased",
        "dropout_multiplier",
        "retention",
        # task version 2: a site's future opening and arrival rate, the dropout clocks
        "activation_day",
        "arrival_rate",
        "site_arrivals",
        "hazard_clock",
        "dropout_clock",
    }
)


def walk(data) -> Iterator[tuple[str, object]]:
    """Every ``("key", k)`` and ``("value", v)`` leaf of plain JSON data."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield "key", k
            yield from walk(v)
    elif isinstance(data, (list, tuple)):
        for v in data:
            yield from walk(v)
    else:
        yield "value", data


def hidden_floats(world: World) -> set[float]:
    """Hidden values that cannot coincide with a visible one by honest rounding.

    Visible estimates are rounded to 3 decimals, and a hidden value clipped to a bound
    (e.g. eligibility 0.99) may equal one honestly; every other hidden value is a full
    double and must never appear.
    """
    values = np.concatenate(
        [world.willingness, world.eligibility, world.conversion, world.arrival_rate]
    )
    return {float(v) for v in values if round(float(v), 3) != float(v)}


def assert_hides_world(data, world: World, secret: set[float]) -> None:
    """``data`` is plain JSON and shows nothing of ``world`` (``secret``: its hidden floats)."""
    json.dumps(data)  # plain JSON
    for kind, leaf in walk(data):
        if kind == "key":
            assert leaf not in HIDDEN_KEYS, leaf
        if isinstance(leaf, str):
            assert "world_type" not in leaf
            # "dropout" is also part of honest names (patient_dropout, dropout_rate_7d)
            if world.world_type == "dropout":
                assert leaf != world.world_type
            else:
                assert world.world_type not in leaf, leaf
        elif isinstance(leaf, float):
            assert leaf not in secret, leaf


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("make_policy", [random_policy, heuristic], ids=["random", "heuristic"])
def test_hidden_world_is_in_no_observation_dict_and_no_info(task, make_policy):
    """Reference: ``world_type`` was a field of the observation."""
    env = make(f"recruitment/{task}")
    world_types = set()
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        world = env.world
        secret = hidden_floats(world)
        world_types.add(world.world_type)
        assert_hides_world(obs.to_dict(), world, secret)
        assert_hides_world(info, world, secret)
        for _, _, nxt, _, info in rollout(env, make_policy(env, seed), seed):
            assert_hides_world(nxt.to_dict(), world, secret)
            assert_hides_world(info, world, secret)
    assert world_types == set(TASKS[task].world_types)  # every hidden type was tried


def test_typed_observation_carries_no_hidden_state():
    """An agent reading the typed observation must not reach the hidden truth either."""
    env = make("recruitment/hard_bench")
    obs, _ = env.reset(seed=1)
    for field in dataclasses.fields(obs):
        value = getattr(obs, field.name)
        for name in (
            "world_type",
            "willingness",
            "eligibility",
            "conversion",
            "activation_day",
            "arrival_rate",
            "hazard_clock",
        ):
            assert not hasattr(value, name), f"obs.{field.name}.{name}"


# ---------------------------------------------------------------- tokens
@pytest.mark.parametrize("field", ["tokens", "token_count", "token_usage", "tokens_used"])
def test_an_action_cannot_carry_a_token_count(field):
    """Reference: the agent reported its own token use (send 0, pay nothing)."""
    env = make("recruitment/easy_bench")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=field):
        env.step({"action_type": "plan_next_phase", "target_phase": "screening", field: 0})
    with pytest.raises(ValueError, match=field):
        Action.from_dict({"action_type": "stop_recruitment", field: 0})


def with_garbage(choose: Policy) -> Policy:
    """Every third day an invalid action instead: tokens are charged for those too."""

    def act(obs) -> Action:
        if obs.timestamp % 3 == 2:
            return Action(ActionType.RETRIEVE_RELEVANT_HISTORY, memory_query="no such key")
        return choose(obs)

    return act


@pytest.mark.parametrize("task", TASK_NAMES)
def test_tokens_are_charged_by_the_environment_per_action_type(task):
    env = make(f"recruitment/{task}")
    seen = set()
    for seed in SEEDS:
        obs, _ = env.reset(seed=seed)
        assert obs.token_usage_so_far == 0
        choose = with_garbage(random_policy(env, seed))
        for prev, action, nxt, _, info in rollout(env, choose, seed):
            cost = TOKEN_COSTS[action.action_type]
            assert info["tokens"] == cost
            assert nxt.token_usage_so_far == prev.token_usage_so_far + cost
            assert info["token_usage"] == nxt.token_usage_so_far
            seen.add(info["error"] is None)
    assert seen == {True, False}  # valid and invalid actions both paid


def test_tokens_never_enter_the_score():
    """Every other day a free action: planning (400 tokens) or summarising (300)."""
    env = make("recruitment/medium_bench")

    def alternate(choose: Policy, free: Action) -> Policy:
        return lambda obs: free if obs.timestamp % 2 else choose(obs)

    plan = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening")
    summarise = Action(ActionType.SUMMARIZE_AND_INDEX, memory_key="notes")
    for seed in SEEDS:
        a = list(rollout(env, alternate(heuristic(env, seed), plan), seed))
        b = list(rollout(env, alternate(heuristic(env, seed), summarise), seed))
        assert a[-1][2].token_usage_so_far != b[-1][2].token_usage_so_far
        assert a[-1][4]["score"] == b[-1][4]["score"]
        assert a[-1][4]["score"] > 0.0


# ---------------------------------------------------------------- worlds and seeds
def world_signature(world: World) -> dict:
    """Patient pool, site parameters and event calendar as plain data."""
    arrays = (
        "age",
        "eligibility",
        "willingness",
        "home_site",
        "arrival_rate",
        "activation_day",
        "conversion",
        "wait_days",
    )
    out = {name: getattr(world, name).tolist() for name in arrays}
    out["arrivals"] = [times.tolist() for times, _ in world.site_arrivals]
    out["calendar"] = sorted(
        (e.day, e.kind, e.duration, e.site) for events in world.calendar.values() for e in events
    )
    out["world_type"] = world.world_type
    return out


@pytest.mark.parametrize("task", TASK_NAMES)
def test_the_seed_draws_a_different_world(task):
    """Reference: the pool, sites and calendar were fixed per task; seeds only drew luck."""
    env = make(f"recruitment/{task}")
    worlds = []
    for seed in (1, 2, 3, 4):
        env.reset(seed=seed)
        worlds.append(world_signature(env.world))
    parts = ("willingness", "eligibility", "home_site", "arrivals", "arrival_rate", "conversion")
    for part in (*parts, "calendar"):
        values = [json.dumps(w[part]) for w in worlds]
        assert len(set(values)) == len(values), part


@pytest.mark.parametrize("task", TASK_NAMES)
def test_fixed_world_keeps_the_world_and_varies_the_luck(task):
    env = make(f"recruitment/{task}")
    env.reset(seed=0)
    canonical = world_signature(env.world)
    options = {"fixed_world": True}
    day0, outcomes = set(), set()
    for seed in (1, 2, 3):
        obs, info = env.reset(seed=seed, options=options)
        assert info["fixed_world"] is True
        assert world_signature(env.world) == canonical
        day0.add(json.dumps(obs.to_dict()))
        run = rollout(env, heuristic(env, seed), seed, options=options)
        outcomes.add(json.dumps([info["outcome"] for *_, info in run]))
    assert len(day0) == 1  # the same world shows the same first day
    assert len(outcomes) == 3  # but the luck differs


# ---------------------------------------------------------------- patients lost in allocation
def test_a_patient_lost_in_allocation_stays_lost():
    """Reference: a lost patient could still be allocated, and was then immune to dropout."""
    env = make("recruitment/easy_bench")
    losses = 0
    for seed in range(20):
        lost: set[int] = set()
        just_lost = None
        choose = heuristic(env, seed)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            if just_lost is not None:  # to their own site, which is open
                action = Action(
                    ActionType.ALLOCATE_TO_SITE,
                    patient_id=patient_id(just_lost),
                    site_id=site_id(obs.home_site(just_lost)),
                )
            else:
                action = choose(obs)
            prev = obs
            obs, _, done, _, info = env.step(action)
            if just_lost is not None:
                assert info["error"] == ErrorCode.PATIENT_DROPPED.value
                assert obs.budget_remaining == prev.budget_remaining
                assert ever_enrolled(obs) == ever_enrolled(prev)
                just_lost = None
            elif action.action_type is ActionType.ALLOCATE_TO_SITE and info["outcome"] == "lost":
                just_lost = index_of(action.patient_id)
                lost.add(just_lost)
            listed = {p["id"] for p in obs.allocation_candidates + obs.recontact_candidates}
            for i in lost:
                assert state_of(obs, i) == LOST
                assert patient_id(i) not in listed
        losses += len(lost)
        if losses >= 3:
            break
    assert losses >= 3, "no allocation ended in a lost patient"


# ---------------------------------------------------------------- recontact
def test_recontacting_an_unscreened_or_ineligible_patient_is_an_error_and_free():
    """Reference: such recontacts were charged and silently did nothing."""
    env = make("recruitment/easy_bench")
    obs, _ = env.reset(seed=5)
    obs, ineligible = screen_until(env, obs, "ineligible")
    while not obs.funnel.available:  # wait for the next arrival
        obs, *_ = env.step(PLAN)
    unscreened = int(obs.available_idx[0])
    for i in (ineligible, unscreened):
        before = state_of(obs, i)
        nxt, _, _, _, info = env.step(Action(ActionType.RECONTACT, patient_id=patient_id(i)))
        assert info["error"] == ErrorCode.NOT_A_RECONTACT_CANDIDATE.value
        assert info["outcome"] is None
        assert nxt.budget_remaining == obs.budget_remaining
        assert nxt.funnel.screened == obs.funnel.screened
        assert state_of(nxt, i) == before
        obs = nxt
    assert state_of(obs, ineligible) == INELIGIBLE
    assert state_of(obs, unscreened) == AVAILABLE


@pytest.mark.parametrize("task", TASK_NAMES)
def test_recontact_candidates_are_exactly_the_eligible_unconsented(task):
    """Reference: unscreened and ineligible patients were offered as candidates."""
    env = make(f"recruitment/{task}")
    for seed in SEEDS:
        for _, _, obs, _, _ in rollout(env, heuristic(env, seed), seed):
            ids = [p["id"] for p in obs.recontact_candidates]
            assert len(ids) == min(obs.funnel.eligible, TASKS[task].max_listed)
            for pid in ids:
                assert state_of(obs, index_of(pid)) == ELIGIBLE


def recontact_often(choose: Policy) -> Policy:
    """Every other day recontact somebody, a consented patient first (renewing consent)."""

    def act(obs) -> Action:
        idx = obs.allocation_idx if obs.allocation_idx.size else obs.recontact_idx
        if obs.timestamp % 2 and idx.size:
            return Action(ActionType.RECONTACT, patient_id=patient_id(int(idx[0])))
        return choose(obs)

    return act


@pytest.mark.parametrize("task", TASK_NAMES)
def test_recontact_never_enrols_anybody(task):
    """Reference: recontact could enrol, bypassing site capacity."""
    env = make(f"recruitment/{task}")
    renewed = 0
    for seed in SEEDS:
        for prev, action, nxt, _, info in rollout(env, recontact_often(heuristic(env, seed)), seed):
            if action.action_type is ActionType.RECONTACT:
                renewed += info["outcome"] == "renewed"
                assert ever_enrolled(nxt) == ever_enrolled(prev)
                assert info["outcome"] != "enrolled"
    assert renewed > 0


# ---------------------------------------------------------------- strategies
@pytest.mark.parametrize(
    "change, code",
    [
        ("teleport", ErrorCode.UNKNOWN_STRATEGY),
        ("INCREASE_OUTREACH", ErrorCode.UNKNOWN_STRATEGY),
        ("increase outreach", ErrorCode.UNKNOWN_STRATEGY),
        ("", ErrorCode.UNKNOWN_STRATEGY),
        (None, ErrorCode.UNKNOWN_STRATEGY),
        ("relax criteria", ErrorCode.UNKNOWN_STRATEGY),
        ("focus_site_Z", ErrorCode.SITE_NOT_FOUND),
        ("negotiate_site_G", ErrorCode.SITE_NOT_FOUND),  # medium has six sites, A .. F
    ],
)
def test_unknown_strategies_and_sites_are_errors_and_free(change, code):
    """Reference: unknown strategies were charged."""
    env = make("recruitment/medium_bench")
    obs, _ = env.reset(seed=2)
    assert len(obs.sites) == 6
    nxt, _, _, _, info = env.step(Action(ActionType.ADJUST_STRATEGY, strategy_change=change))
    assert info["error"] == code.value
    assert nxt.budget_remaining == obs.budget_remaining
    assert nxt.active_constraints == obs.active_constraints
    assert nxt.criteria == obs.criteria and not nxt.outreach_active
    assert nxt.pending_amendment is None and nxt.amendments_left == obs.amendments_left
    assert nxt.pending_negotiations == 0


# ---------------------------------------------------------------- capacity
def fill_the_site(obs) -> Action:
    """Allocate to site A whoever consented, whatever their home site (or, every other
    day, renew their consent); else follow up or screen; never negotiate more capacity."""
    if obs.allocation_idx.size:
        pid = patient_id(int(obs.allocation_idx[0]))
        if obs.timestamp % 2:
            return Action(ActionType.RECONTACT, patient_id=pid)
        return Action(ActionType.ALLOCATE_TO_SITE, patient_id=pid, site_id=site_id(0))
    if obs.recontact_idx.size:
        return Action(ActionType.RECONTACT, patient_id=patient_id(int(obs.recontact_idx[0])))
    i = best_screen_candidate(obs)
    if i >= 0:
        return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i))
    return do_nothing(obs)


def test_allocation_respects_site_capacity():
    """With two slots, every site open and no events, nobody beyond the second
    enrolment gets in (completers and dropouts keep their slots)."""
    env = make("recruitment/easy_bench", site_capacity=2, event_rates={}, activation_span=0)
    for seed in SEEDS:
        refused = renewed = 0
        for prev, action, nxt, _, info in rollout(env, fill_the_site, seed):
            ever = ever_enrolled(nxt)
            assert ever <= 2
            assert nxt.sites[0].capacity_remaining == 2 - ever
            if ever_enrolled(prev) == 2:
                if action.action_type is ActionType.ALLOCATE_TO_SITE:
                    assert info["error"] == ErrorCode.SITE_AT_CAPACITY.value
                    assert nxt.budget_remaining == prev.budget_remaining
                    refused += 1
                renewed += info["outcome"] == "renewed"
        assert ever == 2 and refused > 0 and renewed > 0


# ---------------------------------------------------------------- temporary effects
#: Every event type, site delays and capacity cuts often, sparse enough for quiet days.
EVENTFUL = {kind: 0.05 if kind in ("site_delay", "capacity_cut") else 0.015 for kind in EVENT_TYPES}


def active_events(world: World, day: int) -> list:
    """Calendar events in force on ``day``: fired at the end of day d, last ``duration`` days."""
    return [e for d, events in world.calendar.items() for e in events if d < day <= d + e.duration]


def at_site(events: list, kind: str, s: int) -> list:
    return [e for e in events if e.kind == kind and e.site == s]


def hidden_multipliers(env) -> dict[str, float]:
    """Multipliers the observation does not show (consent, arrivals, eligibility)."""
    return {
        "consent": env._consent_mult,
        "arrival": env._arrival_mult,
        "eligibility": env._elig_mult,
    }


def hazard_rate(world: World, day: int) -> float:
    """What the hazard clock advances by on ``day``: the clock's increment."""
    return float(world.hazard_clock[day + 1] - world.hazard_clock[day])


def expected_hazard_rate(world: World, day: int) -> float:
    """The documented dropout multiplier of ``day``: the world's, times each event in
    force, times ``1 + 0.5 * uncertainty`` (0.25 per event in force, at most 1)."""
    active = active_events(world, day)
    return (
        world.dropout_multiplier
        * math.prod(EVENTS[e.kind].dropout for e in active)
        * (1.0 + 0.5 * min(1.0, 0.25 * len(active)))
    )


def check_sites(obs, world: World, used: list[int], ended: dict[str, int]) -> None:
    """Each site shows its base wait and free slots changed by exactly the effects in
    force today; counts in ``ended`` the site effects that ended yesterday."""
    now = active_events(world, obs.timestamp)
    before = active_events(world, obs.timestamp - 1)
    for s, site in enumerate(obs.sites):
        delays = at_site(now, "site_delay", s)
        assert site.wait_days == world.wait_days[s] + sum(e.magnitude for e in delays)
        share = EVENTS["capacity_cut"].capacity_cut
        cut = len(at_site(now, "capacity_cut", s)) * math.ceil(share * site.capacity_total)
        assert site.capacity_remaining == max(0, site.capacity_total - used[s] - cut)
        assert site.under_audit == bool(at_site(now, "site_audit", s))
        for kind in ("site_delay", "capacity_cut"):
            ended[kind] += bool(at_site(before, kind, s)) and not at_site(now, kind, s)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_temporary_effects_recover_exactly(seed):
    """Reference: site delays and capacity cuts only half recovered, so they ratcheted.

    Dropout follows the hazard clock, drawn with the world from the calendar: on every
    day it advances by exactly the effects in force, and by the world's own multiplier
    on quiet days."""
    env = make("recruitment/medium_bench", event_rates=EVENTFUL)
    p = env.params
    choose = heuristic(env, seed)
    obs, _ = env.reset(seed=seed)
    world = env.world
    base = {"consent": 1.0, "arrival": 1.0, "eligibility": 1.0}
    used = [0] * p.n_sites  # slots taken by enrolments, per site
    ended = {"site_delay": 0, "capacity_cut": 0, "quiet days": 0}
    done = False
    while not done:
        action = choose(obs)
        obs, _, done, _, info = env.step(action)
        if info["outcome"] == "enrolled":
            used[ord(action.site_id[-1]) - ord("A")] += 1
        if done:
            break
        check_sites(obs, world, used, ended)
        active = active_events(world, obs.timestamp)
        backlogs = sum(e.kind == "screening_backlog" for e in active)
        assert obs.costs.screen == pytest.approx(p.screen_cost * 1.5**backlogs, rel=1e-12)
        assert obs.hold_active == any(e.kind == "regulatory_hold" for e in active)
        assert obs.uncertainty_level == min(1.0, 0.25 * len(active))
        t = obs.timestamp
        assert hazard_rate(world, t) == pytest.approx(expected_hazard_rate(world, t), rel=1e-9)
        quiet = not (active or obs.outreach_active or obs.pending_negotiations)
        if quiet and obs.pending_amendment is None:
            ended["quiet days"] += 1
            assert obs.costs.screen == p.screen_cost
            assert obs.uncertainty_level == 0.0
            assert obs.active_constraints == ()
            assert hidden_multipliers(env) == base
            assert hazard_rate(world, t) == pytest.approx(world.dropout_multiplier, rel=1e-9)
    assert min(ended.values()) > 0, ended  # effects did start and end


# ---------------------------------------------------------------- event visibility
def calendar_views(world: World, lo: int, hi: int) -> set[tuple]:
    """Calendar events of days ``lo <= d < hi`` as observation tuples."""
    return {
        (e.day, e.kind, site_id(e.site) if e.site >= 0 else None, e.duration)
        for d, events in world.calendar.items()
        if lo <= d < hi
        for e in events
    }


@pytest.mark.parametrize("task", TASK_NAMES)
def test_events_are_seen_the_day_after_they_happen_never_before(task):
    """Reference: the day-0 events leaked into the reset observation."""
    env = make(f"recruitment/{task}", event_rates={kind: 0.5 for kind in EVENT_TYPES})
    window = env.params.history_window
    for seed in SEEDS:
        obs, _ = env.reset(seed=seed)
        assert 0 in env.world.calendar  # there is something that could leak
        assert obs.recent_events == () and obs.to_dict()["recent_events"] == []
        assert not obs.hold_active and obs.active_constraints == ()
        for _, _, nxt, _, _ in rollout(env, do_nothing, seed):
            t = nxt.timestamp
            seen = {tuple(e) for e in nxt.recent_events}
            assert seen == calendar_views(env.world, t - window, t)


# ---------------------------------------------------------------- no deep copy at reset
def test_world_arrays_are_read_only_and_episodes_share_no_mutable_state():
    """Reference: every reset deep-copied the pool; here the world is shared read-only."""
    env_a, env_b = make("recruitment/hard_bench"), make("recruitment/hard_bench")
    obs_a, _ = env_a.reset(seed=9)
    obs_b, _ = env_b.reset(seed=9)
    for env in (env_a, env_b):
        arrays = [
            (field.name, getattr(env.world, field.name)) for field in dataclasses.fields(World)
        ]
        for k, pair in enumerate(env.world.site_arrivals):  # per-site arrival streams
            arrays += [(f"site_arrivals[{k}]", a) for a in pair]
        for name, value in arrays:
            if isinstance(value, np.ndarray):
                assert not value.flags.writeable, name
                with pytest.raises(ValueError):
                    value[...] = 0
    frozen = json.dumps(obs_b.to_dict())
    first = json.dumps(obs_a.to_dict())
    assert frozen == first
    assert not np.shares_memory(obs_a.patients, obs_b.patients)
    for _ in rollout(env_a, heuristic(env_a, 9), 9):
        pass
    assert json.dumps(obs_b.to_dict()) == frozen  # the other episode did not touch it
    assert json.dumps(obs_a.to_dict()) == first  # nor did later days of its own


# ---------------------------------------------------------------- follow-up (spec section 11.1)
def enrolments(env, choose: Policy, seed: int) -> tuple[list, object, dict, float]:
    """Play an episode; return ``(patient, day, site, criteria)`` of every enrolment, the
    last observation and info, and the return."""
    out, total, obs, info = [], 0.0, None, {}
    for prev, action, obs, reward, info in rollout(env, choose, seed):
        total += reward
        if info["outcome"] == "enrolled":
            i, s = index_of(action.patient_id), site_index(action.site_id)
            out.append((i, prev.timestamp, s, prev.criteria))
    return out, obs, info, total


def follow_up_hazard(env, i: int, s: int, criteria: str) -> float:
    """Patient ``i``'s documented daily hazard per unit of the hazard clock, enrolled at
    site ``s`` under ``criteria``: dropout_base x risk x (1 - retention) / 0.125 x k."""
    p, w = env.params, env.world
    k = {
        "relaxed": p.relax_dropout_multiplier,
        "tight": p.tighten_dropout_multiplier,
        "normal": 1.0,
    }[criteria]
    return p.dropout_base * float(w.dropout_risk[i]) * ((1.0 - float(w.retention[s])) / 0.125) * k


IDLE_DAYS = 130  # every enrolment after this day has most of its follow-up past the deadline


def test_a_patient_enrolled_late_is_followed_through_follow_up():
    """Version 1: dropouts stopped counting at day 180, so a patient enrolled on day 175
    counted as retained and idling first paid. Now each enrolled patient is followed
    ``followup_days`` days with the same hazard, past the deadline if need be: they drop
    out exactly when the hazard clock over their whole follow-up reaches their own
    threshold, and E counts those who complete it."""
    env = make("recruitment/hard_bench")
    p = env.params
    saved = 0  # late patients version 1 would have counted as retained
    for seed in SEEDS:
        choose = idle_then(IDLE_DAYS, heuristic(env, seed))
        enrolled, last, info, total = enrolments(env, choose, seed)
        w, clock = env.world, env.world.hazard_clock
        assert enrolled and min(day for _, day, _, _ in enrolled) >= IDLE_DAYS
        completers = 0
        for i, day, s, criteria in enrolled:
            end = day + p.followup_days
            assert end > p.horizon  # follow-up runs past the deadline
            need = clock[day] + float(w.dropout_clock[i]) / follow_up_hazard(env, i, s, criteria)
            drops = clock[end] >= need
            assert state_of(last, i) == (DROPPED_OUT if drops else COMPLETED), (seed, i)
            completers += not drops
            saved += drops and clock[p.horizon] < need
        assert last.funnel.enrolled == 0  # nobody is left in follow-up
        assert last.funnel.completed == completers == last.enrolled_so_far == info["net_enrolled"]
        assert info["score_parts"]["enrolment"] == min(1.0, completers / p.target)
        assert total == pytest.approx(info["score"], abs=1e-9)
    assert saved > 0, "no late patient dropped out after the deadline"


STOP_DAY = 100  # early enough for the follow-up of all its patients to end by day 180


@pytest.mark.parametrize("task", ["medium_bench", "hard_bench"])
def test_a_stop_resolves_the_follow_up_in_its_step_as_the_days_would(task):
    """Stopping on day t resolves every patient still in follow-up in that last step,
    with the fate the remaining days would have given them: the stopped episode ends
    exactly as one that does nothing from day t to the deadline, and return == score."""
    env = make(f"recruitment/{task}")
    resolved = 0  # patients in follow-up at the stop who dropped out in its step
    for seed in SEEDS:
        choose = heuristic(env, seed)
        obs, _ = env.reset(seed=seed)
        total = 0.0
        while obs.timestamp < STOP_DAY:
            obs, reward, done, _, _ = env.step(choose(obs))
            total += reward
            assert not done
        twin = pickle.loads(pickle.dumps(env))
        in_follow_up = np.flatnonzero(obs.patients[ROW_STATE] == ENROLLED)
        assert in_follow_up.size
        stopped, reward, done, _, info = env.step(Action(ActionType.STOP_RECRUITMENT))
        total += reward
        assert done and stopped.timestamp == env.params.horizon
        assert total == pytest.approx(info["score"], abs=1e-9)
        assert stopped.funnel.enrolled == 0
        # the twin does nothing until the deadline, watching the same patients day by day
        idle, twin_done = obs, False
        while not twin_done:
            idle, _, twin_done, _, twin_info = twin.step(PLAN)
        ever = np.isin(obs.patients[ROW_STATE], (ENROLLED, COMPLETED, DROPPED_OUT))
        assert np.array_equal(stopped.patients[ROW_STATE, ever], idle.patients[ROW_STATE, ever])
        assert stopped.funnel.completed == idle.funnel.completed == info["net_enrolled"]
        assert info["score_parts"] == twin_info["score_parts"]
        resolved += int((stopped.patients[ROW_STATE, in_follow_up] == DROPPED_OUT).sum())
    assert resolved > 0, "no patient in follow-up at a stop dropped out afterwards"


# ---------------------------------------------------------------- amendments (spec section 11.4)
RELAX = Action(ActionType.ADJUST_STRATEGY, strategy_change="relax_criteria")


def test_an_amendment_acts_only_after_its_approval_delay_and_charges_its_fee():
    """Version 1: relaxing criteria cost one strategy fee and acted at once. Now it is a
    protocol amendment: the amendment fee is charged on the day it is filed, and the
    criteria change only on approval, ``amendment_delay`` days later. Screenings tell:
    a patient whose eligibility draw lies between their eligibility and the relaxed one
    is ineligible before approval and eligible after."""
    env = make("recruitment/easy_bench", event_rates={})  # no event changes eligibility
    p = env.params
    lo, hi = p.amendment_delay
    assert lo > 0
    screened = {"filed": 0, "approved": 0}  # borderline patients screened per phase
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        w = env.world
        while not obs.funnel.available:
            obs, *_ = env.step(PLAN)
        prev = obs
        obs, _, _, _, info = env.step(RELAX)
        assert info["error"] is None
        fee = p.strategy_cost * p.amendment_cost_multiplier
        assert prev.costs.amendment == fee > prev.costs.strategy
        assert prev.budget_remaining - obs.budget_remaining == fee
        assert obs.amendments_left == p.max_amendments - 1
        filed, approved_on = prev.timestamp, None
        while obs.timestamp < p.horizon - 1 and (approved_on is None or not screened["approved"]):
            if obs.pending_amendment is None:
                approved_on = obs.timestamp if approved_on is None else approved_on
                assert obs.criteria == "relaxed"
            else:
                assert obs.pending_amendment == "relax_criteria" and obs.criteria == "normal"
            idx = obs.available_idx
            e, u = w.eligibility[idx], w.eligibility_u[idx]
            borderline = idx[(e <= u) & (u < e * p.relax_eligibility_multiplier)]
            if borderline.size and not obs.hold_active:
                phase = "filed" if approved_on is None else "approved"
                before = obs.budget_remaining
                obs, _, _, _, info = env.step(screen(int(borderline[0])))
                assert info["error"] is None and obs.budget_remaining < before
                assert (info["outcome"] == "ineligible") == (phase == "filed"), (seed, phase)
                screened[phase] += 1
            else:
                obs, *_ = env.step(PLAN)
        assert approved_on is not None
        assert lo <= approved_on - filed <= hi
        if min(screened.values()) > 0:
            return
    pytest.fail(f"too few borderline patients screened: {screened}")


# ---------------------------------------------------------------- sites (spec section 11.7)
def test_allocation_before_activation_is_refused_and_accepted_once_the_site_opens():
    """Version 1 had no site start-up. Now a site opens on its activation day (shown
    as its status, from that day on); an allocation to it before is refused for free."""
    env = make("recruitment/medium_bench", activation_span=90, event_rates={})
    for seed in SEEDS:
        obs, _ = env.reset(seed=seed)
        opens = env.world.activation_day
        late = int(np.argmax(opens))
        assert opens.min() == 0 and opens[late] > 0
        refused = accepted = False
        while not accepted:
            assert [s.active for s in obs.sites] == [obs.timestamp >= d for d in opens]
            assert obs.timestamp < env.params.horizon - 1, "nobody consented in time"
            prev = obs
            if obs.allocation_idx.size and (not refused or obs.sites[late].active):
                i = int(obs.allocation_idx[0])
                allocation = Action(
                    ActionType.ALLOCATE_TO_SITE, patient_id=patient_id(i), site_id=site_id(late)
                )
                obs, _, _, _, info = env.step(allocation)
                if prev.sites[late].active:
                    assert info["error"] is None and info["outcome"] is not None
                    accepted = True
                else:
                    assert info["error"] == ErrorCode.SITE_NOT_ACTIVE.value
                    assert obs.budget_remaining == prev.budget_remaining
                    assert state_of(obs, i) == CONSENTED
                    assert obs.sites[late].recent_attempts == 0
                    refused = True
            else:
                i = best_screen_candidate(obs)
                obs, *_ = env.step(screen(i) if i >= 0 else PLAN)
        assert refused


@pytest.mark.parametrize("task", TASK_NAMES)
def test_patients_arrive_only_through_open_sites(task):
    """Version 1 had one central arrival stream with 40 % of the pool present on day 0.
    Now nobody is there on day 0 and each patient arrives through their home site, at
    the end of a day it was open; the home site is shown from their arrival on."""
    env = make(f"recruitment/{task}")
    for seed in SEEDS[:2]:
        obs, _ = env.reset(seed=seed)
        w = env.world
        assert obs.funnel.not_arrived == env.params.pool_size
        arrived_on = np.full(env.params.pool_size, -1)
        for _, _, nxt, _, _ in rollout(env, random_policy(env, seed), seed):
            states, homes = nxt.patients[ROW_STATE], nxt.patients[ROW_HOME]
            here = states != NOT_ARRIVED
            assert np.all(homes[~here] == -1)
            assert np.array_equal(homes[here], w.home_site[here])
            new = here & (arrived_on < 0)
            arrived_on[new] = nxt.timestamp
            assert np.all(w.activation_day[homes[new]] < nxt.timestamp)
            assert all(nxt.sites[h].active for h in set(homes[here].tolist()))
        came = arrived_on >= 0
        assert came.any()
        assert (w.activation_day[w.home_site[came]] > 0).any()  # also through later sites


def test_sites_that_never_enrol_send_nobody():
    """Version 1: every site enrolled. Now a share of sites never enrols (arrival rate
    0): they open like the others but no patient ever comes through them."""
    env = make("recruitment/hard_bench", never_enrol_prob=0.5)
    silent_sites = 0
    for seed in SEEDS:
        obs, _ = env.reset(seed=seed)
        w = env.world
        silent = np.flatnonzero(w.arrival_rate == 0.0)
        silent_sites += silent.size
        for k in silent:
            assert w.site_arrivals[k][0].size == w.site_arrivals[k][1].size == 0
        assert not np.isin(w.home_site, silent).any()
        for _, _, obs, _, _ in rollout(env, do_nothing, seed):
            pass
        homes = obs.patients[ROW_HOME]
        assert (homes >= 0).any()  # the other sites did send patients
        assert not np.isin(homes, silent).any()
        assert all(obs.sites[k].active for k in silent)  # open all the same
    assert silent_sites > 0
