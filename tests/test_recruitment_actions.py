"""The action interface of the recruitment simulator (spec sections 2, 4 and 11).

Every error code is produced by some action and such an action takes the day, costs
nothing and changes nothing; malformed action types are programming errors; stopping,
consent windows and memory behave as documented.

No patient is present on day 0 (task version 2): situations that need one first let a
few days pass with a do-nothing action until somebody has arrived, and allocate to a
patient's home site (open, since the patient came through it) unless they test a site.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.recruitment import ACTION_TYPES, Action, ActionType, ErrorCode
from clinbench.env.recruitment.macro import best_screen_candidate
from clinbench.env.recruitment.observation import (
    CONSENTED,
    ELIGIBLE,
    LOST,
    NOT_ARRIVED,
    ROW_STATE,
)
from clinbench.env.recruitment.simulator import TOKEN_COSTS
from clinbench.env.recruitment.tasks import EVENT_TYPES
from clinbench.env.recruitment.world import patient_id, site_id

SEED = 4
#: The agents' own seed (never the world seed: spec section 11, "Isolation").
AGENT_SEED = 10_004
#: Takes the day and nothing else: the patient id cannot name anybody.
PASS = Action(ActionType.SCREEN_PATIENT, patient_id="P-0")
PLAN = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening")
RELAX = Action(ActionType.ADJUST_STRATEGY, strategy_change="relax_criteria")
TIGHTEN = Action(ActionType.ADJUST_STRATEGY, strategy_change="tighten_criteria")
TOKEN_FIELDS = ("token_usage_so_far",)


# ---------------------------------------------------------------- helpers
def fresh(task: str = "easy_bench", arrived: int = 1, **overrides):
    """Seed ``SEED`` of ``task``, after as many do-nothing days as it takes for
    ``arrived`` patients to wait for screening (nobody is there on day 0)."""
    env = make(f"recruitment/{task}", **overrides)
    obs, _ = env.reset(seed=SEED)
    for _ in range(60):
        if obs.funnel.available >= arrived:
            return env, obs
        obs, *_ = env.step(PASS)
    raise AssertionError(f"fewer than {arrived} arrivals within 60 days")


def state_of(obs, i: int) -> int:
    return int(obs.patients[ROW_STATE, i])


def screen(i: int) -> Action:
    return Action(ActionType.SCREEN_PATIENT, patient_id=patient_id(i))


def screen_until(env, obs, outcome: str, max_days: int = 60):
    """Screen the best arrival each day (wait while nobody is there) until a screening
    ends in ``outcome``."""
    for _ in range(max_days):
        i = best_screen_candidate(obs)
        obs, _, _, _, info = env.step(screen(i) if i >= 0 else PASS)
        if i >= 0 and info["outcome"] == outcome:
            return obs, i
    raise AssertionError(f"no screening ended in {outcome!r} within {max_days} days")


def allocate(i: int, site: str | None) -> Action:
    return Action(ActionType.ALLOCATE_TO_SITE, patient_id=patient_id(i), site_id=site)


def home(obs, i: int) -> str:
    """The id of the site patient ``i`` came through (open: they arrived through it)."""
    s = obs.home_site(i)
    assert s >= 0 and obs.sites[s].active
    return site_id(s)


def enrol_one(env, obs):
    """Screen and allocate to the home site until somebody is enrolled."""
    for _ in range(40):
        obs, i = screen_until(env, obs, "consented")
        while state_of(obs, i) == CONSENTED:
            obs, _, _, _, info = env.step(allocate(i, home(obs, i)))
            if info["outcome"] == "enrolled":
                return obs, i
    raise AssertionError("nobody enrolled")


def approve(env, obs, amendment: Action):
    """File a protocol amendment and wait (doing nothing) until it is approved."""
    name = amendment.strategy_change
    obs, _, _, _, info = env.step(amendment)
    assert info["error"] is None and obs.pending_amendment == name
    for _ in range(env.params.amendment_delay[1] + 1):
        if obs.pending_amendment is None:
            return obs
        obs, *_ = env.step(PASS)
    raise AssertionError(f"{name} not approved within its longest delay")


def without(d: dict, keys=TOKEN_FIELDS) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


# ---------------------------------------------------------------- one situation per error code
# Each builds an environment in a state where its action is invalid for that reason.
Situation = Callable[[], tuple]


def _missing_patient_id():
    env, obs = fresh()
    return env, obs, Action(ActionType.RECONTACT)


def _patient_not_found():
    env, obs = fresh()  # ids run from P-1000 to P-(1000 + pool_size - 1)
    return env, obs, allocate(env.params.pool_size, "site_A")


def _patient_not_arrived():
    env, obs = fresh()
    i = int((obs.patients[ROW_STATE] == NOT_ARRIVED).argmax())
    assert state_of(obs, i) == NOT_ARRIVED
    return env, obs, screen(i)


def _already_screened():
    env, obs = fresh()
    obs, i = screen_until(env, obs, "ineligible")
    return env, obs, screen(i)


def _not_a_recontact_candidate():
    env, obs = fresh()
    return env, obs, Action(ActionType.RECONTACT, patient_id=patient_id(int(obs.available_idx[0])))


def _not_consented():
    env, obs = fresh()
    obs, i = screen_until(env, obs, "eligible")
    return env, obs, allocate(i, home(obs, i))


def _already_enrolled():
    env, obs = fresh()
    obs, i = enrol_one(env, obs)
    return env, obs, allocate(i, home(obs, i))


def _patient_dropped():
    # every allocation fails (huge wait penalty) and loses the patient
    env, obs = fresh(loss_on_failed_allocation=1.0, wait_penalty=1e6)
    obs, i = screen_until(env, obs, "consented")
    obs, _, _, _, info = env.step(allocate(i, home(obs, i)))
    assert info["outcome"] == "lost"
    return env, obs, allocate(i, home(obs, i))


def _missing_site_id():
    env, obs = fresh()
    obs, i = screen_until(env, obs, "consented")
    return env, obs, allocate(i, None)


def _site_not_found():
    env, obs = fresh("hard_bench")
    obs, i = screen_until(env, obs, "consented")
    beyond = site_id(env.params.n_sites)  # the letter after the last site's
    assert beyond not in obs.site_performance
    return env, obs, allocate(i, beyond)


def _site_not_active():
    # sites open over four months: one is still closed when somebody has consented
    env, obs = fresh("medium_bench", activation_span=120, event_rates={})
    obs, i = screen_until(env, obs, "consented")
    closed = [s for s, site in enumerate(obs.sites) if not site.active]
    assert closed
    assert env.world.activation_day[closed[0]] > obs.timestamp  # it opens later
    assert obs.sites[closed[0]].capacity_remaining > 0  # the only reason is the status
    return env, obs, allocate(i, site_id(closed[0]))


def _site_at_capacity():
    env, obs = fresh(site_capacity=1, event_rates={})
    obs, first = enrol_one(env, obs)
    full = obs.home_site(first)
    obs, i = screen_until(env, obs, "consented")
    assert obs.sites[full].capacity_remaining == 0 and obs.sites[full].active
    return env, obs, allocate(i, site_id(full))


def _site_under_audit():
    env, obs = fresh(event_rates={"site_audit": 1.0}, activation_span=0)
    obs, i = screen_until(env, obs, "consented")
    audited = [s for s, site in enumerate(obs.sites) if site.under_audit]
    assert audited and obs.sites[audited[0]].active
    return env, obs, allocate(i, site_id(audited[0]))


def _insufficient_budget():
    env, obs = fresh(budget=100.0)
    assert obs.costs.screen > obs.budget_remaining
    return env, obs, screen(int(obs.available_idx[0]))


def _regulatory_hold_active():
    env, obs = fresh(event_rates={"regulatory_hold": 1.0})
    obs, *_ = env.step(PLAN)
    assert obs.hold_active and obs.funnel.available
    return env, obs, screen(int(obs.available_idx[0]))


def _unknown_strategy():
    env, obs = fresh()
    return env, obs, Action(ActionType.ADJUST_STRATEGY, strategy_change="hire_more_nurses")


def _strategy_already_active():
    env, obs = fresh()
    obs = approve(env, obs, RELAX)
    assert obs.criteria == "relaxed" and obs.amendments_left > 0
    return env, obs, RELAX


def _amendment_pending():
    env, obs = fresh()
    obs, _, _, _, info = env.step(RELAX)
    assert info["error"] is None and obs.pending_amendment == "relax_criteria"
    assert obs.criteria == "normal" and obs.amendments_left > 0
    return env, obs, TIGHTEN  # a level it could go to, but one amendment is under review


def _amendment_limit_reached():
    env, obs = fresh()
    for k in range(env.params.max_amendments):  # relax, tighten, ... back to normal
        obs = approve(env, obs, (RELAX, TIGHTEN)[k % 2])
    assert obs.amendments_left == 0 and obs.pending_amendment is None
    assert obs.criteria in ("normal", "relaxed")
    return env, obs, TIGHTEN if obs.criteria == "relaxed" else RELAX


def _invalid_target_phase():
    env, obs = fresh()
    return env, obs, Action(ActionType.PLAN_NEXT_PHASE, target_phase="victory", plan_summary="x")


def _missing_memory_key():
    env, obs = fresh()
    return env, obs, Action(ActionType.SUMMARIZE_AND_INDEX, memory_key="   ", memory_payload="x")


def _missing_memory_query():
    env, obs = fresh()
    return env, obs, Action(ActionType.RETRIEVE_RELEVANT_HISTORY)


def _memory_not_found():
    env, obs = fresh()
    note = Action(ActionType.SUMMARIZE_AND_INDEX, memory_key="alpha", memory_payload="site notes")
    obs, *_ = env.step(note)
    return env, obs, Action(ActionType.RETRIEVE_RELEVANT_HISTORY, memory_query="omega")


def _invalid_argument():
    env, obs = fresh()  # the best candidate, but in a numpy array (see test_recruitment_inputs)
    pid = np.array([patient_id(best_screen_candidate(obs))])
    return env, obs, Action(ActionType.SCREEN_PATIENT, patient_id=pid)


SITUATIONS: dict[ErrorCode, Situation] = {
    ErrorCode.MISSING_PATIENT_ID: _missing_patient_id,
    ErrorCode.PATIENT_NOT_FOUND: _patient_not_found,
    ErrorCode.PATIENT_NOT_ARRIVED: _patient_not_arrived,
    ErrorCode.ALREADY_SCREENED: _already_screened,
    ErrorCode.NOT_A_RECONTACT_CANDIDATE: _not_a_recontact_candidate,
    ErrorCode.NOT_CONSENTED: _not_consented,
    ErrorCode.ALREADY_ENROLLED: _already_enrolled,
    ErrorCode.PATIENT_DROPPED: _patient_dropped,
    ErrorCode.MISSING_SITE_ID: _missing_site_id,
    ErrorCode.SITE_NOT_FOUND: _site_not_found,
    ErrorCode.SITE_AT_CAPACITY: _site_at_capacity,
    ErrorCode.SITE_UNDER_AUDIT: _site_under_audit,
    ErrorCode.SITE_NOT_ACTIVE: _site_not_active,
    ErrorCode.INSUFFICIENT_BUDGET: _insufficient_budget,
    ErrorCode.REGULATORY_HOLD_ACTIVE: _regulatory_hold_active,
    ErrorCode.UNKNOWN_STRATEGY: _unknown_strategy,
    ErrorCode.STRATEGY_ALREADY_ACTIVE: _strategy_already_active,
    ErrorCode.AMENDMENT_PENDING: _amendment_pending,
    ErrorCode.AMENDMENT_LIMIT_REACHED: _amendment_limit_reached,
    ErrorCode.INVALID_TARGET_PHASE: _invalid_target_phase,
    ErrorCode.MISSING_MEMORY_KEY: _missing_memory_key,
    ErrorCode.MISSING_MEMORY_QUERY: _missing_memory_query,
    ErrorCode.MEMORY_NOT_FOUND: _memory_not_found,
    ErrorCode.INVALID_ARGUMENT: _invalid_argument,
}


def test_every_error_code_has_a_situation():
    assert set(SITUATIONS) == set(ErrorCode)


def test_the_pass_action_changes_only_the_day_and_tokens():
    """``PASS`` is the do-nothing day the error tests compare with: once every patient
    of a small pool has arrived, with every site open and no events, only the clock
    (and the token count) moves."""
    env, obs = fresh(pool_size=5, site_rate_mean=5.0, activation_span=0, event_rates={}, arrived=5)
    assert obs.funnel.not_arrived == 0 and all(site.active for site in obs.sites)
    day_fields = ("timestamp", "time_to_deadline_days", "token_usage_so_far")
    for _ in range(5):
        nxt, reward, _, _, info = env.step(PASS)
        assert info["error"] == ErrorCode.PATIENT_NOT_FOUND.value
        assert reward == 0.0
        assert nxt.timestamp == obs.timestamp + 1
        assert without(nxt.to_dict(), day_fields) == without(obs.to_dict(), day_fields)
        assert len(nxt.available_patients) == 5
        obs = nxt


def assert_same_future(env, twin, obs, days: int = 30) -> None:
    """Both environments answer the same actions identically (outcome stream included)."""
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(AGENT_SEED)
    for _ in range(days):
        action = agent.act(obs)
        obs, r1, done, _, i1 = env.step(action)
        other, r2, _, _, i2 = twin.step(action)
        assert without(obs.to_dict()) == without(other.to_dict())
        assert r1 == r2
        assert without(i1, ("token_usage",)) == without(i2, ("token_usage",))
        if done:
            break


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda c: c.value)
def test_each_error_code_is_produced_and_changes_nothing(code):
    env, obs, action = SITUATIONS[code]()
    twin, twin_obs, _ = SITUATIONS[code]()
    assert without(twin_obs.to_dict()) == without(obs.to_dict())

    after, reward, terminated, truncated, info = env.step(action)
    ref, ref_reward, *_, ref_info = twin.step(PASS)

    assert info["error"] == code.value
    assert info["outcome"] is None
    assert ref_info["error"] == ErrorCode.PATIENT_NOT_FOUND.value
    assert not terminated and not truncated
    assert after.timestamp == obs.timestamp + 1  # it took the day
    assert after.budget_remaining == obs.budget_remaining  # nothing charged
    assert after.funnel.screened == obs.funnel.screened
    assert info["tokens"] == TOKEN_COSTS[action.action_type]
    assert after.token_usage_so_far == obs.token_usage_so_far + TOKEN_COSTS[action.action_type]
    # the same as a day in which nothing was done at all ...
    assert without(after.to_dict()) == without(ref.to_dict())
    assert np.array_equal(after.patients, ref.patients)
    assert reward == ref_reward
    # ... hidden state included: no outcome was drawn (the stream is private, so its
    # state is compared directly) and the next days unfold identically
    assert env._rng.bit_generator.state == twin._rng.bit_generator.state
    assert_same_future(env, twin, after)


# ---------------------------------------------------------------- malformed actions
@pytest.mark.parametrize("bad", ["teleport", "", "SCREEN_PATIENT", "stop", None, 3])
def test_an_action_type_outside_the_eight_is_a_value_error_listing_them(bad):
    env, obs = fresh()
    with pytest.raises(ValueError) as raised:
        env.step({"action_type": bad})
    for name in ACTION_TYPES:
        assert name in str(raised.value)
    with pytest.raises(ValueError):
        Action(bad)
    # a programming error is not a day of the trial
    nxt, *_ = env.step(PLAN)
    assert nxt.timestamp == obs.timestamp + 1


def test_a_dict_without_action_type_is_a_value_error():
    env, _ = fresh()
    with pytest.raises(ValueError, match="action_type"):
        env.step({"patient_id": "P-1000"})


def test_a_plain_dict_action_equals_the_typed_action():
    env, obs = fresh()
    twin, _ = fresh()
    i = best_screen_candidate(obs)
    typed = replace(screen(i), hypothesis="h", confidence=0.5)
    a = env.step(typed)
    b = twin.step(typed.to_dict())
    assert a[0].to_dict() == b[0].to_dict()
    assert a[1:] == b[1:]


def test_stepping_a_finished_or_unstarted_episode_raises():
    env = make("recruitment/easy_bench")
    with pytest.raises(RuntimeError):
        env.step(PLAN)
    env.reset(seed=SEED)
    *_, terminated, _, _ = env.step(Action(ActionType.STOP_RECRUITMENT))
    assert terminated
    with pytest.raises(RuntimeError):
        env.step(PLAN)
    env.reset(seed=SEED)  # a new episode starts normally
    assert env.step(PLAN)[0].timestamp == 1


# ---------------------------------------------------------------- stop
def ever_enrolled(obs) -> int:
    """Patients ever enrolled: in follow-up, completed or dropped out."""
    f = obs.funnel
    return f.enrolled + f.completed + f.dropped_out


def test_stop_fast_forwards_and_later_dropouts_still_count():
    """A stop ends recruitment: the day jumps to the deadline in that one step, every
    patient still in follow-up is followed to its end there (dropouts included), and E
    counts the completers."""
    env = make("recruitment/hard_bench")
    p = env.params
    agent = make_agent("heuristic", AgentContext.of(env))
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        agent.reset(AGENT_SEED + seed)
        total, done = 0.0, False
        while not done:
            action = agent.act(obs)
            at_stop = obs
            obs, reward, done, truncated, info = env.step(action)
            total += reward
        if action.action_type is not ActionType.STOP_RECRUITMENT:
            continue
        assert at_stop.timestamp < p.horizon - 1  # an early stop
        assert obs.timestamp == p.horizon and not truncated
        assert info["terminated_by"] == "stop"
        assert info["steps"] == at_stop.timestamp + 1
        # the fast-forwarded days are no actions: the stop is the only token charge
        stop_tokens = TOKEN_COSTS[ActionType.STOP_RECRUITMENT]
        assert obs.token_usage_so_far == at_stop.token_usage_so_far + stop_tokens
        assert obs.budget_remaining == at_stop.budget_remaining
        # nobody is left in follow-up, nobody new was enrolled, E counts the completers
        assert at_stop.funnel.enrolled > 0
        assert obs.funnel.enrolled == 0
        assert ever_enrolled(obs) == ever_enrolled(at_stop)
        assert obs.enrolled_so_far == obs.funnel.completed == info["net_enrolled"]
        assert info["score_parts"]["enrolment"] == min(1.0, obs.funnel.completed / p.target)
        assert total == pytest.approx(info["score"], abs=1e-9)
        if obs.enrolled_so_far < at_stop.enrolled_so_far:
            lost = at_stop.enrolled_so_far - obs.enrolled_so_far
            assert obs.funnel.dropped_out == at_stop.funnel.dropped_out + lost
            return
    pytest.fail("no early stop was followed by a dropout")


# ---------------------------------------------------------------- consent window
def recontact(i: int) -> Action:
    return Action(ActionType.RECONTACT, patient_id=patient_id(i))


def test_consent_lapses_after_the_window_and_allows_one_more_recontact():
    outcomes = set()
    for seed in range(40):
        env = make("recruitment/easy_bench")
        window = env.params.consent_window
        obs, _ = env.reset(seed=seed)
        obs, i = screen_until(env, obs, "consented")
        pid = patient_id(i)
        for k in range(1, window + 1):  # usable on the `window` days after the consent day
            assert state_of(obs, i) == CONSENTED
            listed = {p["id"]: p for p in obs.allocation_candidates}
            assert listed[pid]["consent_days_left"] == window + 1 - k  # 1: last chance today
            obs, *_ = env.step(PLAN)
        assert state_of(obs, i) == ELIGIBLE  # lapsed at the start of the next day
        assert {p["id"]: p for p in obs.recontact_candidates}[pid]["recontacts_left"] == 1
        obs, _, _, _, info = env.step(allocate(i, home(obs, i)))
        assert info["error"] == ErrorCode.NOT_CONSENTED.value
        obs, _, _, _, info = env.step(recontact(i))
        assert info["error"] is None
        outcomes.add(info["outcome"])
        if info["outcome"] == "consented":  # a second lapse loses the patient
            for _ in range(window):
                obs, *_ = env.step(PLAN)
        assert state_of(obs, i) == LOST
        _, _, _, _, info = env.step(recontact(i))
        assert info["error"] == ErrorCode.PATIENT_DROPPED.value
        if outcomes == {"consented", "declined"}:
            return
    pytest.fail(f"only saw {outcomes} after a lapse")


# ---------------------------------------------------------------- memory
def summarize(key: str, payload: str = "") -> Action:
    return Action(ActionType.SUMMARIZE_AND_INDEX, memory_key=key, memory_payload=payload)


def retrieve(query: str) -> Action:
    return Action(ActionType.RETRIEVE_RELEVANT_HISTORY, memory_query=query)


def retrieved_keys(obs) -> list[str]:
    return [r.key for r in obs.retrieved_memory_context]


def test_summarize_stores_an_exact_snapshot_of_the_full_history():
    env, obs = fresh("medium_bench", event_rates={kind: 0.02 for kind in EVENT_TYPES})
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(AGENT_SEED)
    n = env.params.n_sites
    attempts, successes, events = [0] * n, [0] * n, {}
    for _ in range(60):  # longer than the 14-day window of the observation
        action = agent.act(obs)
        obs, _, _, _, info = env.step(action)
        if action.action_type is ActionType.ALLOCATE_TO_SITE and info["error"] is None:
            s = ord(action.site_id[-1]) - ord("A")
            attempts[s] += 1
            successes[s] += info["outcome"] == "enrolled"
        for e in obs.recent_events:
            events.setdefault(e, None)
    assert sum(attempts) > 0 and events
    expected = {
        "key": "review",
        "day": obs.timestamp,
        "payload": "mid-trial review",
        "site_attempts": attempts,
        "site_successes": successes,
        "site_dropouts": [successes[s] - obs.sites[s].active_enrolled for s in range(n)],
        "funnel": obs.current_funnel,
        "events": [e._asdict() for e in events],
    }
    obs, _, _, _, info = env.step(summarize("review", "mid-trial review"))
    assert info["error"] is None
    assert obs.to_dict()["indexed_memory_summary"] == [{"key": "review", "day": expected["day"]}]
    assert obs.retrieved_memory_context == ()
    for _ in range(20):  # the snapshot does not follow later days
        obs, *_ = env.step(agent.act(obs))
    obs, _, _, _, info = env.step(retrieve("review"))
    assert info["error"] is None
    assert obs.to_dict()["retrieved_memory_context"] == [expected]


def test_retrieve_by_exact_key_or_keyword_newest_first():
    env, _ = fresh()
    for key, payload in [
        ("alpha", "site A slow to convert"),
        ("beta", "dropouts rising"),
        ("gamma", "site A audit over"),
    ]:
        env.step(summarize(key, payload))
    for query, keys in [
        ("beta", ["beta"]),
        ("SLOW", ["alpha"]),
        ("which site?", ["gamma", "alpha"]),
        ("gamma rising", ["gamma", "beta"]),
    ]:
        obs, _, _, _, info = env.step(retrieve(query))
        assert info["error"] is None, query
        assert retrieved_keys(obs) == keys, query
    obs, _, _, _, info = env.step(retrieve("enrolment forecast"))
    assert info["error"] == ErrorCode.MEMORY_NOT_FOUND.value
    assert obs.retrieved_memory_context == ()


def test_memory_capacity_evicts_the_oldest_and_reports_it():
    env, _ = fresh()
    capacity = env.params.memory_capacity
    assert capacity == 16
    for n in range(capacity):
        obs, _, _, _, info = env.step(summarize(f"k{n}"))
        assert "memory_evicted" not in info
    obs, _, _, _, info = env.step(summarize(f"k{capacity}"))
    assert info["memory_evicted"] == "k0"
    keys = [k for k, _ in obs.indexed_memory_summary]
    assert keys == [f"k{n}" for n in range(1, capacity + 1)]
    obs, _, _, _, info = env.step(retrieve("k0"))
    assert info["error"] == ErrorCode.MEMORY_NOT_FOUND.value
    # rewriting a key replaces it (now the newest) without evicting anything
    obs, _, _, _, info = env.step(summarize("k5", "again"))
    assert info["memory_overwritten"] == "k5" and "memory_evicted" not in info
    keys = [k for k, _ in obs.indexed_memory_summary]
    assert len(keys) == capacity and keys[-1] == "k5" and keys.count("k5") == 1


def test_retrieved_context_appears_in_the_next_observation_only():
    env, _ = fresh()
    env.step(summarize("alpha", "first note"))
    obs, *_ = env.step(retrieve("alpha"))
    assert retrieved_keys(obs) == ["alpha"]
    obs, *_ = env.step(PLAN)
    assert obs.retrieved_memory_context == ()
    assert obs.to_dict()["retrieved_memory_context"] == []
    assert [k for k, _ in obs.indexed_memory_summary] == ["alpha"]
