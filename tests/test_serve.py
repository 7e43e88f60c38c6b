"""Served environments (extra ``serve``): the exact wire encoding, the OpenEnv server,
the remote client, remote sweeps and ``clinbench serve`` / ``run --remote``.

Servers run in this process on a free 127.0.0.1 port. Everything but the wire tests
skips without the extra.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import threading
import time
import urllib.request
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_helpers import same
from typer.testing import CliRunner

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.cli.app import app
from clinbench.env import env_ids, make
from clinbench.episode import play_episode
from clinbench.serve.wire import ObservationDecoder, ObservationEncoder, WireError, decode, encode

HAVE_SERVE = importlib.util.find_spec("openenv") is not None
needs_serve = pytest.mark.skipif(
    not HAVE_SERVE, reason='needs the serve extra: pip install -e ".[serve]"'
)
HARD = "recruitment/hard_bench"
TRIAL = "trial_design/efficacy_safety"
runner = CliRunner(env={"COLUMNS": "200"})


def random_macro(rng: np.random.Generator, mask) -> int:
    valid = np.flatnonzero(np.asarray(mask)[:-1])  # never stop early
    return int(valid[rng.integers(valid.size)]) if valid.size else len(mask) - 1


# --------------------------------------------------------------------------- wire
@pytest.mark.parametrize("env_id", env_ids())
def test_native_observations_and_infos_cross_the_wire_exactly(env_id):
    env = make(env_id)
    enc, dec = ObservationEncoder(), ObservationDecoder()
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=4)
    done, sent_same = False, 0
    while not done:
        frame = json.loads(json.dumps(enc(obs), allow_nan=False))
        sent_same += sum(v == {"$same": 1} for v in frame["fields"].values())
        assert same(dec(frame), obs)
        assert same(decode(json.loads(json.dumps(encode(info), allow_nan=False))), info)
        k = random_macro(rng, env.macro_space.mask(obs))
        obs, _, done, _, info = env.step(env.macro_space.to_action(k, obs))
    assert same(decode(json.loads(json.dumps(encode(info)))), info)
    assert sent_same > 0  # unchanged fields are not sent again


@pytest.mark.parametrize(
    "value",
    [
        float("inf"), -float("inf"), np.float32(0.1), np.int16(-3), (1, (2.5, None)), {"a": [1]},
        MappingProxyType({"phase": 2, "success": True}),
    ],
)
def test_values_round_trip_with_their_types(value):
    assert same(decode(json.loads(json.dumps(encode(value), allow_nan=False))), value)


@pytest.mark.parametrize(
    "frame",
    [
        {"$nt": "os.path:join", "v": []},
        {"$dc": "subprocess:Popen", "v": {}},
        {"$nt": "clinbench.env.recruitment.observation:Funnel", "v": "x"},
        {"$nd": "!!", "dtype": "<f8", "shape": [1]},
        {"$nd": "AAAAAAAAAAA=", "dtype": "|O", "shape": [1]},
        {"$f": "1.5"},
        {"$mp": [1]},
        {"$unknown": 1},
        {"a": 1, "b": 2, "c": 3, "d": 4},
        {"$dc": "clinbench.env.recruitment.observation:MemoryRecord", "v": {"key": "k"}},
    ],
)
def test_malformed_or_foreign_frames_are_refused(frame):
    with pytest.raises(WireError):
        decode(frame)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    )
)
def test_decode_of_arbitrary_json_returns_or_raises_wire_error(data):
    try:
        decode(data)
    except WireError:
        pass


# --------------------------------------------------------------------------- server
@pytest.fixture(scope="module")
def served():
    if not HAVE_SERVE:
        pytest.skip('needs the serve extra: pip install -e ".[serve]"')
    from clinbench.serve.app import serve_in_thread

    srv, url = serve_in_thread(HARD, max_sessions=40)
    yield url
    srv.should_exit = True


def client(url):
    from openenv.core.generic_client import GenericEnvClient

    return GenericEnvClient(base_url=url, message_timeout_s=30).connect()


def play_over_ws(url: str, task: str, seed: int) -> tuple[float, float]:
    """A seeded random macro policy through OpenEnv's client: (sum of rewards, score)."""
    rng = np.random.default_rng(seed)
    c = client(url)
    try:
        result = c.reset(seed=seed, task=task)
        total = 0.0
        while not result.done:
            result = c.step({"macro": random_macro(rng, result.observation["action_mask"])})
            total += result.reward
        return total, decode(result.observation["info"])["score"]
    finally:
        c.close()


