"""Training budgets are environment steps, the same for every learning agent.

Budgets in episodes gave agents with shorter episodes less experience; these tests
hold every learner (stable-baselines3's too) to exactly ``protocol.train_steps``,
check that the harness refuses a step past it whatever the agent's code does, that
the learning curve sits on an environment-step axis at its marks, and that each
trial_design cell plays its null worlds for its own type-I error.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps

from clinbench.agents.core.budget import BudgetSpent, StepBudget
from clinbench.agents.learner import curve_marks
from clinbench.env.registry import family
from clinbench.protocol import Protocol, run_cell, training_env_factory
from clinbench.report.operating import null_rate

PLUGINS = Path(__file__).parent / "plugins"
IN_HOUSE = ("grpo", "hcapo", "mira", "klong", "memexrl")
#: a recruitment budget of 2 whole episodes and a cut third; a trial_design one of ~40
BUDGETS = {"recruitment/easy_bench": 500, "trial_design/effective_drug": 150}
HAS_SB3 = all(importlib.util.find_spec(m) for m in ("stable_baselines3", "sb3_contrib", "torch"))
SB3_TINY = {"n_steps": 64, "batch_size": 32, "n_epochs": 1, "net_arch": [8]}


@pytest.mark.parametrize("env_id", BUDGETS)
@pytest.mark.parametrize("agent", IN_HOUSE)
def test_every_in_house_learner_takes_exactly_the_budget(agent, env_id):
    steps = BUDGETS[env_id]
    protocol = Protocol(train_steps=steps, eval_episodes=2, curve_points=6, curve_episodes=1)
    result = run_cell(env_id, agent, 3, protocol)
    assert result.training["env_steps"] == steps
    assert [p.env_steps for p in result.curve] == curve_marks(steps, 6)
    episodes = [p.episodes for p in result.curve]
    assert episodes == sorted(episodes) and episodes[-1] == result.training["episodes"]


@pytest.mark.skipif(not HAS_SB3, reason="the sb3 extra is not installed")
@pytest.mark.parametrize("agent", ["ppo", "maskable_ppo"])
def test_stable_baselines3_takes_the_same_budget_as_the_in_house_learners(agent):
    env_id, steps = "trial_design/effective_drug", BUDGETS["trial_design/effective_drug"]
    protocol = Protocol(train_steps=steps, eval_episodes=2, curve_points=6, curve_episodes=1)
    sb3 = run_cell(env_id, agent, 3, protocol, SB3_TINY)
    in_house = run_cell(env_id, "hcapo", 3, protocol)
    assert sb3.training["env_steps"] == in_house.training["env_steps"] == steps
    assert [p.env_steps for p in sb3.curve] == [p.env_steps for p in in_house.curve]


def test_a_learner_that_ignores_its_budget_is_stopped_at_it():
    from clinbench.agents import AgentContext, make_agent

    worlds = training_env_factory("recruitment/easy_bench", steps=250)
    agent = make_agent(
        f"{PLUGINS / 'budget_agent.py'}:Overspender",
        AgentContext.for_task("recruitment/easy_bench"),
    )
    with pytest.raises(BudgetSpent, match="250 environment steps"):
        agent.train(worlds, 250, np.random.default_rng(0))
    assert worlds.budget.used == 250  # across both environments it made


def test_an_overspending_plugin_fails_its_cell():
    protocol = Protocol(train_steps=100, eval_episodes=1)
    with pytest.raises(BudgetSpent):
        run_cell(
            "recruitment/easy_bench", f"{PLUGINS / 'budget_agent.py'}:Overspender", 1, protocol
        )


def test_step_budget_counts_and_refuses():
    budget = StepBudget(2)
    budget.spend()
    budget.spend()
    assert budget.left == 0
    with pytest.raises(BudgetSpent):
        budget.spend()
    assert StepBudget().left is None
    with pytest.raises(ValueError, match=">= 0"):
        StepBudget(-1)


@pytest.mark.parametrize("steps, points", [(3000, 21), (108_000, 21), (7, 21), (10, 2), (5, 1)])
def test_curve_marks_are_even_steps_of_the_budget(steps, points):
    marks = curve_marks(steps, points)
    assert marks[-1] == steps and (points == 1 or marks[0] == 0)
    assert marks == sorted(set(marks))
    if steps >= points > 1:
        assert len(marks) == points
        gaps = np.diff(marks)
        assert gaps.max() - gaps.min() <= 1


def test_trial_design_cells_play_null_worlds_only_there():
    protocol = Protocol(eval_episodes=2, oc_episodes=5, null_episodes=60)
    trial = run_cell("trial_design/effective_drug", "heuristic", 2, protocol)
    assert trial.null_counts["n"] == 60
    assert trial.null_counts["null_world"] == 60  # every one a null world
    assert trial.null_counts["good_world"] == 0
    again = run_cell("trial_design/effective_drug", "heuristic", 2, protocol)
    assert again.null_counts == trial.null_counts
    recruitment = run_cell("recruitment/easy_bench", "heuristic", 2, protocol)
    assert recruitment.null_counts == {}
    assert family("recruitment").null_world_overrides == {}


def test_null_rate_is_the_exact_binomial_interval_of_the_pooled_counts():
    oc = next(
        o for o in family("trial_design").operating_characteristics if o.name == "type_i_error"
    )
    records = [
        {"null_counts": {"n": 2000, "claimed": 31.0, "null_world": 2000.0}},
        {"null_counts": {"n": 2000, "claimed": 18.0, "null_world": 2000.0}},
        {"oc_metrics": []},  # a cell without null worlds adds nothing
    ]
    rate = null_rate(records, oc)
    ci = sps.binomtest(49, 4000).proportion_ci(0.95, method="exact")
    assert (rate["k"], rate["n"]) == (49, 4000)
    assert rate["lo"] == pytest.approx(ci.low) and rate["hi"] == pytest.approx(ci.high)
    # 2,000 null worlds: a policy at a true 1.5 % shows an upper bound under 2.5 %
    assert null_rate(records[:1], oc)["hi"] < 0.025
    assert null_rate([{"oc_metrics": []}], oc) is None


def test_budgets_come_from_the_families_and_the_long_preset_multiplies_them():
    from clinbench.config import load

    default = load([])
    assert default.protocol.train_steps is None
    for env in ("recruitment", "trial_design"):
        steps = family(env).training_steps
        assert steps > 0 and default.protocol.training_steps(env) == steps
        assert load(["preset=long"]).protocol.training_steps(env) == 10 * steps
    assert load(["protocol.train_steps=500"]).protocol.training_steps("recruitment") == 500
