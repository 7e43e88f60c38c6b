"""Inputs an agent or a client controls (spec evaluation_integrity.md, section 3 and
decision 3): each is either refused with an error naming the field, the environment
unchanged, or accepted exactly as the equivalent Python value.

- An integer too large for a float (``10**400``) in any numeric action field of either
  family is the field's error code, never an ``OverflowError`` out of ``step``.
- numpy integer and float scalars play bit-identical trajectories to the Python values
  they hold (cohort sizes, allocations, strictness, confidence, macro indices); a bool
  is never a number and never a macro index (adapter and VectorEnv).
- An unseeded reset of the Gymnasium adapter, the VectorEnv and the served environment
  reports no world seed, nor anything it can be computed from.
- ``clinbench serve``: a client going away (clean close, ``close`` message, dropped
  connection, mid-answer) frees its session and logs one line, never a traceback.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import math
import pickle
import socket
import time

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from shared_helpers import same

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.gym_adapter import MacroGymEnv, gym_id
from clinbench.env.recruitment import Action, ActionType
from clinbench.env.trial_design import TrialAction
from clinbench.env.trial_design.actions import ALLOCATION_FIELDS, SCALAR_FIELDS

HAVE_SERVE = importlib.util.find_spec("openenv") is not None
needs_serve = pytest.mark.skipif(
    not HAVE_SERVE, reason='needs the serve extra: pip install -e ".[serve]"'
)
TRIAL = "trial_design/effective_drug"
TRIALS = ["trial_design/effective_drug", "trial_design/efficacy_safety"]
EASY = "recruitment/easy_bench"
HUGE = 10**400  # an int beyond float range: float(HUGE) raises OverflowError


# =========================================================================== trial_design
def _frozen(v):
    """``v`` as comparable plain data (arrays by dtype and bytes, containers deeply)."""
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_frozen(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((k, _frozen(x)) for k, x in v.items()))
    if isinstance(v, (int, float, str, bool, type(None))):
        return v
    return ("object", id(v))  # worlds, boundaries: the very same object


def trial_state(env) -> dict:
    """Everything a look can change but the look counter and the last error."""
    out = {}
    for k, v in vars(env).items():
        if k in ("_look", "_last_error", "_obs", "_score", "_obs0"):
            continue
        out[k] = [(b.fractions, id(b.state)) for b in v] if k == "_bounds" else _frozen(v)
    return out


def warm_trial(env_id: str = TRIAL, seed: int = 5):
    env = make(env_id)
    env.reset(seed=seed)
    obs, *_ = env.step(TrialAction(n_next_cohort=30))
    return env, obs


def cohort(**fields) -> TrialAction:
    """A valid cohort action of 10 with ``fields`` replaced."""
    return TrialAction(**{"n_next_cohort": 10, **fields})


def alloc(control, low, mid, high) -> dict:
    return dict(zip(ALLOCATION_FIELDS, (control, low, mid, high), strict=True))


#: (label, action, error code): numbers beyond float range and their finite cousins.
OUT_OF_RANGE = [
    ("strictness 10**400", cohort(inclusion_criteria_strictness=HUGE), "bad_strictness"),
    ("strictness -10**400", cohort(inclusion_criteria_strictness=-HUGE), "bad_strictness"),
    ("strictness 2**1024", cohort(inclusion_criteria_strictness=2**1024), "bad_strictness"),
    ("strictness inf", cohort(inclusion_criteria_strictness=math.inf), "bad_strictness"),
    ("strictness True", cohort(inclusion_criteria_strictness=True), "bad_strictness"),
    ("strictness np.True_", cohort(inclusion_criteria_strictness=np.True_), "bad_strictness"),
    ("cohort 10**400", cohort(n_next_cohort=HUGE), "bad_cohort_size"),
    ("cohort -10**400", cohort(n_next_cohort=-HUGE), "bad_cohort_size"),
    ("cohort True", cohort(n_next_cohort=True), "invalid_argument"),
    ("cohort np.True_", cohort(n_next_cohort=np.True_), "invalid_argument"),
    ("cohort 10.0", cohort(n_next_cohort=10.0), "invalid_argument"),
    ("cohort np.float32(10)", cohort(n_next_cohort=np.float32(10)), "invalid_argument"),
    ("futility flag 1", TrialAction(stop_for_futility=1), "invalid_argument"),
    ("futility flag np.int64(1)", TrialAction(stop_for_futility=np.int64(1)), "invalid_argument"),
    ("allocation True", cohort(**alloc(True, 0, 0, 0)), "bad_allocation"),
    ("allocation np.True_", cohort(**alloc(np.True_, 0.0, 0.0, 0.0)), "bad_allocation"),
    *[
        (f"{name} 10**400", cohort(**{**alloc(0, 0, 0, 0), name: HUGE}), "bad_allocation")
        for name in ALLOCATION_FIELDS
    ],
    ("allocation -10**400", cohort(**alloc(-HUGE, 1, 0, 0)), "bad_allocation"),
]


@pytest.mark.parametrize(
    "label, action, code", OUT_OF_RANGE, ids=[label for label, _, _ in OUT_OF_RANGE]
)
def test_a_bad_number_is_the_fields_error_code_and_changes_nothing(label, action, code):
    """No exception out of ``step``; the look is used and nothing else changes: the state
    equals the state before, and the trial then plays on exactly like a twin that got a
    plain out-of-range value of the same field."""
    env, obs = warm_trial()
    twin = pickle.loads(pickle.dumps(env))
    before, look = trial_state(env), env._look
    after, reward, done, _, info = env.step(action)
    assert info["error"] == code and info["outcome"] is None, label
    assert reward == 0.0 and not done
    assert env._look == look + 1 and after.last_error == code
    assert trial_state(env) == before
    keep = ("look", "last_error", "final_analysis")
    assert {k: v for k, v in after.to_dict().items() if k not in keep} == {
        k: v for k, v in obs.to_dict().items() if k not in keep
    }
    # the twin gets an ordinary invalid action with the same code, then both play on
    plain = {
        "bad_strictness": cohort(inclusion_criteria_strictness=2.0),
        "bad_cohort_size": cohort(n_next_cohort=101),
        "invalid_argument": cohort(n_next_cohort="10"),
        "bad_allocation": cohort(**alloc(0.5, 0.1, 0.1, 0.1)),
    }[code]
    ref, *_, ref_info = twin.step(plain)
    assert ref_info["error"] == code and same(after, ref)
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(3)
    done = False
    while not done:
        action = agent.act(after)
        after, reward, done, _, info = env.step(action)
        ref, ref_reward, ref_done, _, ref_info = twin.step(action)
        assert same(after, ref) and reward == ref_reward and done == ref_done
        assert same(info, ref_info)


def _numbers():
    """Any value a numeric field might be handed: unbounded ints, floats with nan and
    inf, bools, numpy scalars of every width, text, None."""
    numpy_scalars = st.one_of(
        *[
            hnp.from_dtype(np.dtype(t))
            for t in ("i1", "i4", "i8", "u1", "u8", "f2", "f4", "f8", "?")
        ]
    )
    return st.one_of(
        st.integers(min_value=-(10**500), max_value=10**500),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        numpy_scalars,
        st.sampled_from([None, "0.5", HUGE, -HUGE, 2**1024, 2**1023]),
    )


#: A valid value of each numeric field: each is drawn as it or as any number, so that
#: odd values reach every check (a cohort size is checked before the strictness).
VALID = {
    "n_next_cohort": 10,
    **dict.fromkeys(ALLOCATION_FIELDS),
    "inclusion_criteria_strictness": None,
    "stop_for_success": False,
    "stop_for_futility": False,
}


@settings(max_examples=400, deadline=None)
@given(
    values=st.fixed_dictionaries(
        {name: st.one_of(st.just(VALID[name]), _numbers()) for name in SCALAR_FIELDS}
    )
)
@example(values={**VALID, "inclusion_criteria_strictness": HUGE})  # was an OverflowError
@example(values={**VALID, **dict.fromkeys(ALLOCATION_FIELDS, -HUGE)})
def test_trial_step_never_raises_on_any_number(values):
    env, _ = warm_trial()
    if values["stop_for_success"] is True or values["stop_for_success"] is np.True_:
        values["success_arm"] = "mid"
    _, reward, _, _, info = env.step(TrialAction(**values))
    assert info["error"] is None or isinstance(info["error"], str)
    assert math.isfinite(reward)


def _scripted_trial(rng: np.random.Generator, obs, n_looks: int) -> list[dict]:
    """Python-valued actions for a trial: cohorts with float32-exact allocations and
    strictness (so that float32 scalars hold exactly these values), arm drops, a stop."""
    actions = []
    for look in range(n_looks):
        a: dict = {"n_next_cohort": int(rng.integers(0, 40))}
        if look % 2:
            w = rng.dirichlet(np.ones(4)).astype(np.float32)
            w[0] = np.float32(1.0) - w[1:].sum(dtype=np.float32)
            a.update(alloc(*(float(v) for v in w)))
        if look % 3 == 1:
            a["inclusion_criteria_strictness"] = float(np.float32(rng.choice([0.25, 0.4, 0.9])))
        if look == 4:
            a["drop_arm"] = "low"
            a.update(alloc(0.5, 0.0, 0.25, 0.25))
        actions.append(a)
    actions.append({"stop_for_futility": True})
    return actions


def _as_numpy(action: dict, int_type, float_type) -> dict:
    out = {}
    for k, v in action.items():
        if type(v) is bool:
            out[k] = np.bool_(v)
        elif type(v) is int:
            out[k] = int_type(v)
        elif type(v) is float:
            out[k] = float_type(v)
        else:
            out[k] = v
    return out


def _play_trial(env_id: str, seed: int, actions: list) -> list:
    env = make(env_id)
    obs, info = env.reset(seed=seed)
    out = [(obs, info)]
    for a in actions:
        if env._done:
            break
        step = env.step(a)
        out.append(step)
    return out


@pytest.mark.parametrize("env_id", TRIALS)
@pytest.mark.parametrize(
    "int_type, float_type",
    [(np.int64, np.float64), (np.int32, np.float32), (np.int64, np.float32), (np.uint8, float)],
    ids=["int64-float64", "int32-float32", "int64-float32", "uint8-float"],
)
@pytest.mark.parametrize("as_dict", [False, True], ids=["TrialAction", "dict"])
def test_numpy_scalars_play_the_trial_of_their_python_values_bit_for_bit(
    env_id, int_type, float_type, as_dict
):
    played = 0
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        script = _scripted_trial(rng, None, 7)
        numpy_script = [_as_numpy(a, int_type, float_type) for a in script]
        if not as_dict:
            script = [TrialAction(**a) for a in script]
            numpy_script = [TrialAction(**a) for a in numpy_script]
            for a, b in zip(script, numpy_script, strict=True):
                assert same(a.to_dict(), b.to_dict())  # stored as the Python values
        python = _play_trial(env_id, seed, script)
        numpy = _play_trial(env_id, seed, numpy_script)
        assert same(python, numpy)
        played += sum(s[-1]["error"] is None for s in python[1:])
    assert played >= 12  # the scripts play (cohorts, allocations, strictness, drops)


def test_float32_allocations_are_accepted_within_the_sum_tolerance():
    """Was ``bad_allocation``: ``np.float32(1/3)`` thrice sums to 1 within 1e-6 (as the
    Python value 0.3333333432674408 does)."""
    third = np.float32(1 / 3)
    a = cohort(n_next_cohort=30, **alloc(third, third, third, np.float32(0.0)))
    b = cohort(n_next_cohort=30, **alloc(float(third), float(third), float(third), 0.0))
    (env, _), (twin, _) = warm_trial(), warm_trial()
    obs, *_, info = env.step(a)
    ref, *_, ref_info = twin.step(b)
    assert info["error"] is None and info["outcome"] == "enrolled 30"
    assert same(obs, ref) and same(info, ref_info)


# =========================================================================== recruitment
def _warm_recruitment(seed: int = 7):
    env = make(EASY)
    obs, _ = env.reset(seed=seed)
    agent = make_agent("heuristic", AgentContext.of(env))
    agent.reset(11)
    for _ in range(15):
        obs, *_ = env.step(agent.act(obs))
    return env, obs, agent


@pytest.mark.parametrize("value", [HUGE, -HUGE, 2**1024, np.float64("inf")], ids=repr)
def test_a_confidence_beyond_float_range_is_invalid_and_changes_nothing(value):
    env, obs, agent = _warm_recruitment()
    twin = pickle.loads(pickle.dumps(env))
    budget, hypotheses = env._budget, list(env._hypotheses)
    bad = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening", confidence=value)
    plain = Action(ActionType.PLAN_NEXT_PHASE, target_phase="screening", confidence=math.nan)
    after, reward, done, _, info = env.step(bad)
    ref, ref_reward, _, _, ref_info = twin.step(plain)
    assert info["error"] == ref_info["error"] == "invalid_argument"
    assert "hypothesis" not in info and not done
    assert after.timestamp == obs.timestamp + 1
    assert env._budget == budget and env._hypotheses == hypotheses
    assert same(after, ref) and reward == ref_reward and same(info, ref_info)
    assert env._rng.bit_generator.state == twin._rng.bit_generator.state
    done = False
    while not done:  # and the episodes go on alike
        action = agent.act(after)
        after, reward, done, _, info = env.step(action)
        ref, ref_reward, _, _, ref_info = twin.step(action)
        assert same(after, ref) and reward == ref_reward and same(info, ref_info)


@pytest.mark.parametrize(
    "python, numpy",
    [(0.25, np.float32(0.25)), (0.7, np.float64(0.7)), (3, np.int64(3)), (1, np.int32(1))],
    ids=repr,
)
def test_a_numpy_confidence_plays_as_its_python_value(python, numpy):
    """Accepted, logged as given, and the episode is the Python value's, bit for bit."""

    def play(confidence):
        env = make(EASY)
        obs, _ = env.reset(seed=4)
        agent = make_agent("heuristic", AgentContext.of(env))
        agent.reset(2)
        log, done = [], False
        while not done:
            a = dataclasses.replace(agent.act(obs), confidence=confidence)
            obs, reward, done, _, info = env.step(a)
            assert info["error"] is None or info["error"] != "invalid_argument"
            echo = info.pop("hypothesis")["confidence"]
            assert echo is confidence  # nothing converted
            log.append((obs, reward, info))
        return log

    assert same(play(python), play(numpy))