def play_in_process(task: str, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    env = make(task)
    obs, _ = env.reset(seed=seed)
    done, total = False, 0.0
    while not done:
        k = random_macro(rng, env.macro_space.mask(obs))
        obs, r, done, _, info = env.step(env.macro_space.to_action(k, obs))
        total += r
    return total, info["score"]


@needs_serve
@pytest.mark.parametrize("task", [HARD, TRIAL, "recruitment/easy_bench"])
def test_seeded_episodes_over_the_openenv_client_score_as_in_process(served, task):
    for seed in (3, 8):
        assert play_over_ws(served, task, seed) == play_in_process(task, seed)


@needs_serve
def test_32_concurrent_sessions_play_full_episodes_with_correct_scores(served):
    seeds = list(range(100, 132))
    got: dict[int, tuple[float, float]] = {}
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        try:
            got[seed] = play_over_ws(served, HARD if seed % 2 else TRIAL, seed)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert got == {s: play_in_process(HARD if s % 2 else TRIAL, s) for s in seeds}


@needs_serve
@pytest.mark.parametrize("agent", ["heuristic", "random"])
@pytest.mark.parametrize("task", [HARD, TRIAL])
def test_remote_env_gives_agents_the_in_process_episode(served, agent, task):
    from clinbench.serve.remote import RemoteEnv

    local, remote = make(task), RemoteEnv(served, task)
    try:
        for seed in (2, 5):
            a = make_agent(agent, AgentContext.of(local))
            b = make_agent(agent, AgentContext.of(remote))
            e1 = play_episode(local, a, seed, agent_seed=9, record=True)
            e2 = play_episode(remote, b, seed, agent_seed=9, record=True)
            assert (e2.score, e2.ret, e2.metrics, e2.steps_log) == (
                e1.score,
                e1.ret,
                e1.metrics,
                e1.steps_log,
            )
    finally:
        remote.close()


@needs_serve
def test_a_lost_connection_is_replayed_and_the_episode_is_unchanged(served):
    from clinbench.serve.remote import RemoteEnv

    local, remote = make(HARD), RemoteEnv(served, HARD)
    agent = make_agent("heuristic", AgentContext.of(local))
    expected = play_episode(local, agent, 6, agent_seed=1).score
    obs, _ = remote.reset(seed=6)
    agent.reset(1)
    done, step = False, 0
    while not done:
        if step in (40, 41, 120):
            remote._client._ws.close()  # the network drops
        obs, _, done, _, info = remote.step(agent.act(obs))
        step += 1
    remote.close()
    assert info["score"] == expected
    assert remote.reconnects == 3


@needs_serve
def test_a_dead_server_fails_fast_with_remote_env_error():
    from clinbench.serve.app import serve_in_thread
    from clinbench.serve.remote import RemoteEnv, RemoteEnvError

    srv, url = serve_in_thread(HARD)
    srv.should_exit = True
    time.sleep(0.5)
    env = RemoteEnv(url, HARD, retries=2, timeout=2, backoff=0.05)
    t0 = time.perf_counter()
    with pytest.raises(RemoteEnvError, match="2 retries"):
        env.reset(seed=1)
    assert time.perf_counter() - t0 < 20


@needs_serve
def test_invalid_actions_are_played_and_malformed_ones_are_protocol_errors(served):
    c = client(served)
    try:
        c.reset(seed=1, task=HARD)
        r = c.step({"action_type": "screen_patient", "patient_id": "P-999999"})
        assert r.observation["error"] == "patient_not_found"
        assert decode(r.observation["info"])["error"] == "patient_not_found"
        assert r.observation["observation"]["timestamp"] == 1  # the day was used
        for bad, code in [
            ({"action_type": "fly"}, "EXECUTION_ERROR"),
            ({"macro": 999}, "EXECUTION_ERROR"),
            ({"macro": "x"}, "VALIDATION_ERROR"),
            ({"macro": 0, "action_type": "stop_recruitment"}, "EXECUTION_ERROR"),
        ]:
            with pytest.raises(RuntimeError, match=code):
                c.step(bad)
        with pytest.raises(RuntimeError, match="unknown task"):
            c.reset(seed=1, task="recruitment/nope")
        with pytest.raises(RuntimeError, match="unknown reset field"):
            c.reset(seed=1, colour="red")
        with pytest.raises(RuntimeError, match="seed"):
            c.reset(seed=-4)
        assert c.step({"macro": 0}).observation["observation"]["timestamp"] == 2  # still usable
    finally:
        c.close()


@needs_serve
def test_malformed_frames_never_stop_the_server(served):
    from websockets.sync.client import connect

    frames = [
        "not json",
        "{",
        "[]",
        "null",
        '{"type": "step"}',
        '{"type": "step", "data": 5}',
        '{"type": "reset", "data": {"seed": "x"}}',
        '{"type": "teleport"}',
        '{"type": "state", "extra": 1}',
        '{"type": "reset", "data": {"overrides": {"budget": "lots"}}}',
        '{"type": "reset", "data": {"overrides": [1, 2]}}',
        '{"type": "step", "data": {"patient_id": 5}}',
        json.dumps({"type": "step", "data": {"macro": 2**70}}),
    ]
    rng = np.random.default_rng(0)
    frames += [bytes(rng.integers(0, 256, 40, dtype=np.uint8)).decode("latin-1") for _ in range(40)]
    with connect(served.replace("ws://", "ws://") + "/ws", open_timeout=10) as ws:
        for frame in frames:
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "error", (frame, reply)
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3, "task": TRIAL}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "observation"
    from websockets.exceptions import ConnectionClosed

    # A frame over the size limit: the server closes the connection, while the frame is
    # still being sent (a reset) or after it, depending on how far the send got.
    with connect(served + "/ws", open_timeout=10) as ws, pytest.raises(ConnectionClosed):
        ws.send("x" * (2 << 20))
        ws.recv(timeout=10)
    assert play_over_ws(served, HARD, 3) == play_in_process(HARD, 3)


