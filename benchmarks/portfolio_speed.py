"""Portfolio family speed: online episodes per second and offline records per second.

    python benchmarks/portfolio_speed.py               # 200 episodes, 1,000 and 10,000 programs
    python benchmarks/portfolio_speed.py --episodes 50 --programs 200
    python benchmarks/portfolio_speed.py --study 8x2 12x4   # the prediction study's sizes

Online: whole episodes of ``develop`` (reset included) with the generic ``random`` agent
and the family's ``heuristic`` deciding, one process, CPU time. Offline: building the
logged histories, records and (program, decision date) episodes of ``n`` programs
(``build_dataset``), records per CPU-second.

``--study PxW ...``: only the prediction study (``PredictionStudy``) at P programs and W
online worlds per seed, for seeds 1 2 3 as a smoke sweep runs it (``studies: quick`` is
8x2), wall seconds with one job and with two (the pool started and its imports done before,
as a sweep's cells leave it), each size in turn in one process.
"""

from __future__ import annotations

import argparse
import importlib
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
    parser.add_argument("--study", nargs="+", metavar="PxW", help="time the study's sizes")
    args = parser.parse_args()
    if args.study:
        from joblib import Parallel, delayed

        from clinbench.agents.portfolio.study import PredictionStudy

        # the pool started and its workers' imports done first, as a sweep's cells leave it
        Parallel(n_jobs=2, backend="loky")(
            delayed(importlib.import_module)("clinbench.agents.portfolio.study") for _ in range(2)
        )
        for size in args.study:
            programs, worlds = (int(v) for v in size.split("x"))
            for jobs in (1, 2):
                start = time.perf_counter()
                PredictionStudy(programs=programs, online_worlds=worlds).run([1, 2, 3], jobs)
                print(f"study {programs} programs x {worlds} worlds, {jobs} job(s): "
                      f"{time.perf_counter() - start:.1f} s")
        return
    for agent in ("random", "heuristic"):
        eps, steps = online(agent, args.episodes)
        print(f"online {agent}: {eps:,.1f} episodes/s, {steps:,.0f} decisions/s")
    for n in args.programs:
        records, episodes, spent = offline(n)
        print(f"offline {n:,} programs: {records:,} records, {episodes:,} episodes in "
              f"{spent:.1f} CPU s: {records / spent:,.0f} records/s")


if __name__ == "__main__":
    main()
