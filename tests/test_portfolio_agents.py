"""The portfolio agents and the family's isolation from the registries."""

from __future__ import annotations

import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio.agents import (
    PortfolioHeuristic,
    PortfolioRandom,
    PortfolioRepeatLast,
)
from clinbench.agents.portfolio.references import planner, play, reference_scores
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv

SEEDS = range(60)


@pytest.fixture(scope="module")
def env() -> PortfolioEnv:
    return PortfolioEnv(TASKS["develop"])


@pytest.mark.parametrize("cls", [PortfolioRandom, PortfolioHeuristic, PortfolioRepeatLast])
def test_agents_only_play_valid_actions_and_return_equals_score(env, cls):
    agent = cls(AgentContext.of(env))
    for seed in range(15):
        obs, _ = env.reset(seed=seed)
        agent.reset(1000 + seed)
        total, done = 0.0, False
        while not done:
            obs, reward, done, _, info = env.step(agent.act(obs))
            assert info["error"] is None, (cls.name, seed, info)
            total += reward
        assert total == pytest.approx(info["score"], abs=1e-12)
        assert 0.0 <= info["score"] <= 1.0


def test_the_planner_beats_random_and_the_heuristic_on_average(env):
    refs = reference_scores(env, SEEDS)
    heuristic = PortfolioHeuristic(AgentContext.of(env))
    h = sum(play(env, heuristic, s, s)["score"] for s in SEEDS) / len(SEEDS)
    assert refs["reference_planner"] > refs["random"] > 0.0
    assert refs["reference_planner"] > h


def test_the_planner_starts_nothing_in_a_hopeless_program(env):
    """With every effect far below any threshold its expected values are negative."""
    hopeless = PortfolioEnv(TASKS["develop"].with_overrides(effect_mean=-5.0))
    p = planner(hopeless)
    result = play(hopeless, p, seed=3, agent_seed=0)
    assert result["trials_started"] == 0.0 and result["score"] == 0.0


def test_agents_refuse_other_families():
    from clinbench.env.registry import make

    with pytest.raises(ValueError, match="portfolio"):
        PortfolioHeuristic(AgentContext.for_task("trial_design/effective_drug"))
    assert make  # the other families are untouched


def test_the_family_is_registered_after_the_others():
    from clinbench.agents.registry import agent_entry
    from clinbench.env.registry import env_ids, families

    assert families() == ["recruitment", "trial_design", "portfolio"]
    assert env_ids()[-2:] == ["portfolio/develop", "portfolio/develop_post_cutoff"]
    assert agent_entry("repeat_last").envs == ("portfolio",)
    assert "portfolio" in agent_entry("heuristic").envs