# =========================================================================== Gymnasium
NOT_AN_INDEX = [True, False, np.True_, np.False_, 1.0, np.float64(1.0), "1", None, np.array([1])]


@pytest.mark.parametrize("env_id", [EASY, TRIAL])
@pytest.mark.parametrize("bad", NOT_AN_INDEX, ids=repr)
def test_the_adapter_refuses_a_bool_as_a_macro_index_and_changes_nothing(env_id, bad):
    env, twin = MacroGymEnv(env_id), MacroGymEnv(env_id)
    assert env.action_space.contains(True)  # Gymnasium's Discrete would take it as 1
    _, info = env.reset(seed=9)
    twin.reset(seed=9)
    with pytest.raises(ValueError, match="not in Discrete.*a bool is not one"):
        env.step(bad)
    assert env._played == []
    k = int(np.flatnonzero(info["action_mask"])[0])
    out, ref = env.step(k), twin.step(k)
    assert same(out, ref)


INDEX_TYPES = [np.int64, np.int32, np.int8, np.uint8, np.uint64, lambda k: np.array(k)]


@pytest.mark.parametrize("env_id", [EASY, TRIAL])
@pytest.mark.parametrize(
    "to_index", INDEX_TYPES, ids=["int64", "int32", "int8", "uint8", "uint64", "0-d array"]
)
def test_the_adapter_plays_a_numpy_integer_as_its_int(env_id, to_index):
    env, twin = MacroGymEnv(env_id), MacroGymEnv(env_id)
    out, ref = env.reset(seed=3), twin.reset(seed=3)
    rng = np.random.default_rng(0)
    steps, done = 0, False
    while not done:
        mask = out[-1]["action_mask"]
        valid = np.flatnonzero(mask[:-1]) if mask[:-1].any() else np.flatnonzero(mask)
        k = int(rng.choice(valid))
        out, ref = env.step(to_index(k)), twin.step(k)
        assert same(out, ref)
        done, steps = out[2], steps + 1
    assert steps >= 3 and env._played == twin._played
    assert all(type(k) is int for k in env._played)


