"""The agent contract at every entry point: what an agent is given, and what it is not.

A recording agent is run by a sweep cell (the worker function), ``clinbench run``, the
reference computation and ``play_episode``; every object it received is walked
(``gc.get_referents``, transitively) to show that none of them is or reaches the scored
environment, the hidden world, or an evaluation world seed. The evaluation callback is
called, not walked: in-process isolation is a contract against accidents, not against
deliberate introspection (``docs/agents.md``).
"""

from __future__ import annotations

import gc
import importlib.util
import types
from pathlib import Path

import numpy as np
import pytest

import clinbench.agents.registry as agent_registry
import clinbench.env.registry as env_registry
from clinbench import protocol, references
from clinbench.agents import AgentContext, make_agent
from clinbench.agents.registry import load_plugin_file
from clinbench.env import make
from clinbench.env.recruitment.simulator import RecruitmentEnv
from clinbench.env.recruitment.world import World
from clinbench.episode import play_episode
from clinbench.evaluation_key import PUBLIC
from clinbench.protocol import (
    EVALUATION,
    TrainingEnv,
    acting_seeds,
    evaluation_seeds,
    training_stream,
    validation_seeds,
)
from clinbench.references import recruitment as recruitment_references
from clinbench.sweep.cells import run_cell_record

PLUGIN = Path(__file__).parent / "plugins" / "recording_agent.py"
RECORDING = f"{PLUGIN}:RecordingAgent"
EASY = "recruitment/easy_bench"
#: A cell seed no task parameter or observation holds by chance (it too must not leak:
#: the evaluation worlds follow from it).
CELL_SEED = 8_675_309


@pytest.fixture
def received():
    module = load_plugin_file(str(PLUGIN.resolve()))
    module.RECEIVED.clear()
    yield module.RECEIVED
    module.RECEIVED.clear()