@needs_serve
def test_the_session_cap_answers_capacity_reached_and_idle_sessions_are_closed():
    from websockets.sync.client import connect

    from clinbench.serve.app import serve_in_thread

    srv, url = serve_in_thread(TRIAL, max_sessions=2, idle_timeout=1.0)
    try:
        a, b = client(url), client(url)
        a.reset(seed=1)
        b.reset(seed=2)
        with connect(url + "/ws", open_timeout=10) as third:  # refused at once, then closed
            reply = json.loads(third.recv(timeout=10))
        assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
        time.sleep(2.5)  # both sessions fall idle and are closed
        fresh = client(url)
        assert fresh.reset(seed=4).observation["observation"]["look"] == 0
        fresh.close()
        for c in (a, b):
            with pytest.raises(Exception):  # noqa: B017 - the idle session is gone
                c.reset(seed=5)
    finally:
        srv.should_exit = True


@needs_serve
def test_health_schema_and_tasks_endpoints(served):
    http = served.replace("ws://", "http://")
    with urllib.request.urlopen(f"{http}/health", timeout=10) as r:
        assert json.load(r)["status"] == "healthy"
    with urllib.request.urlopen(f"{http}/tasks", timeout=10) as r:
        catalogue = json.load(r)
    assert catalogue["default"] == HARD
    assert [t["task"] for t in catalogue["tasks"]] == env_ids()
    hard = next(t for t in catalogue["tasks"] if t["task"] == HARD)
    assert "screen_patient" in json.dumps(hard["action_schema"])
    assert hard["macro_actions"] == list(make(HARD).macro_space.names)
    with urllib.request.urlopen(f"{http}/schema", timeout=10) as r:
        assert "action_mask" in json.dumps(json.load(r)["observation"])


# --------------------------------------------------------------------------- sweep and CLI
def _records(results):
    out = {}
    for path in sorted((results / "runs").glob("*.json")):
        r = json.loads(path.read_text())
        out[tuple(r["key"].values())] = r
    return out


@needs_serve
def test_a_sweep_over_the_remote_environment_equals_the_in_process_sweep(served, tmp_path):
    args = [
        "sweep",
        "preset=smoke",
        "--quiet",
        "--no-report",
        "--agents",
        "heuristic,random,memexrl",
        "--tasks",
        "easy_bench,effective_drug",
        "--seeds",
        "1",
        # one whole batch of memexrl's (4 groups of 8 episodes of 180 days): a budget
        # that cuts a batch cuts other episodes in batched and in one-by-one collection
        "protocol.train_steps=5760",
    ]
    here, there = tmp_path / "here", tmp_path / "there"
    assert runner.invoke(app, [*args, "--results", str(here)]).exit_code == 0
    result = runner.invoke(app, [*args, "--results", str(there), f"env.remote={served}"])
    assert result.exit_code == 0, result.output
    a, b = _records(here), _records(there)
    assert a.keys() == b.keys() and len(a) == 6
    for key in a:
        assert b[key]["status"] == "ok"
        assert b[key]["config"]["remote"] == served
        assert b[key]["hash"] != a[key]["hash"]
        for field in ("episodes", "curve", "oc_metrics"):
            assert b[key].get(field) == a[key].get(field), (key, field)


