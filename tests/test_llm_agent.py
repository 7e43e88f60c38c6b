"""The ``llm`` agent (extra ``llm``) against a scripted OpenAI-compatible endpoint on
127.0.0.1 (``tests/fake_openai.py``): exact scores without faults, exact fault counts,
repair and fallback, a dead endpoint, the API key, call logs, cell files and report.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.cli.app import app
from clinbench.env import env_ids, make
from clinbench.episode import play_episode
from clinbench.llm.render import compact, estimated_tokens
from clinbench.llm.tools import action_class, action_from_call, tool_names, tool_specs

HAVE = all(importlib.util.find_spec(m) for m in ("openai", "fastapi", "uvicorn"))
HAVE_PYDANTIC = importlib.util.find_spec("pydantic") is not None
needs_llm = pytest.mark.skipif(not HAVE, reason='needs the llm and serve extras (openai, fastapi)')
EASY, TRIAL = "recruitment/easy_bench", "trial_design/effective_drug"
runner = CliRunner(env={"COLUMNS": "200"})


class Scripted(Agent):
    """The fake endpoint's policy, in process, on the same compact state."""

    name = "scripted"
    description = "the fake endpoint's policy"

    def act(self, obs):
        from fake_openai import scripted

        return action_class(self.macros).from_dict(scripted(json.loads(compact(obs.to_dict()))))


@pytest.fixture(scope="module")
def endpoint():
    if not HAVE:
        pytest.skip("needs the llm and serve extras")
    from fake_openai import FakeOpenAI

    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def llm(task: str, endpoint, **params):
    from clinbench.llm.agent import LLMAgent

    return LLMAgent(AgentContext.of(make(task)), base_url=endpoint.url, timeout=10, **params)


# --------------------------------------------------------------------------- tools, rendering
@pytest.mark.skipif(not HAVE_PYDANTIC, reason="tool schemas need pydantic (the llm extra)")
@pytest.mark.parametrize("env_id", env_ids())
def test_tools_follow_the_action_type_and_parse_with_the_environment_parser(env_id):
    env = make(env_id)
    cls = action_class(env.macro_space)
    specs = tool_specs(cls)
    assert specs and all(s["function"]["parameters"]["type"] == "object" for s in specs)
    obs, _ = env.reset(seed=1)
    native = env.macro_space.to_action(0, obs).to_dict()
    name = native.pop("action_type", tool_names(cls)[0])
    assert action_from_call(cls, name, native) == env.macro_space.to_action(0, obs)
    with pytest.raises(ValueError, match="unknown tool"):
        action_from_call(cls, "teleport", {})


@pytest.mark.parametrize("env_id", env_ids())
def test_the_compact_rendering_is_smaller_and_keeps_the_decision_fields(env_id):
    env = make(env_id)
    obs, _ = env.reset(seed=2)
    for _ in range(2):  # a trial may end after two small cohorts
        obs, *_ = env.step(env.macro_space.to_action(0, obs))
    full = json.dumps(obs.to_dict())
    short = compact(obs.to_dict())
    assert estimated_tokens(short) < 0.8 * estimated_tokens(full)
    kept = json.loads(short)
    for key, value in obs.to_dict().items():  # every scalar, to four significant digits
        if isinstance(value, (bool, int, str)):
            assert kept[key] == value
        elif isinstance(value, float) and np.isfinite(value):
            assert kept[key] == pytest.approx(value, rel=1e-3)
        elif isinstance(value, list) and value:  # a list of records becomes a table
            rows = kept[key]["rows"] if isinstance(kept[key], dict) else kept[key]
            assert len(rows) == len(value)


# --------------------------------------------------------------------------- behaviour
@needs_llm
@pytest.mark.parametrize("mode", ["tools", "json"])
@pytest.mark.parametrize("task", [EASY, TRIAL])
def test_without_faults_the_agent_scores_exactly_what_the_scripted_policy_scores(
    endpoint, task, mode
):
    env = make(task)
    for seed in (3, 4):
        endpoint.faults = []
        agent = llm(task, endpoint, mode=mode)
        got = play_episode(env, agent, seed, agent_seed=1, record=True)
        want = play_episode(env, Scripted(AgentContext.of(env)), seed, agent_seed=1, record=True)
        assert got.score == want.score
        assert [s["action"] for s in got.steps_log] == [s["action"] for s in want.steps_log]
        stats = got.agent_stats
        assert stats["calls"] == got.steps
        assert stats["repairs"] == stats["fallbacks"] == stats["api_errors"] == 0
        assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] == 7 * got.steps
        assert stats["latency_s"] > 0


@needs_llm
@pytest.mark.parametrize("mode", ["tools", "json"])
def test_injected_faults_are_counted_exactly(endpoint, mode):
    env = make(EASY)
    bad = "bad_json" if mode == "json" else "unknown_tool"
    # step 1: 500 then good; step 2: prose, repaired; step 3: bad JSON, repaired;
    # step 4: two 500s then good; step 5: bad reply and bad repair -> fallback
    endpoint.faults = ["500", None, "prose", None, "bad_json", None, "500", "500", None]
    endpoint.faults += [bad, "prose"]
    agent = llm(EASY, endpoint, mode=mode, retries=2)
    episode = play_episode(env, agent, 5, agent_seed=1, record=True)
    stats = episode.agent_stats
    assert stats["api_errors"] == 3
    assert stats["repairs"] == 3
    assert stats["fallbacks"] == 1
    assert stats["calls"] == episode.steps + 3 + 3  # + the retries and the repair turns
    assert episode.steps_log[4]["action"]["action_type"] == "plan_next_phase"  # the fallback