@pytest.mark.parametrize("env_id", [EASY, TRIAL])
def test_the_vector_env_refuses_bools_and_plays_numpy_integers_as_ints(env_id):
    gid = gym_id(env_id)
    envs, twin = (
        gym.make_vec(gid, num_envs=3, vectorization_mode="vector_entry_point") for _ in range(2)
    )
    out, ref = envs.reset(seed=5), twin.reset(seed=5)
    for bad in (
        np.array([True, False, True]),
        [True, 1, 1],
        [np.True_, 1, 1],
        (1, 1, False),
        [1.0, 1, 1],
        np.array([1.0, 1.0, 1.0]),
    ):
        with pytest.raises(ValueError, match="integers"):
            envs.step(bad)
    rng = np.random.default_rng(1)
    for step in range(40):
        masks = out[-1]["action_mask"]
        ks = np.array(
            [
                rng.choice(np.flatnonzero(m[:-1])) if m[:-1].any() else len(m) - 1
                for m in masks  # never stop early
            ]
        )
        as_given = [
            ks.astype(np.int32),
            [np.int64(k) for k in ks],
            [int(k) for k in ks],
            ks.astype(np.uint8),
        ][step % 4]
        out, ref = envs.step(as_given), twin.step(ks)
        assert same(out[:4], ref[:4]), step
        assert out[4].keys() == ref[4].keys()