def reachable(root, limit: int = 200_000) -> list:
    """Every object reachable from ``root`` (modules, classes and functions are not
    followed: they reach the whole interpreter)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        if isinstance(obj, types.MethodType):  # a bound method reaches its object
            stack.append(obj.__self__)
            continue
        if isinstance(obj, types.FunctionType):  # a closure reaches what it closes over
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            stack.extend(obj.__defaults__ or ())
            continue
        if isinstance(obj, (types.ModuleType, type, types.BuiltinFunctionType)):
            continue
        stack.extend(gc.get_referents(obj))
    assert len(seen) < limit, "object graph too large to check"
    return list(seen.values())


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def assert_fair(obj, eval_seeds: list[int], scored: list) -> None:
    """``obj`` is not and does not reach a scored env, a hidden world or an eval seed."""
    for o in reachable(obj):
        assert not isinstance(o, (RecruitmentEnv, World, TrainingEnv)), (
            f"{type(o).__name__} reachable from {type(obj).__name__}"
        )
        assert not any(o is env for env in scored)
        if isinstance(o, (int, np.integer)) and not isinstance(o, (bool, np.bool_)):
            assert int(o) not in eval_seeds, f"world seed {o} reachable from {type(obj).__name__}"
        elif isinstance(o, np.ndarray) and o.dtype.kind in "iu" and o.size:
            assert not np.isin(o, eval_seeds).any(), (
                f"a world seed in an array reachable from {type(obj).__name__}"
            )


def check_received(received, eval_seeds: list[int], scored: list, learning: bool = True) -> None:
    kinds = [k for k, _ in received]
    assert "init" in kinds and "reset" in kinds and "obs" in kinds
    for kind, value in received:
        if kind == "init":
            assert type(value) is AgentContext
            assert_fair(value, eval_seeds, scored)
        elif kind == "config":
            assert_fair(value, eval_seeds, scored)
        elif kind == "reset":
            assert isinstance(value, int) and value not in eval_seeds
        elif kind == "obs":
            assert_fair(value, eval_seeds, scored)
        elif kind == "train":
            make_env, _, rng, evaluate = value
            assert isinstance(rng, np.random.Generator)
            entropy = np.atleast_1d(rng.bit_generator.seed_seq.entropy)
            assert not {int(e) for e in entropy} & set(eval_seeds)
            assert_fair(rng, eval_seeds, scored)
            assert callable(make_env) and (evaluate is None or callable(evaluate))
        elif kind == "training_env":
            assert isinstance(value, TrainingEnv) and not any(
                value._native is e for e in scored[:1]
            )
            with pytest.raises(ValueError, match="training worlds only"):
                value.reset(seed=eval_seeds[0])
        elif kind == "evaluated":
            assert isinstance(value, float)
    if learning:
        assert {"train", "training_env", "evaluated"} <= set(kinds)


def scored_envs(monkeypatch) -> list:
    """Every environment the protocol builds (the scored one among them)."""
    built: list = []
    real = protocol.make

    def spy(env_id, **overrides):
        env = real(env_id, **overrides)
        built.append(env)
        return env

    monkeypatch.setattr(protocol, "make", spy)
    return built


def test_a_sweep_cell_gives_only_the_context_own_seeds_and_training_envs(received, monkeypatch):
    scored = scored_envs(monkeypatch)
    cell = {
        "env": "recruitment",
        "task": "easy_bench",
        "agent": "recording",
        "seed": CELL_SEED,
        "agent_params": {},
        "env_overrides": {},
        "code": "test",
        "protocol": {"train_steps": 2, "eval_episodes": 3, "curve_points": 2},
        "agent_ref": RECORDING,
        "agent_code": "",
    }
    record = run_cell_record(cell, "h")
    assert record["status"] == "ok", record.get("traceback")
    seeds = evaluation_seeds(PUBLIC, CELL_SEED, 3)
    check_received(received, [*seeds, *validation_seeds(PUBLIC, CELL_SEED, 3), CELL_SEED], scored)
    resets = [v for k, v in received if k == "reset"]
    assert resets[-3:] == acting_seeds(PUBLIC, CELL_SEED, "recording", EASY, EVALUATION, 3)


def test_clinbench_run_gives_only_the_context_and_own_seeds(received, monkeypatch, invoke):
    from clinbench import protocol  # `clinbench run` imports make_env from here when it runs

    built: list = []
    real = protocol.make_env
    monkeypatch.setattr(
        protocol,
        "make_env",
        lambda env_id, *a, **o: built.append(real(env_id, *a, **o)) or built[-1],
    )
    result = invoke(
        "run",
        "--agent",
        RECORDING,
        "--task",
        "easy_bench",
        "--seed",
        "918273",
        "--train-steps",
        "1",
        "--json",
    )
    assert result.exit_code == 0, result.output
    world = evaluation_seeds(PUBLIC, 918273, 1)[0]
    check_received(received, [918273, world], built, learning=False)
    assert [v for k, v in received if k == "reset"][-1] == acting_seeds(
        PUBLIC, 918273, "recording", EASY, EVALUATION, 1
    )[0]


def test_references_give_the_random_floor_only_the_context(received, monkeypatch):
    monkeypatch.setattr(
        agent_registry, "make_agent", lambda name, context: make_agent(RECORDING, context)
    )
    built: list = []
    real = env_registry.make
    monkeypatch.setattr(
        env_registry, "make", lambda env_id, **o: built.append(real(env_id, **o)) or built[-1]
    )
    seeds = (100_000, 100_001)
    references.reference_means(EASY, recruitment_references.PLANNER, seeds)
    check_received(received, list(seeds), built, learning=False)


def test_play_episode_requires_the_agents_own_seed(received):
    env = make(EASY)
    agent = make_agent(RECORDING, AgentContext.of(env))
    with pytest.raises(TypeError):
        play_episode(env, agent, 7654321)  # no agent_seed: the world seed is never the default
    play_episode(env, agent, 7654321, agent_seed=123)
    check_received(received, [7654321], [env], learning=False)


def test_agents_refuse_an_environment_in_place_of_the_context():
    env = make(EASY)
    with pytest.raises(TypeError, match="AgentContext"):
        make_agent("heuristic", env)


def test_the_training_stream_carries_no_trace_of_the_cell_seed():
    rng = training_stream(PUBLIC, 123456, "hcapo", EASY)
    assert 123456 not in np.atleast_1d(rng.bit_generator.seed_seq.entropy).tolist()


def test_the_observation_reaches_no_hidden_world():
    env = make("recruitment/hard_bench")
    obs, _ = env.reset(seed=7654321)
    for _ in range(20):
        obs, *_ = env.step(
            env.macro_space.to_action(int(np.flatnonzero(env.macro_space.mask(obs))[0]), obs)
        )
    assert_fair(obs, [7654321], [env])
    assert_fair(AgentContext.of(env), [7654321], [env])


def test_the_recording_plugin_file_is_importable_standalone():
    spec = importlib.util.spec_from_file_location("recording_standalone", PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.RecordingAgent.name == "recording"


def test_the_check_catches_a_leak():
    env = make(EASY)
    env.reset(seed=7654321)
    with pytest.raises(AssertionError):
        assert_fair({"env": env}, [], [])
    with pytest.raises(AssertionError):
        assert_fair((7654321,), [7654321], [])
    with pytest.raises(AssertionError):
        assert_fair(env.world, [], [])


def test_changing_the_context_changes_nothing_the_agent_is_scored_on():
    env = make("recruitment/hard_bench")
    context = AgentContext.of(env)
    before = play_episode(env, make_agent("heuristic", AgentContext.of(env)), 5, agent_seed=1)
    context.spec.params.event_rates.clear()
    context.macro_space.params.event_rates.clear()
    assert env.spec.params.event_rates and make("recruitment/hard_bench").spec.params.event_rates
    after = play_episode(env, make_agent("heuristic", AgentContext.of(env)), 5, agent_seed=1)
    assert (after.score, after.steps) == (before.score, before.steps)


def test_the_curve_callback_scores_a_copy_of_the_trained_agent_a_bounded_number_of_times():
    from clinbench.protocol import CurveEvaluator

    env = make(EASY)
    agent = make_agent("random", AgentContext.of(env))
    scored: list = []
    evaluate = CurveEvaluator(lambda a: scored.append(a) or 0.5, agent, limit=2)
    assert evaluate(agent) == 0.5 and evaluate(agent) == 0.5
    assert all(a is not agent and type(a) is type(agent) for a in scored)
    with pytest.raises(RuntimeError, match="at most 2"):
        evaluate(agent)
    with pytest.raises(ValueError, match="agent being trained"):
        CurveEvaluator(lambda a: 0.0, agent, 5)(make_agent("random", AgentContext.of(env)))
