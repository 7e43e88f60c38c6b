"""The portfolio family through the generic layers once registered (registry, checker,
shared episode loop, Gymnasium's MultiBinary action), and a score that separates
policies.

Registering is a process-wide change the other test modules must not see while the
family is off, so the registered checks run in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio.agents import PortfolioHeuristic, PortfolioRandom
from clinbench.agents.portfolio.references import planner, play
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv

_REGISTERED = textwrap.dedent("""
    import pickle
    import gymnasium as gym
    import numpy as np
    import clinbench.agents.portfolio.registration  # noqa: F401
    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import agent_entry, make_agent
    from clinbench.env.checker import check_env, observation_fields
    from clinbench.env.gym_adapter import MacroGymEnv, gym_id, register_gym_envs
    from clinbench.env.registry import env_ids, families, family, make
    from clinbench.episode import play_episode

    tasks = [e for e in env_ids() if e.startswith("portfolio/")]
    assert tasks == ["portfolio/develop", "portfolio/develop_post_cutoff"], tasks
    assert families() == ["recruitment", "trial_design", "portfolio"]  # the others first
    assert env_ids()[0] == "recruitment/easy_bench"
    assert "portfolio" in agent_entry("heuristic").envs
    assert agent_entry("repeat_last").envs == ("portfolio",)
    fam = family("portfolio")
    assert fam.evaluation_episodes == 480 and fam.training_steps > 0
    env = make(tasks[0])
    assert set(observation_fields(env)) == set(env.reset(seed=0)[0].to_dict())
    for task in tasks:
        check_env(make(task), seeds=(0, 1), n_random_episodes=2)

    # the registered agents in the shared episode loop
    for name in ("random", "heuristic", "repeat_last"):
        agent = make_agent(name, AgentContext.of(env))
        for seed in range(3):
            ep = play_episode(env, agent, seed, agent_seed=1000 + seed)
            assert abs(ep.ret - ep.score) <= 1e-12 and 0.0 <= ep.score <= 1.0
            assert set(ep.metrics) == {m.name for m in fam.episode_metrics}

    # Gymnasium: macros by default, MultiBinary over the catalogue on request
    register_gym_envs()
    assert isinstance(gym.make(gym_id(tasks[0])).action_space, gym.spaces.Discrete)
    g = MacroGymEnv(tasks[0], action="binary")
    obs, info = g.reset(seed=3)
    assert isinstance(g.action_space, gym.spaces.MultiBinary) and g.action_space.n == 128
    assert g.observation_space.contains(obs)
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == (128,) and mask.sum() > 0

    def state(e):
        s = e.native.state
        return s.cash, s.month, len(s.trials), e.native._obs.to_dict()

    before = state(g)
    for bad in (np.zeros(127, np.int8), np.full(128, 2), np.zeros(128, float), 3, "all",
                [0, 1] * 10, True, None):
        try:
            g.step(bad)
        except ValueError as e:
            assert "MultiBinary" in str(e)
        else:
            raise AssertionError(f"{bad!r} was accepted")
        assert state(g) == before
    bits = np.zeros(128, np.int8)
    bits[int(np.flatnonzero(mask == 0)[0])] = 1  # masked out: refused, nothing changes
    _, reward, done, _, info = g.step(bits)
    assert info["error"] and info["message"] and reward == 0.0 and not done
    assert state(g) == before
    bits = np.zeros(128, np.int8)
    bits[int(np.flatnonzero(mask)[0])] = 1
    _, _, _, _, info = g.step(bits)
    assert info["error"] is None and info["outcome"]["started"]
    g.step(np.zeros(128, np.int8))
    copy = pickle.loads(pickle.dumps(g))
    assert isinstance(copy.action_space, gym.spaces.MultiBinary) and state(copy) == state(g)
    try:
        MacroGymEnv("trial_design/effective_drug", action="binary")
    except ValueError as e:
        assert "no binary action" in str(e)
    else:
        raise AssertionError("a family without the hook accepted action='binary'")
    print("ok")
""")


def test_registered_family_passes_the_generic_layers():
    out = subprocess.run(
        [sys.executable, "-c", _REGISTERED], check=False, capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


# ---------------------------------------------------------------------- the score
@pytest.fixture(scope="module")
def scores() -> dict[str, np.ndarray]:
    env = PortfolioEnv(TASKS["develop"])
    ctx = AgentContext.of(env)
    agents = {
        "random": PortfolioRandom(ctx),
        "heuristic": PortfolioHeuristic(ctx),
        "planner": planner(env),
    }
    seeds = range(100_000, 100_150)
    return {
        k: np.array([play(env, a, w, w + 7)["score"] for w in seeds]) for k, a in agents.items()
    }


def test_the_score_separates_random_the_heuristic_and_the_planner(scores):
    """Measured, paired over the same 150 worlds: random near 0, the planner well
    above, the heuristic between (docs/environments.md III.6 has the 200-world run)."""
    assert scores["random"].mean() < 0.06
    assert scores["planner"].mean() > 3 * scores["random"].mean()
    for lo, hi in (("random", "heuristic"), ("heuristic", "planner")):
        d = scores[hi] - scores[lo]
        assert d.mean() > 2.0 * d.std(ddof=1) / np.sqrt(d.size), (lo, hi)


def test_rewards_are_zero_until_the_end():
    """The score reads the truth, so nothing of it is paid before the episode ends."""
    env = PortfolioEnv(TASKS["develop"])
    a = PortfolioHeuristic(AgentContext.of(env))
    obs, _ = env.reset(seed=100_011)
    a.reset(1)
    done, rewards = False, []
    while not done:
        obs, r, done, _, info = env.step(a.act(obs))
        rewards.append(r)
    assert all(r == 0.0 for r in rewards[:-1]) and rewards[-1] == info["score"]


def test_the_risk_adjustment_is_the_outcome_model_s_own_chance():
    """The chance a Phase III is credited with is the frequency of approval over its
    trial luck, so ``rnpv`` has the expectation of ``npv`` under any policy."""
    from clinbench.env.portfolio.trials import TrialDesign, draw_outcome
    from clinbench.env.portfolio.value import approval_probability, pass_probability
    from clinbench.env.portfolio.world import draw_program, draw_universe

    program = draw_program(draw_universe(TASKS["develop"], 0), 0)  # chance 0.24
    ind = max(program.indications, key=lambda i: i.effect)
    d = TrialDesign(ind.key, 3, randomised=True)
    month = program.start_month
    chance = pass_probability(program, d, month) * approval_probability(program, d, month)
    n = 4000
    hits = sum(draw_outcome(program, d, month, attempt).approved for attempt in range(n))
    assert 0.02 < chance < 0.98
    assert abs(hits / n - chance) < 4 * np.sqrt(chance * (1 - chance) / n)