# ---------------------------------------------------------------- unseeded resets leak no seed
def _leaks(value, seed: int) -> bool:
    """``seed`` in ``value`` (an int equal to it, its digits in text, an array entry)."""
    if isinstance(value, dict):
        return any(_leaks(k, seed) or _leaks(v, seed) for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return any(_leaks(v, seed) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iuf" and bool(np.any(value == seed))
    if isinstance(value, str):
        return str(seed) in value
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return value == seed
    return False


@pytest.mark.parametrize("env_id", [EASY, TRIAL, "recruitment/hard_bench"])
def test_an_unseeded_adapter_reset_reports_no_world_seed(env_id):
    env = MacroGymEnv(env_id)
    _, info = env.reset(seed=4)
    assert info["seed"] == 4  # a seeded reset echoes the caller's own seed
    for _ in range(3):
        features, info = env.reset()
        native_seed = env._episode[0]
        # the world played is the native world of that seed ...
        ref_features, _ = MacroGymEnv(env_id).reset(seed=native_seed)
        np.testing.assert_array_equal(features, ref_features)
        # ... and nothing in the info gives it away
        assert "seed" not in info
        assert not _leaks(info, native_seed), info
    envs = gym.make_vec(gym_id(env_id), num_envs=2, vectorization_mode="vector_entry_point")
    _, info = envs.reset(seed=3)
    assert list(info["seed"]) == [3, 4]
    _, info = envs.reset()
    assert "seed" not in info and "_seed" not in info
    done, steps = np.zeros(2, dtype=bool), 0
    while not done.all() or steps < 3:  # through autoresets
        ks = [int(np.flatnonzero(m)[-1]) for m in info["action_mask"]]  # stop: short episodes
        _, _, terminated, _, info = envs.step(ks)
        done |= terminated
        steps += 1
        assert "seed" not in info, steps


# =========================================================================== served env
@needs_serve
@pytest.mark.parametrize("task", [EASY, TRIAL])
def test_an_unseeded_served_reset_reports_no_world_seed(task):
    from clinbench.serve.app import ServedEnv
    from clinbench.serve.wire import decode

    served = ServedEnv(task)
    native = make(task)
    seen = {}
    reset = native.reset

    def spy(seed=None, options=None):
        obs, info = reset(seed=seed, options=options)
        seen["info"] = dict(info)
        return obs, info

    native.reset = spy
    served._envs[(task, repr([]))] = native
    answer = served.reset(seed=6)
    assert decode(answer.info)["seed"] == 6
    for _ in range(3):
        answer = served.reset()
        info = decode(answer.info)
        assert "seed" not in info
        # what the native env knows of its world: the seed it drew (trial_design
        # reports it) or its root entropy (recruitment draws from a SeedSequence)
        secrets = [native._root_seq.entropy]
        if seen["info"].get("seed") is not None:
            secrets.append(seen["info"]["seed"])
        for secret in secrets:
            assert not _leaks(info, secret)
            assert not _leaks(answer.observation, secret)
            assert not _leaks(answer.native, secret)
        assert served.state.seed is None


@pytest.fixture(scope="module")
def logged_server():
    """A server of one session at most, its log (uvicorn's) captured record by record."""
    if not HAVE_SERVE:
        pytest.skip('needs the serve extra: pip install -e ".[serve]"')
    from clinbench.serve.app import serve_in_thread

    srv, url = serve_in_thread(TRIAL, max_sessions=1, log_level="info")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(logging.DEBUG)
    watched = [logging.getLogger("uvicorn.error"), logging.getLogger()]
    for logger in watched:  # the root too: asyncio's "exception was never retrieved"
        logger.addHandler(handler)
    yield url, records
    for logger in watched:
        logger.removeHandler(handler)
    srv.should_exit = True


def _client(url):
    from openenv.core.generic_client import GenericEnvClient

    return GenericEnvClient(base_url=url, message_timeout_s=30).connect()


def _ended(records) -> list[str]:
    return [r.getMessage() for r in records if "WebSocket session ended" in r.getMessage()]


def _wait_for_lines(records, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(_ended(records)) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(_ended(records)) == n, _ended(records)


@needs_serve
def test_closes_and_disconnects_free_the_session_and_log_one_line_no_traceback(
    logged_server, capfd
):
    from websockets.sync.client import connect

    url, records = logged_server
    start = len(_ended(records))
    reset = json.dumps({"type": "reset", "data": {"seed": 2}})
    step = json.dumps({"type": "step", "data": {"n_next_cohort": 20}})

    def clean_close_mid_episode():
        c = _client(url)
        c.reset(seed=1)
        c.step({"n_next_cohort": 20})
        c.close()  # a "close" message, then the close handshake

    def close_frame_mid_episode():
        c = _client(url)
        c.reset(seed=1)
        c.step({"n_next_cohort": 20})
        c._ws.close()  # the close handshake, no "close" message

    def dropped_connection_mid_episode():
        ws = connect(url + "/ws", open_timeout=10)
        ws.send(reset)
        ws.recv(timeout=10)
        ws.send(step)
        ws.recv(timeout=10)
        ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame at all
        ws.socket.close()

    def gone_while_the_server_answers():
        ws = connect(url + "/ws", open_timeout=10)
        ws.send(reset)
        ws.socket.shutdown(socket.SHUT_RDWR)
        ws.socket.close()

    def clean_close_after_the_episode():
        c = _client(url)
        c.reset(seed=1)
        assert c.step({"stop_for_futility": True}).done
        c.close()

    scenarios = [
        clean_close_mid_episode,
        close_frame_mid_episode,
        dropped_connection_mid_episode,
        gone_while_the_server_answers,
        clean_close_after_the_episode,
    ]
    for i, scenario in enumerate(scenarios, start=1):
        scenario()
        _wait_for_lines(records, start + i)  # exactly one line per session
        # the only slot is free again: a new session is not refused for capacity
        c = _client(url)
        assert c.reset(seed=3).observation["observation"]["look"] == 0, scenario.__name__
        c.close()
        _wait_for_lines(records, start + i + 1)
        start += 1
    time.sleep(0.2)
    bad = [r for r in records if r.levelno >= logging.WARNING or r.exc_info]
    assert not bad, [(r.getMessage(), r.exc_info) for r in bad]
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in ASGI application" not in err, err


@needs_serve
def test_served_inputs_are_checked_as_in_process(logged_server):
    from clinbench.serve.wire import decode

    url, _ = logged_server
    c = _client(url)
    try:
        before = c.reset(seed=4)
        assert "seed" in decode(before.observation["info"])
        for bad in (True, False, 1.0, "1"):
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                c.step({"macro": bad})
        r = c.step({"n_next_cohort": 10, "inclusion_criteria_strictness": HUGE})
        assert r.observation["error"] == "bad_strictness"
        r = c.step({"n_next_cohort": HUGE})
        assert r.observation["error"] == "bad_cohort_size"
        r = c.step({"n_next_cohort": True})
        assert r.observation["error"] == "invalid_argument"
        seen, first = r.observation["observation"], before.observation["observation"]
        assert seen["look"] == 3  # three looks used, nothing else changed
        for key in ("weeks", "budget_remaining", "arms", "comparisons"):
            assert seen[key] == first[key], key
        assert c.step({"macro": 0}).observation["error"] is None  # still usable
        unseeded = c.reset()
        assert "seed" not in decode(unseeded.observation["info"])
    finally:
        c.close()


@needs_serve
def test_a_remote_env_plays_numpy_actions_as_in_process(logged_server):
    from clinbench.serve.remote import RemoteEnv

    url, _ = logged_server
    remote = RemoteEnv(url, TRIAL)
    try:
        for seed in (1, 2):
            script = _scripted_trial(np.random.default_rng(seed), None, 6)
            numpy_script = [_as_numpy(a, np.int64, np.float32) for a in script]
            here = _play_trial(TRIAL, seed, script)
            obs, info = remote.reset(seed=seed)
            there = [(obs, info)]
            for a in numpy_script:
                if there[-1][-1].get("terminated_by"):
                    break
                there.append(remote.step(a))
            assert len(here) == len(there)
            for h, t in zip(here, there, strict=True):
                assert same(h[0], t[0]) and same(h[1:], t[1:])
    finally:
        remote.close()
