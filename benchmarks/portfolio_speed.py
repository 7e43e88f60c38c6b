"""Portfolio family speed: online episodes per second and offline records per second.

    python benchmarks/portfolio_speed.py               # 200 episodes, 1,000 and 10,000 programs
    python benchmarks/portfolio_speed.py --episodes 50 --programs 200

Online: whole episodes of ``develop`` (reset included) with the generic ``random`` agent
and the family's ``heuristic`` deciding, one process, CPU time. Offline: building the
logged histories, records and (program, decision date) episodes of ``n`` programs
(``build_dataset``), records per CPU-second.
"""

from __future__ import annotations

import argparse
import time

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.env.registry import make
from clinbench.episode import play_episode


def online(agent: str, episodes: int) -> tuple[float, float]:
    env = make("portfolio/develop")
    policy = make_agent(agent, AgentContext.of(env))
    start, steps = time.process_time(), 0
    for seed in range(episodes):
        steps += play_episode(env, policy, 500_000 + seed, agent_seed=seed).steps
    spent = time.process_time() - start
    return episodes / spent, steps / spent


def offline(programs: int) -> tuple[int, int, float]:
    start = time.process_time()
    data = build_dataset(TASKS["develop"], seed=0, n_programs=programs)
    spent = time.process_time() - start
    return data.n_records, len(data.episodes), spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--programs", type=int, nargs="+", default=[1_000, 10_000])
    args = parser.parse_args()
    for agent in ("random", "heuristic"):
        eps, steps = online(agent, args.episodes)
        print(f"online {agent}: {eps:,.1f} episodes/s, {steps:,.0f} decisions/s")
    for n in args.programs:
        records, episodes, spent = offline(n)
        print(f"offline {n:,} programs: {records:,} records, {episodes:,} episodes in "
              f"{spent:.1f} CPU s: {records / spent:,.0f} records/s")


if __name__ == "__main__":
    main()
