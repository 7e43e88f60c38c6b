"""``ppo`` and ``maskable_ppo`` (optional extra ``sb3``): budget, determinism, sweep, masks.

Skipped when stable-baselines3 / sb3-contrib are not installed, except the test that
they are then listed as unavailable with the install command.
"""

from __future__ import annotations

import importlib.util
import pickle

import numpy as np
import pytest

from clinbench.agents import registry
from clinbench.agents.registry import agent_entries, agent_entry
from clinbench.protocol import Protocol, run_cell

HAVE_SB3 = all(importlib.util.find_spec(m) for m in ("stable_baselines3", "sb3_contrib", "torch"))
needs_sb3 = pytest.mark.skipif(not HAVE_SB3, reason='needs the sb3 extra: pip install -e ".[sb3]"')
TINY = {"n_steps": 128, "batch_size": 32, "n_epochs": 2}
EASY = "recruitment/easy_bench"


def test_without_the_extra_they_are_listed_unavailable_with_the_install_command(
    monkeypatch, invoke
):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        registry.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "stable_baselines3" else real(name, *a),
    )
    rows = {e.name: e for e in agent_entries()}
    for name in ("ppo", "maskable_ppo"):
        assert rows[name].unavailable and 'pip install -e ".[sb3]"' in rows[name].unavailable
    assert "ppo" not in registry.agent_names()
    result = invoke("sweep", "--agents", "ppo", "preset=smoke", "--results", "/tmp/never_written")
    assert result.exit_code == 2
    assert 'pip install -e ".[sb3]"' in result.output


@needs_sb3
@pytest.mark.parametrize("name", ["ppo", "maskable_ppo"])
def test_same_cell_twice_gives_identical_numbers(name):
    protocol = Protocol(train_steps=3 * 180, eval_episodes=2, curve_points=2)
    first = run_cell(EASY, name, 5, protocol, TINY)
    again = run_cell(EASY, name, 5, protocol, TINY)
    assert [e.score for e in first.episodes] == [e.score for e in again.episodes]
    assert [e.steps for e in first.episodes] == [e.steps for e in again.episodes]
    assert first.curve == again.curve
    assert [p.env_steps for p in first.curve] == [0, 3 * 180]
    assert first.training["env_steps"] == 3 * 180


TRAIN_AND_DIGEST = f"""
import hashlib, numpy as np, clinbench
from clinbench.agents import AgentContext, make_agent
from clinbench.protocol import training_env_factory
agent = make_agent("ppo", AgentContext.for_task({EASY!r}), **{TINY!r})
agent.train(training_env_factory({EASY!r}), 540, np.random.default_rng(7))
h = hashlib.sha256()
for p in agent.model.policy.parameters():
    h.update(p.detach().numpy().tobytes())
print(h.hexdigest())
"""


@needs_sb3
def test_training_gives_the_same_weights_in_another_process():
    import subprocess
    import sys

    runs = [
        subprocess.run(
            [sys.executable, "-c", TRAIN_AND_DIGEST],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    scope: dict = {}
    in_process = TRAIN_AND_DIGEST.replace("print(h.hexdigest())", "digest = h.hexdigest()")
    exec(compile(in_process, "<digest>", "exec"), scope)  # noqa: S102 - the same script, in this process
    assert runs[0].stdout.strip() == runs[1].stdout.strip() == scope["digest"]


@needs_sb3
def test_the_budget_is_exactly_the_protocols_in_environment_steps():
    agent = registry.make_agent("ppo", registry_context(), **TINY)
    from clinbench.protocol import training_env_factory

    worlds = training_env_factory(EASY, steps=300)
    agent.train(worlds, 300, np.random.default_rng(0))
    assert agent.model.num_timesteps == worlds.budget.used == 300


@needs_sb3
@pytest.mark.parametrize("steps", [256, 300])
def test_the_last_curve_point_is_the_final_policy(steps):
    """A budget of whole rollouts (256 = 2 x 128) learns from its last rollout after its
    last step: the budget's mark scores the policy after that update, so checkpoint
    selection has the final policy among its candidates (300: PPO stops mid-rollout,
    with no update after)."""
    from clinbench.protocol import training_env_factory

    agent = registry.make_agent("maskable_ppo", registry_context(), **TINY)

    def weights(a):
        return [p.detach().clone() for p in a.model.policy.parameters()]

    scored = []
    agent.train(
        training_env_factory(EASY, steps=steps),
        steps,
        np.random.default_rng(0),
        evaluate=lambda a: scored.append(weights(a)) or 0.0,
        curve_points=3,
    )
    assert [p.env_steps for p in agent.curve] == [0, steps // 2, steps]
    final = weights(agent)
    assert all((a == b).all() for a, b in zip(scored[-1], final, strict=True))
    assert not all((a == b).all() for a, b in zip(scored[0], final, strict=True))


def registry_context():
    from clinbench.agents import AgentContext

    return AgentContext.for_task(EASY)


@needs_sb3
def test_maskable_ppo_never_plays_a_masked_action_and_the_extra_is_in_the_cell_code():
    from clinbench.env import make
    from clinbench.protocol import training_env_factory

    agent = registry.make_agent("maskable_ppo", registry_context(), **TINY)
    agent.train(training_env_factory(EASY), 360, np.random.default_rng(1))
    chosen: list[bool] = []
    real_to_action = agent.macros.to_action

    def to_action(k, obs):
        chosen.append(bool(agent.macros.mask(obs)[k]))
        return real_to_action(k, obs)

    agent.macros.to_action = to_action
    # The agent chooses on every day of a heuristic episode (the tiny policy alone may
    # stop on day 0, before any patient has arrived); each choice, played on a copy of
    # the environment, is a valid action.
    env = make(EASY)
    guide = registry.make_agent("heuristic", registry_context())
    obs, _ = env.reset(seed=3)
    agent.reset(4)
    guide.reset(5)
    done, days = False, 0
    while not done:
        days += 1
        choice = agent.act(obs)
        _, _, _, _, info = pickle.loads(pickle.dumps(env)).step(choice)
        assert info["error"] is None, (obs.timestamp, choice, info["error"])
        obs, _, done, _, _ = env.step(guide.act(obs))
    assert len(chosen) == days > 100
    assert all(chosen)
    code = agent_entry("maskable_ppo").code
    assert "stable-baselines3==" in code and "sb3-contrib==" in code and "torch==" in code


@needs_sb3
def test_they_run_in_a_sweep(tmp_path):
    from clinbench.config import load
    from clinbench.sweep import run_sweep

    cfg = load(
        [
            "preset=smoke",
            "agents=[ppo,maskable_ppo]",
            "tasks=[easy_bench]",
            "protocol.train_steps=360",
            "protocol.eval_episodes=2",
            "agent.ppo.n_steps=128",
            "agent.maskable_ppo.n_steps=128",
            "agent.ppo.batch_size=32",
            "agent.maskable_ppo.batch_size=32",
            f"results={tmp_path}",
            "launcher=sequential",
        ]
    )
    outcome = run_sweep(cfg, show_progress=False)
    assert outcome.ok, outcome.failed
    assert outcome.total == 2 * len(cfg.protocol.seeds)