@needs_serve
def test_a_dead_endpoint_fails_the_cells_cleanly(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = runner.invoke(
        app,
        [
            "sweep",
            "preset=smoke",
            "--quiet",
            "--no-report",
            "--agents",
            "heuristic",
            "--tasks",
            "effective_drug",
            "--seeds",
            "1",
            "--results",
            str(tmp_path),
            f"env.remote=ws://127.0.0.1:{port}",
        ],
    )
    assert result.exit_code != 0
    (record,) = _records(tmp_path).values()
    assert record["status"] == "failed" and "RemoteEnvError" in record["traceback"]


@pytest.mark.parametrize("url", ["http://x:1", "ws://", "ws://h:1/recruitment/easy_bench", "7"])
def test_bad_remote_addresses_exit_2(url, tmp_path):
    base = ["run", "-a", "heuristic", "-t", "easy_bench", "-s", "1"]
    r = runner.invoke(app, [*base, "--remote", url])
    assert r.exit_code == 2 and "--remote" in r.output
    r = runner.invoke(
        app, ["sweep", "preset=smoke", "--results", str(tmp_path), f"env.remote={url}"]
    )
    assert r.exit_code == 2 and "env.remote" in r.output


@needs_serve
def test_run_remote_shows_the_in_process_episode(served):
    base = ["run", "-a", "heuristic", "-t", "hard_bench", "-s", "4", "--json"]
    here = json.loads(runner.invoke(app, base).stdout)
    there = runner.invoke(app, [*base, "--remote", served])
    assert there.exit_code == 0, there.output
    assert json.loads(there.stdout) == here


def test_serve_help_and_missing_extra(monkeypatch):
    r = runner.invoke(app, ["serve", "--help"])
    assert r.exit_code == 0 and "--max-sessions" in r.output and "Examples" in r.output
    import clinbench.cli.serve as serve_cli

    monkeypatch.setattr(serve_cli, "available", lambda: False)
    r = runner.invoke(app, ["serve", "--task", "hard_bench"])
    assert r.exit_code == 2 and 'pip install -c constraints.txt -e ".[serve]"' in r.output
    r = runner.invoke(app, ["serve", "--task", "nope"])
    assert r.exit_code == 2 and "hard_bench" in r.output


@needs_serve
def test_a_server_of_another_task_version_is_refused(served, monkeypatch):
    from clinbench.serve import remote

    monkeypatch.setattr(remote, "remote_task_version", lambda url, task: 99)
    env = remote.RemoteEnv(served, HARD)
    with pytest.raises(ValueError, match="version 99"):
        env.reset(seed=1)


@pytest.mark.parametrize(
    "first, second",
    [(-0.0, 0.0), (0.0, -0.0), (1, 1.0), (1, True), (None, np.arange(3)), (np.arange(3), None)],
)
def test_a_changed_field_is_never_sent_as_unchanged(first, second):
    @dataclasses.dataclass(frozen=True)
    class Obs:
        value: object

    enc, dec = ObservationEncoder(), ObservationDecoder()
    for value in (first, second, first):
        frame = json.loads(json.dumps(enc(Obs(value))))
        frame["type"] = "clinbench.env.base:EnvSpec"  # decodable stand-in with one field
        frame["fields"] = {
            "env": frame["fields"]["value"],
            "task": "t",
            "version": 1,
            "params": None,
            "description": "",
        }
        got = dec(frame).env
        assert same(got, value) or (isinstance(value, np.ndarray) and np.array_equal(got, value))


def test_decoded_arrays_are_read_only():
    env = make(HARD)
    obs, _ = env.reset(seed=1)
    back = ObservationDecoder()(json.loads(json.dumps(ObservationEncoder()(obs))))
    with pytest.raises(ValueError):
        back.patients[0, 0] = 5


@pytest.mark.parametrize(
    "frame",
    [
        {"$np": "<i1", "v": 300},
        {"$np": "<f8", "v": [1, 2]},
        {"$nt": "clinbench.env.checker:dataclasses.Field", "v": []},
    ],
)
def test_overflow_and_reached_classes_are_wire_errors(frame):
    with pytest.raises(WireError):
        decode(frame)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(WireError):
        decode(deep)
