"""TRL tool environments: every tool's schema through transformers' ``get_json_schema``,
and full episodes through TRL's call semantics (``environment_factory``: a fresh or
reused instance, ``reset(**row)``, public methods as tools called with ``**arguments``,
an exception handed to the model as ``{"error": ...}``, ``get_reward()`` at the end).
"""

from __future__ import annotations

import importlib.util
import inspect

import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.episode import play_episode
from clinbench.tool_envs import TOOL_ENVS, RecruitmentToolEnv, TrialDesignToolEnv, reward_func
from clinbench.tool_envs.base import short_horizon

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def tools_of(env) -> dict:
    """What TRL exposes: public functions of the class but ``reset`` and ``get_reward``."""
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def call(tools: dict, name: str, arguments: dict):
    """One tool call as TRL makes it."""
    try:
        return tools[name](**arguments)
    except Exception as e:  # noqa: BLE001 - TRL turns any failure into an error result
        return {"error": str(e)}


def as_tool_call(action) -> tuple[str, dict]:
    """The tool call that plays a native action."""
    d = action.to_dict()
    if "action_type" in d:
        return d.pop("action_type"), d
    if d["stop_for_success"]:
        return "stop_for_success", {"arm": d["success_arm"]}
    if d["stop_for_futility"]:
        return "stop_for_futility", {}
    args = {k: v for k, v in d.items() if k.startswith("allocation_") or k in ("drop_arm",)}
    args["inclusion_criteria_strictness"] = d["inclusion_criteria_strictness"]
    return "enrol_cohort", {"n_patients": d["n_next_cohort"], **args}


@pytest.mark.skipif(not HAVE_TRANSFORMERS, reason="needs transformers (get_json_schema)")
@pytest.mark.parametrize("cls", list(TOOL_ENVS.values()), ids=lambda c: c.__name__)
def test_every_tool_schema_builds_with_transformers(cls):
    from transformers.utils import get_json_schema

    tools = tools_of(cls())
    assert tools
    for name, method in tools.items():
        schema = get_json_schema(method)["function"]
        assert schema["name"] == name and schema["description"]
        for param in inspect.signature(method).parameters:
            assert param in schema["parameters"]["properties"], (name, param)
    if cls is TrialDesignToolEnv:
        arm = get_json_schema(tools["stop_for_success"])["function"]["parameters"]
        assert arm["properties"]["arm"]["enum"] == ["low", "mid", "high"]


@pytest.mark.parametrize(
    "cls, task",
    [
        (RecruitmentToolEnv, "recruitment/easy_bench"),
        (RecruitmentToolEnv, "recruitment/hard_bench"),
        (TrialDesignToolEnv, "trial_design/efficacy_safety"),
    ],
)
def test_a_full_episode_through_trl_call_semantics_scores_as_in_process(cls, task):
    env = cls()  # one instance, reused across rows as TRL does
    native = make(task)
    for seed in (3, 4):
        heuristic = make_agent("heuristic", AgentContext.of(native))
        expected = play_episode(native, heuristic, seed, agent_seed=1).score
        first = env.reset(task=task, seed=seed, prompt="ignored column")
        assert isinstance(first, str) and "State:" in first
        heuristic.reset(1)
        tools = tools_of(env)
        result = None
        while not env._done:
            name, arguments = as_tool_call(heuristic.act(env._obs))
            result = call(tools, name, arguments)
            assert not isinstance(result, dict), result  # the heuristic plays valid actions
        assert "The episode is over" in result
        assert env.get_reward() == expected
        assert reward_func([env]) == [expected]


def test_invalid_actions_raise_with_the_error_code_and_use_the_turn():
    env = RecruitmentToolEnv()
    env.reset(task="recruitment/easy_bench", seed=1)
    tools = tools_of(env)
    result = call(tools, "screen_patient", {"patient_id": "P-999999"})
    assert result["error"].startswith("patient_not_found")
    assert env._obs.timestamp == 1
    assert "unexpected keyword" in call(tools, "screen_patient", {"patient": "x"})["error"]
    call(tools, "stop_recruitment", {})
    assert "episode is over" in call(tools, "recontact", {"patient_id": "P-1"})["error"]
    trial = TrialDesignToolEnv()
    trial.reset(seed=2)
    claim = call(tools_of(trial), "stop_for_success", {"arm": "high"})
    assert claim["error"].startswith("boundary_not_crossed")
    with pytest.raises(ValueError, match="plays trial_design"):
        trial.reset(task="recruitment/easy_bench")


def test_reset_fully_reinitialises_a_reused_instance():
    env = TrialDesignToolEnv()
    a = env.reset(seed=5)
    tools = tools_of(env)
    call(tools, "enrol_cohort", {"n_patients": 40})
    call(tools, "stop_for_futility", {})
    assert env._done
    assert env.reset(seed=5) == a and not env._done and env.get_reward() == 0.0


def test_short_horizon_variants_end_at_their_horizon():
    overrides = short_horizon("recruitment/easy_bench", 45)
    full = make("recruitment/easy_bench").spec.params
    assert overrides["horizon"] == 45 and overrides["target"] < full.target
    env = RecruitmentToolEnv()
    env.reset(task="recruitment/easy_bench", seed=2, horizon=45)
    tools, steps = tools_of(env), 0
    while not env._done:
        call(tools, "plan_next_phase", {"target_phase": "screening"})
        steps += 1
    assert steps == 45
    with pytest.raises(ValueError, match="horizon"):
        short_horizon("recruitment/easy_bench", 500)
