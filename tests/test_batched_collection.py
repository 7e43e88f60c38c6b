"""Batched collection: N episodes through the family's batched core give the same
trajectories as the same episodes played one by one through the native environment."""

from __future__ import annotations

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.core.budget import BudgetSpent
from clinbench.agents.core.rollout import collect, collect_group
from clinbench.agents.learner import TRAIN_SEED_LOW
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.protocol import training_env_factory

SEEDS = [TRAIN_SEED_LOW + s for s in (3, 17, 17, 250, 9001, 42)]


def _pair(task: str, agent: str, **config):
    env = make(task)
    a = make_agent(agent, AgentContext.of(env), **config)
    a.std.update(np.random.default_rng(5).normal(size=(50, a.input_size())))  # not identity
    batched = training_env_factory(task)()
    serial = training_env_factory(task, batched=False)()
    return a, batched, serial


def _same(t1, t2) -> None:
    assert t1.world_seed == t2.world_seed
    np.testing.assert_array_equal(t1.actions, t2.actions)
    np.testing.assert_array_equal(t1.mask, t2.mask)
    np.testing.assert_array_equal(t1.rewards, t2.rewards)
    np.testing.assert_array_equal(t1.days, t2.days)
    np.testing.assert_allclose(t1.features, t2.features, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t1.x, t2.x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(t1.logp, t2.logp, rtol=0, atol=1e-9)
    assert t1.errors == t2.errors
    assert t1.summaries == t2.summaries
    assert t1.infos == t2.infos
    assert t1.budget_cut == t2.budget_cut


@pytest.mark.parametrize(
    ("task", "agent", "config"),
    [
        ("recruitment/easy_bench", "grpo", {}),
        ("recruitment/medium_bench", "memexrl", {}),
        ("recruitment/hard_bench", "klong", {}),
        ("recruitment/hard_bench", "hcapo", {"allow_stop": True}),
    ],
)
def test_batched_and_unbatched_collection_give_the_same_trajectories(task, agent, config):
    a, batched, serial = _pair(task, agent, **config)
    assert batched.batch(len(SEEDS)) is not None and serial.batch(len(SEEDS)) is None
    one = collect(batched, a.sampler(np.random.default_rng(8)), SEEDS)
    two = collect(serial, a.sampler(np.random.default_rng(8)), SEEDS)
    assert len(one) == len(two) == len(SEEDS)
    for t1, t2 in zip(one, two, strict=True):
        _same(t1, t2)
    # the two episodes of the same world differ only through the actions
    assert not np.array_equal(one[1].actions, one[2].actions)
    assert batched.budget.used == serial.budget.used == sum(len(t) for t in one)
    assert batched.budget.episodes == serial.budget.episodes == len(SEEDS)


def test_memory_inputs_are_exercised_in_both_paths():
    a, batched, serial = _pair("recruitment/hard_bench", "memexrl")
    trajs = collect(batched, a.sampler(np.random.default_rng(2)), SEEDS[:3])
    reads = [s["retrieved_day"] for t in trajs for s in t.summaries]
    assert max(reads) >= 0 and max(s["memory_slots"] for t in trajs for s in t.summaries) > 0
    again = collect(serial, a.sampler(np.random.default_rng(2)), SEEDS[:3])
    for t1, t2 in zip(trajs, again, strict=True):
        _same(t1, t2)


def test_horizon_cuts_are_the_same_in_both_paths():
    a, batched, serial = _pair("recruitment/easy_bench", "klong")
    one = collect(batched, a.sampler(np.random.default_rng(1)), SEEDS, horizon=60)
    two = collect(serial, a.sampler(np.random.default_rng(1)), SEEDS, horizon=60)
    for t1, t2 in zip(one, two, strict=True):
        _same(t1, t2)
        assert t1.summaries[-1]["time"] == 60


def test_a_batch_never_steps_past_the_budget_and_cuts_the_rest():
    task = "recruitment/easy_bench"
    a = make_agent("grpo", AgentContext.of(make(task)))
    worlds = training_env_factory(task, steps=1000)
    env = worlds()
    group = collect(env, a.sampler(np.random.default_rng(0)), SEEDS, steps_left=1000)
    assert worlds.budget.used == 1000 == sum(len(t) for t in group)
    assert any(t.budget_cut for t in group)
    assert (
        collect_group(
            env,
            a.sampler(np.random.default_rng(0)),
            SEEDS[0],
            4,
            steps_left=lambda: worlds.budget.left,
        )
        == []
    )
    batch = env.batch(2)
    batch.reset(0, SEEDS[0])
    with pytest.raises(BudgetSpent):
        batch.step([0], [0])


def test_a_batch_plays_training_worlds_only():
    env = training_env_factory("recruitment/easy_bench")()
    batch = env.batch(2)
    for bad in (None, 0, 5, TRAIN_SEED_LOW - 1, 2**32):
        with pytest.raises(ValueError, match="training worlds only"):
            batch.reset(0, bad)


def test_families_without_a_batched_core_play_one_by_one():
    task = "trial_design/effective_drug"
    env = training_env_factory(task)()
    assert env.batch(4) is None
    a = make_agent("grpo", AgentContext.of(make(task)))
    trajs = collect(env, a.sampler(np.random.default_rng(0)), SEEDS[:3])
    again = collect(
        training_env_factory(task, batched=False)(), a.sampler(np.random.default_rng(0)), SEEDS[:3]
    )
    for t1, t2 in zip(trajs, again, strict=True):
        _same(t1, t2)


def test_the_learner_speed_benchmark_reports_the_core_ratio_of_its_rounds():
    """``benchmarks/learner_speed.py --core-only`` runs and reports the core against one
    native environment as the median of its rounds' ratios (tiny sizes; no timing)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "learner_speed.py"
    args = ["--core-only", "--num-envs", "3", "--core-rounds", "3", "--json"]
    out = json.loads(
        subprocess.run(
            [sys.executable, str(script), *args], check=True, capture_output=True, text=True
        ).stdout
    )
    core = out["core"]
    assert out["learners"] == {} and core["num_envs"] == 3
    low, high = core["speedup_range"]
    assert 0 < low <= core["speedup"] <= high


def test_the_learner_speed_benchmark_times_collection_apart_from_the_rest():
    """``learner_rate`` splits a training run's CPU time into collection (every caller of
    ``rollout.collect``, mira's own import included) and the rest, and puts the
    collector back afterwards (tiny budgets on a dose-finding task; no timing)."""
    import importlib.util
    from pathlib import Path

    from clinbench.agents import mira
    from clinbench.agents.core import rollout

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "learner_speed.py"
    spec = importlib.util.spec_from_file_location("learner_speed", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    original = rollout.collect
    for agent in ("mira", "hcapo"):
        for batched in (False, True):
            rate, seconds, collecting = bench.learner_rate(
                "trial_design/effective_drug", agent, 300, batched, 0
            )
            assert rate > 0 and 0 < collecting < seconds, (agent, batched)
    assert rollout.collect is original and mira.collect is original
    (rate, seconds, share) = bench._medians([(10.0, 2.0, 1.0), (30.0, 4.0, 1.0), (20.0, 3.0, 3.0)])
    assert (rate, seconds, share) == (20.0, 3.0, 0.5)