@needs_llm
def test_a_dead_endpoint_fails_cleanly(tmp_path):
    import socket

    from clinbench.llm.agent import LLMAgent, LLMEndpointError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = make(EASY)
    agent = LLMAgent(AgentContext.of(env), base_url=f"http://127.0.0.1:{port}/v1", retries=1)
    with pytest.raises(LLMEndpointError, match="1 retries"):
        play_episode(env, agent, 1, agent_seed=1)
    result = runner.invoke(
        app,
        [
            "sweep",
            "preset=smoke",
            "--quiet",
            "--no-report",
            "--agents",
            "llm",
            "--tasks",
            "effective_drug",
            "--seeds",
            "1",
            "--results",
            str(tmp_path),
            f"agent.llm.base_url=http://127.0.0.1:{port}/v1",
            "agent.llm.retries=0",
        ],
    )
    assert result.exit_code != 0
    (path,) = (tmp_path / "runs").glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "failed" and "LLMEndpointError" in record["traceback"]


@needs_llm
def test_the_key_comes_from_the_environment_only_and_calls_are_logged(
    endpoint, tmp_path, monkeypatch
):
    monkeypatch.setenv("CLINBENCH_TEST_KEY", "sk-secret-123")
    endpoint.faults, endpoint.auth = ["500"], []
    agent = llm(TRIAL, endpoint, api_key_env="CLINBENCH_TEST_KEY", call_log=str(tmp_path / "log"))
    episode = play_episode(make(TRIAL), agent, 2, agent_seed=1)
    assert set(endpoint.auth) == {"Bearer sk-secret-123"}
    (log,) = (tmp_path / "log").glob("*.jsonl")
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == episode.agent_stats["calls"]
    assert lines[0]["error"] and lines[1]["error"] is None and lines[1]["usage"]
    assert {"latency_s", "reply", "model", "host", "step", "kind"} <= set(lines[0])
    assert "sk-secret" not in log.read_text()


@needs_llm
def test_a_sweep_keeps_the_counts_in_cell_files_and_the_report_shows_them(endpoint, tmp_path):
    endpoint.faults = ["prose"]
    result = runner.invoke(
        app,
        [
            "sweep",
            "preset=smoke",
            "--quiet",
            "--agents",
            "heuristic,llm",
            "--tasks",
            "effective_drug",
            "--seeds",
            "1,2,3",
            "--results",
            str(tmp_path),
            f"agent.llm.base_url={endpoint.url}",
        ],
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*.json")]
    llm_cells = [r for r in records if r["key"]["agent"] == "llm"]
    assert len(llm_cells) == 3
    for r in llm_cells:
        assert r["config"]["deterministic"] is False
        assert all(e["agent_stats"]["calls"] >= e["steps"] for e in r["episodes"])
    repairs = sum(e["agent_stats"]["repairs"] for r in llm_cells for e in r["episodes"])
    assert repairs == 1
    others = [e for r in records if r["key"]["agent"] != "llm" for e in r["episodes"]]
    assert others and all("agent_stats" not in e for e in others)
    report = (tmp_path / "benchmark_report.md").read_text()
    assert "What the agents report about their episodes" in report
    assert "Not reproducible from the seed: the cells of llm" in report
    assert list((tmp_path / "llm_calls").glob("*.jsonl"))
    data = json.loads((tmp_path / "benchmark_report.json").read_text())
    row = data["agent_stats"]["effective_drug"]["llm"]
    assert row["stats"]["repairs"]["total"] == 1


def test_llm_is_listed_and_bad_parameters_exit_2(tmp_path):
    r = runner.invoke(app, ["agents"])
    assert r.exit_code == 0 and "llm" in r.output
    r = runner.invoke(
        app,
        ["sweep", "preset=smoke", "--agents", "llm", "--results", str(tmp_path), "agent.llm.x=1"],
    )
    if importlib.util.find_spec("openai") is None:  # unavailable, with the install command
        assert r.exit_code == 2 and 'pip install -c constraints.txt -e ".[llm]"' in r.output
    else:
        assert r.exit_code == 2 and "x" in r.output


@needs_llm
def test_bad_modes_and_fallbacks_are_refused(endpoint):
    with pytest.raises(ValueError, match="mode"):
        llm(EASY, endpoint, mode="telepathy")
    with pytest.raises(ValueError, match="fallback"):
        llm(EASY, endpoint, fallback={"recruitment": "nap"})
    assert np.isfinite(llm(EASY, endpoint).fallback)


@needs_llm
@pytest.mark.parametrize("env_id", env_ids())
def test_every_registered_task_has_a_default_fallback(endpoint, env_id):
    agent = llm(env_id, endpoint)
    assert agent.macros.names[agent.fallback]


@needs_llm
def test_unusual_reply_shapes_are_parsed_or_repaired():
    from types import SimpleNamespace as NS

    from clinbench.llm.agent import BadReply, LLMAgent

    agent = LLMAgent(AgentContext.of(make(TRIAL)), base_url="https://user:sk-x@example.org:8443/v1")
    assert agent._host() == "example.org:8443"
    call = NS(function=NS(name="trial_action", arguments={"n_next_cohort": 20}))
    reply = NS(choices=[NS(message=NS(tool_calls=[call], content=None))])
    assert agent._parse(reply).n_next_cohort == 20  # arguments already an object
    agent.mode = "json"
    parts = NS(choices=[NS(message=NS(content=[{"type": "text", "text": '{"n_next_cohort": 9}'}]))])
    assert agent._parse(parts).n_next_cohort == 9  # content as a list of text parts
    for content in ("[" * 5000, "{}x", 5):
        with pytest.raises(BadReply):
            agent._parse(NS(choices=[NS(message=NS(content=content))]))
