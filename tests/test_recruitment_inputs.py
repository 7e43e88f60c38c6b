"""No input crashes ``step``; task overrides are validated at ``make()`` (spec section 11,
item 6 and the decision "No input crashes step").

A malformed action argument (numpy arrays or ``str_``, bytes, numbers, containers,
oversized text, a non-finite confidence) is an invalid action like any other: it takes
the day, costs nothing, changes nothing and comes back as an error code. Each one is
compared with a do-nothing day on a pickled copy of the same environment. A task
override out of range is a ``ValueError`` naming the parameter, at ``make()``.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import fields, replace
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.config import ConfigError, load
from clinbench.env import make
from clinbench.env.recruitment import TASKS, Action, ActionType, ErrorCode, TaskParams
from clinbench.env.recruitment.macro import best_screen_candidate
from clinbench.env.recruitment.validation import (
    MAX_TEXT_CHARS,
    PARAM_RANGES,
    TEXT_FIELDS,
    argument_error,
    check_params,
)
from clinbench.env.recruitment.world import patient_id
from clinbench.episode import play_episode

TASK_NAMES = tuple(TASKS)
SEED = 7
WARMUP_DAYS = 12
#: The do-nothing day malformed actions are compared with (an unknown phase).
NOOP = Action(ActionType.PLAN_NEXT_PHASE, target_phase="no_such_phase")
INVALID = ErrorCode.INVALID_ARGUMENT.value


# ---------------------------------------------------------------- helpers
def warmed(task: str):
    """An environment a few heuristic days in, then screening until somebody consents
    (to be allocated), then a memory record (to be retrieved)."""
    env = make(f"recruitment/{task}")
    obs, _ = env.reset(seed=SEED)
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(123)
    for _ in range(WARMUP_DAYS):
        obs, *_ = env.step(agent.act(obs))
    for _ in range(60):
        if obs.allocation_candidates:
            break
        screen = Action(
            ActionType.SCREEN_PATIENT, patient_id=patient_id(best_screen_candidate(obs))
        )
        obs, *_ = env.step(screen)
    note = Action(ActionType.SUMMARIZE_AND_INDEX, memory_key="alpha", memory_payload="notes")
    obs, *_ = env.step(note)
    assert obs.allocation_candidates, "nobody consented during the warm-up"
    return env, obs


@cache
def warmed_blob(task: str) -> tuple[bytes, object]:
    env, obs = warmed(task)
    return pickle.dumps(env), obs


@pytest.fixture(params=TASK_NAMES)
def base(request):
    """``(task, pickled warmed environment, its observation)``, built once per task."""
    return (request.param, *warmed_blob(request.param))


def without_tokens(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "token_usage_so_far"}


def assert_changes_nothing(blob: bytes, obs, action: Action) -> str:
    """Step ``action`` on one copy and ``NOOP`` on another: only the tokens may differ.
    Returns the error code."""
    env, twin = pickle.loads(blob), pickle.loads(blob)
    budget, hypotheses = env._budget, list(env._hypotheses)
    after, reward, terminated, truncated, info = env.step(action)
    ref, ref_reward, *_, ref_info = twin.step(NOOP)
    assert info["error"] is not None
    assert ref_info["error"] == ErrorCode.INVALID_TARGET_PHASE.value
    assert info["outcome"] is None
    assert "hypothesis" not in info
    assert not terminated and not truncated  # an invalid stop does not stop
    assert after.timestamp == obs.timestamp + 1  # it took the day
    assert after.budget_remaining == obs.budget_remaining == env._budget == budget
    assert without_tokens(after.to_dict()) == without_tokens(ref.to_dict())
    assert np.array_equal(after.patients, ref.patients)
    assert reward == ref_reward
    # hidden state too: no outcome drawn, nothing logged or stored
    assert env._rng.bit_generator.state == twin._rng.bit_generator.state
    assert env._hypotheses == hypotheses == twin._hypotheses
    assert env._plan == twin._plan
    assert env._memory.keys() == twin._memory.keys()
    return info["error"]


# ---------------------------------------------------------------- malformed arguments
#: Values that are not text at all: ``invalid_argument`` in any text field.
NOT_TEXT = {
    "ndarray_str": np.array(["P-1000"]),
    "ndarray_2": np.array(["screening", "site_A"]),
    "ndarray_empty": np.array([]),
    "ndarray_0d": np.array("P-1000"),
    "ndarray_float": np.array([0.5, 1.5]),
    "numpy_str_": np.str_("P-1000"),
    "numpy_int": np.int64(1000),
    "bytes": b"P-1000",
    "bytearray": bytearray(b"site_A"),
    "int": 1000,
    "negative_int": -3,
    "float": 1000.5,
    "nan": float("nan"),
    "bool": True,
    "list": ["P-1000"],
    "tuple": ("screening",),
    "dict": {"id": "P-1000"},
    "set": {"P-1000"},
    "object": object(),
    "huge_text": "x" * 10**6,
    "just_over_limit": "a" * (MAX_TEXT_CHARS + 1),
    "huge_id": "P-1" + "0" * 5000,
}


KEEP = object()


def _action_for(field: str, value=KEEP) -> Action:
    """An otherwise valid action whose ``field`` is ``value`` (``KEEP``: the valid one)."""
    kind = {
        "patient_id": ActionType.SCREEN_PATIENT,
        "site_id": ActionType.ALLOCATE_TO_SITE,
        "strategy_change": ActionType.ADJUST_STRATEGY,
        "target_phase": ActionType.PLAN_NEXT_PHASE,
        "plan_summary": ActionType.PLAN_NEXT_PHASE,
        "memory_key": ActionType.SUMMARIZE_AND_INDEX,
        "memory_payload": ActionType.SUMMARIZE_AND_INDEX,
        "memory_query": ActionType.RETRIEVE_RELEVANT_HISTORY,
        "hypothesis": ActionType.SCREEN_PATIENT,
    }[field]
    valid = {
        ActionType.SCREEN_PATIENT: {"patient_id": "BEST"},
        ActionType.ALLOCATE_TO_SITE: {"patient_id": "CONSENTED", "site_id": "OPEN"},
        ActionType.ADJUST_STRATEGY: {"strategy_change": "increase_outreach"},
        ActionType.PLAN_NEXT_PHASE: {"target_phase": "screening", "plan_summary": "go"},
        ActionType.SUMMARIZE_AND_INDEX: {"memory_key": "beta", "memory_payload": "x"},
        ActionType.RETRIEVE_RELEVANT_HISTORY: {"memory_query": "alpha"},
    }[kind]
    if value is KEEP:
        value = "site A is slow" if field == "hypothesis" else valid[field]
    return Action(kind, **{**valid, field: value})


def _open_site(obs) -> str:
    """A site that takes an allocation today."""
    for s in obs.sites:
        if getattr(s, "active", True) and not s.under_audit and s.capacity_remaining > 0:
            return s.site_id
    raise AssertionError("no site takes allocations")


def _aim(action: Action, obs) -> Action:
    """Replace placeholders by the best screening candidate (``BEST``), a consented
    patient (``CONSENTED``) and a site taking allocations (``OPEN``) of ``obs``."""
    if type(action.patient_id) is str and action.patient_id == "BEST":
        action = replace(action, patient_id=patient_id(best_screen_candidate(obs)))
    if type(action.patient_id) is str and action.patient_id == "CONSENTED":
        action = replace(action, patient_id=obs.allocation_candidates[0]["id"])
    if type(action.site_id) is str and action.site_id == "OPEN":
        action = replace(action, site_id=_open_site(obs))
    return action


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_the_reference_actions_are_valid(base, field):
    """Without the malformed value each action is valid (so the malformed value, not the
    rest of the action, is what makes it a no-op)."""
    _, blob, obs = base
    env = pickle.loads(blob)
    *_, info = env.step(_aim(_action_for(field), obs))
    assert info["error"] is None, (field, info)


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("label", list(NOT_TEXT))
def test_a_non_text_value_is_an_invalid_argument_and_changes_nothing(base, field, label):
    _, blob, obs = base
    action = _aim(_action_for(field, NOT_TEXT[label]), obs)
    assert assert_changes_nothing(blob, obs, action) == INVALID


@pytest.mark.parametrize("label", list(NOT_TEXT))
def test_a_malformed_argument_to_stop_does_not_stop(base, label):
    _, blob, obs = base
    action = Action(ActionType.STOP_RECRUITMENT, hypothesis=NOT_TEXT[label])
    assert assert_changes_nothing(blob, obs, action) == INVALID


#: Text that is well-formed as text but names nothing: the handler's own error code.
BAD_TEXT = [
    ("patient_id", "P-1" + "0" * 4000, ErrorCode.PATIENT_NOT_FOUND),  # long, under the limit
    ("patient_id", "P-１０００", ErrorCode.PATIENT_NOT_FOUND),  # fullwidth digits
    ("patient_id", "P-٣", ErrorCode.PATIENT_NOT_FOUND),  # Arabic-Indic digit
    ("patient_id", "-3", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P--3", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-1000.5", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-1e3", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-0x3e8", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-1_000", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-99999999999", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-1000\x00", ErrorCode.PATIENT_NOT_FOUND),
    ("patient_id", "P-\ud800", ErrorCode.PATIENT_NOT_FOUND),  # lone surrogate
    ("patient_id", "", ErrorCode.MISSING_PATIENT_ID),
    ("site_id", "site_Ä", ErrorCode.SITE_NOT_FOUND),
    ("site_id", "ｓｉｔｅ_A", ErrorCode.SITE_NOT_FOUND),
    ("site_id", "site_" + "A" * 4000, ErrorCode.SITE_NOT_FOUND),
    ("site_id", "site_\U0001f600", ErrorCode.SITE_NOT_FOUND),
    ("strategy_change", "focus_site_Ä", ErrorCode.UNKNOWN_STRATEGY),
    ("strategy_change", "ｒｅｌａｘ_criteria", ErrorCode.UNKNOWN_STRATEGY),
    ("strategy_change", "increase_outreach" * 200, ErrorCode.UNKNOWN_STRATEGY),
    ("target_phase", "scréening", ErrorCode.INVALID_TARGET_PHASE),
    ("target_phase", "screening\u200b", ErrorCode.INVALID_TARGET_PHASE),
    ("memory_key", "\u3000\u2003", ErrorCode.MISSING_MEMORY_KEY),  # only Unicode spaces
    ("memory_query", "患者の記録 ✓", ErrorCode.MEMORY_NOT_FOUND),
    ("memory_query", "\ud800\udfff", ErrorCode.MEMORY_NOT_FOUND),
]


@pytest.mark.parametrize(
    "field, value, code", BAD_TEXT, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(BAD_TEXT)]
)
def test_text_that_names_nothing_is_the_handlers_error_and_changes_nothing(
    base, field, value, code
):
    _, blob, obs = base
    action = _aim(_action_for(field, value), obs)
    assert assert_changes_nothing(blob, obs, action) == code.value


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        np.float64("nan"),
        np.float32("inf"),
        "high",
        "0.5",
        b"0.5",
        np.array([0.5]),
        np.array(0.5),
        [0.5],
        True,
        np.bool_(False),
        complex(0.5, 0.0),
        Fraction(10**400, 3),  # real, but beyond float range
        10**400,  # an int beyond float range: not finite as a float
        -(10**400),
    ],
    ids=repr,
)
def test_a_non_finite_or_non_numeric_confidence_is_an_invalid_argument(base, value):
    _, blob, obs = base
    action = Action(
        ActionType.SCREEN_PATIENT,
        patient_id=patient_id(best_screen_candidate(obs)),
        hypothesis="site A is slow",
        confidence=value,
    )
    assert assert_changes_nothing(blob, obs, action) == INVALID


@pytest.mark.parametrize(
    "value",
    [0.5, 0, 1, -2.5, 10**300, np.float32(0.25), np.int64(3), Fraction(1, 3)],
    ids=lambda v: repr(v)[:20],
)
def test_a_finite_real_confidence_is_accepted_and_logged_as_given(value):
    env, _ = warmed("easy_bench")
    action = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening", confidence=value)
    *_, info = env.step(action)
    assert info["error"] is None
    assert info["hypothesis"]["confidence"] is value  # nothing converted


@pytest.mark.parametrize("field", ["plan_summary", "memory_payload", "hypothesis"])
@pytest.mark.parametrize(
    "text", ["患者 ✓ Ä", "\ud800", "emoji \U0001f600\x00", "z" * MAX_TEXT_CHARS], ids=repr
)
def test_non_ascii_free_text_is_valid_text_and_kept_as_given(field, text):
    env, obs = warmed("medium_bench")
    action = _aim(_action_for(field, text), obs)
    obs, *_, info = env.step(action)
    assert info["error"] is None
    if field == "plan_summary":
        assert obs.to_dict()["current_plan"]["plan_summary"] == text
    elif field == "memory_payload":
        assert env._memory["beta"].payload == text
    else:
        assert info["hypothesis"]["hypothesis"] == text


# ---------------------------------------------------------------- arbitrary values
anything = st.one_of(
    st.none(),
    st.text(),
    st.text(alphabet=st.characters(codec=None), max_size=30),  # surrogates included
    st.sampled_from(["P-1000", "P-1001", "site_A", "site_B", "screening", "alpha", "  "]),
    st.binary(),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.complex_numbers(),
    st.fractions(),
    st.lists(st.integers(), max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.from_type(frozenset),
    st.builds(object),
    hnp.arrays(
        st.sampled_from([np.float64, np.int32, np.bool_, np.dtype("U8")]),
        hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
    ),
    hnp.from_dtype(np.dtype("U8")),
    hnp.from_dtype(np.dtype("f8")),
)
ACTION_FIELDS = (*TEXT_FIELDS, "confidence")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    task=st.sampled_from(TASK_NAMES),
    kind=st.sampled_from(list(ActionType)),
    values=st.fixed_dictionaries({}, optional={f: anything for f in ACTION_FIELDS}),
)
def test_step_never_raises_on_arbitrary_argument_values(task, kind, values):
    env = pickle.loads(warmed_blob(task)[0])
    before = env._budget
    action = Action(kind, **values)
    expected = argument_error(action)
    _, reward, terminated, truncated, info = env.step(action)
    assert math.isfinite(reward) and truncated is False
    malformed = any(
        v is not None and (type(v) is not str or len(v) > MAX_TEXT_CHARS)
        for f, v in values.items()
        if f != "confidence"
    )
    if malformed:
        assert expected is ErrorCode.INVALID_ARGUMENT
    if expected is not None:
        assert info["error"] == INVALID
        assert env._budget == before
        assert not terminated


@settings(max_examples=500, deadline=None)
@given(action_values=st.fixed_dictionaries({}, optional={f: anything for f in ACTION_FIELDS}))
def test_argument_error_never_raises(action_values):
    result = argument_error(Action(ActionType.SCREEN_PATIENT, **action_values))
    assert result in (None, ErrorCode.INVALID_ARGUMENT)


def test_argument_error_never_raises_on_objects_that_misbehave():
    class Hostile(float):
        def __float__(self):
            raise RuntimeError("no")

        def __bool__(self):
            raise RuntimeError("no")

    class HostileStr(str):
        def __len__(self):
            raise RuntimeError("no")

    assert argument_error(Action(ActionType.STOP_RECRUITMENT, confidence=Hostile(1.0))) in (
        None,
        ErrorCode.INVALID_ARGUMENT,
    )
    hostile = Action(ActionType.STOP_RECRUITMENT, hypothesis=HostileStr("x"))
    assert argument_error(hostile) is ErrorCode.INVALID_ARGUMENT
    assert argument_error(object()) is ErrorCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- task overrides
BAD_OVERRIDES = [
    ("dropout_base", -1),
    ("dropout_base", float("nan")),
    ("target", 0),
    ("target", True),
    ("target", 35.0),
    ("budget", 0),
    ("budget", -5.0),
    ("budget", float("inf")),
    ("budget", float("nan")),
    ("budget", "abc"),
    ("n_sites", 27),
    ("n_sites", 0),
    ("screen_cost", -1.0),
    ("recontact_cost", -0.01),
    ("enrol_cost", float("nan")),
    ("strategy_cost", float("inf")),
    ("pool_size", 0),
    ("site_capacity", -1),
    ("site_capacity", False),
    ("horizon", 0),
    ("loss_on_failed_allocation", 1.5),
    ("cooloff_decay", -0.1),
    ("wait_penalty", -1.0),
    ("memory_capacity", 0),
    ("biased_sites", (2, 1)),
    ("biased_sites", (-1, 1)),
    ("biased_sites", (0, 27)),
    ("biased_sites", (1,)),
    ("biased_sites", (1.0, 2.0)),
    ("world_types", ("noise", "alien")),
    ("world_types", ()),
    ("world_types", "noise"),
    ("event_rates", {"meteor_strike": 0.1}),
    ("event_rates", {"site_delay": 1.5}),
    ("event_rates", {"site_delay": -0.1}),
    ("event_rates", {"site_delay": float("nan")}),
    ("event_rates", [0.1]),
    ("name", 3),
    ("description", None),
    # sites, follow-up and amendments (task version 2)
    ("followup_days", -1),
    ("followup_days", 366),
    ("site_rate_mean", 0.0),
    ("site_rate_mean", 51.0),
    ("site_rate_cv", -0.5),
    ("activation_span", 10_000),
    ("never_enrol_prob", 1.1),
    ("other_site_conversion", -0.1),
    ("amendment_cost_multiplier", -1.0),
    ("amendment_delay", (30, 14)),
    ("amendment_delay", (0, 366)),
    ("max_amendments", 21),
]
FIELD_NAMES = {f.name for f in fields(TaskParams)}


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("name, value", BAD_OVERRIDES, ids=[f"{n}={v!r}" for n, v in BAD_OVERRIDES])
def test_a_bad_override_is_a_value_error_at_make_naming_the_parameter(task, name, value):
    with pytest.raises(ValueError) as raised:
        make(f"recruitment/{task}", **{name: value})
    assert repr(name) in str(raised.value)


def test_the_message_states_the_range_and_the_value():
    with pytest.raises(ValueError) as raised:
        make("recruitment/hard_bench", target=0)
    assert str(raised.value) == "task parameter 'target' must be an integer in [1, 100000], got 0"


def test_an_unknown_parameter_is_still_a_type_error():
    with pytest.raises(TypeError, match="no_such_parameter"):
        make("recruitment/easy_bench", no_such_parameter=1)


@pytest.mark.parametrize(
    "overrides",
    [
        {"n_sites": 26, "biased_sites": (0, 26)},
        {"budget": 1, "target": 1, "pool_size": 1},
        {"event_rates": {}},
        {"event_rates": {"regulatory_hold": 1.0}},
        {"world_types": ["dropout", "site_bias", "noise"]},  # a list, as YAML gives it
        {"biased_sites": [0, 1]},
        {"budget": np.float64(5e4), "target": np.int64(20)},
        {"screen_cost": 0, "recontact_cost": 0, "enrol_cost": 0, "strategy_cost": 0},
    ],
    ids=repr,
)
def test_edge_overrides_in_range_build_and_play(overrides):
    env = make("recruitment/medium_bench", **overrides)
    agent = make_agent("heuristic", AgentContext.of(env))
    episode = play_episode(env, agent, 5, agent_seed=123)
    assert 0.0 <= episode.score <= 1.0


@pytest.mark.parametrize("task", TASK_NAMES)
def test_no_dropout_at_all_plays_a_full_heuristic_episode(task):
    env = make(f"recruitment/{task}", dropout_base=0)
    agent = make_agent("heuristic", AgentContext.of(env))
    episode = play_episode(env, agent, 3, agent_seed=123)
    assert 0.0 <= episode.score <= 1.0
    assert episode.metrics["net_enrolled"] > 0
    assert env.day == env.params.horizon
    assert env._observe().funnel.dropped_out == 0


@pytest.mark.parametrize("task", TASK_NAMES)
def test_the_default_tasks_pass_check_params(task):
    check_params(TASKS[task])
    check_params(TASKS[task].with_overrides())


def test_every_task_parameter_has_a_range():
    """A new field of ``TaskParams`` needs an entry in ``PARAM_RANGES``."""
    missing = sorted(FIELD_NAMES - set(PARAM_RANGES))
    assert not missing, f"add these TaskParams fields to validation.PARAM_RANGES: {missing}"
    assert set(PARAM_RANGES) <= FIELD_NAMES, "PARAM_RANGES names a parameter the task does not have"


def test_a_bad_override_in_the_sweep_config_is_a_config_error():
    with pytest.raises(ConfigError) as raised:
        load(["preset=smoke", "env.overrides={hard_bench: {target: 0}}"])
    message = str(raised.value)
    assert "env.overrides.hard_bench" in message and "'target'" in message
    assert "[1, 100000]" in message
