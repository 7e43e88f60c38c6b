"""Reference scores of the online task: ``random`` and the planner over seeds.

``play`` is a minimal episode loop on an env built directly (``PortfolioEnv``, with any
parameters); ``reference_scores`` averages the two references' scores over ``seeds``.
The stored references of the report come from ``clinbench.references`` once the family
has a ``PLANNER`` there (``planner`` below is the one to use).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio.agents import PortfolioRandom
from clinbench.agents.portfolio.reference_planner import PortfolioReferencePlanner
from clinbench.env.portfolio.simulator import PortfolioEnv


def play(env: PortfolioEnv, agent: Agent, seed: int, agent_seed: int) -> dict[str, Any]:
    """One episode; its final info plus the return."""
    obs, _ = env.reset(seed=seed)
    agent.reset(agent_seed)
    total, done, info = 0.0, False, {}
    while not done:
        obs, reward, done, _, info = env.step(agent.act(obs))
        total += reward
    return {**info, "return": total}


def planner(env: PortfolioEnv) -> PortfolioReferencePlanner:
    return PortfolioReferencePlanner(AgentContext.of(env), world=lambda: env.world)


def reference_scores(env: PortfolioEnv, seeds: Iterable[int]) -> dict[str, float]:
    """Mean score of ``random`` and of the planner over ``seeds``."""
    agents = {"random": PortfolioRandom(AgentContext.of(env)), "reference_planner": planner(env)}
    out = {}
    seeds = list(seeds)
    for name, agent in agents.items():
        scores = [play(env, agent, s, 10_000 + s)["score"] for s in seeds]
        out[name] = sum(scores) / len(scores)
    return out
