"""Cost of agent isolation (``--isolate-agents``): time per evaluation step, in process
vs the agent in a process of its own, side by side on the same worlds.

    python benchmarks/isolation_speed.py [--episodes 4] [--json]

For each agent and task it plays the same evaluation worlds with the same acting seeds
twice: the agent in the harness's process, then behind :class:`IsolatedAgent` (every
observation pickled to the child, every action pickled back). It checks the scores are
equal, and reports microseconds per step of each and their ratio (the target is at most
2x), plus the child's start-up (once per cell, not per step). Learning agents are timed
untrained: their acting cost does not depend on training.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from threadpoolctl import threadpool_limits

from clinbench.agents import AgentContext, make_agent
from clinbench.env import make
from clinbench.evaluation_key import PUBLIC
from clinbench.isolation import IsolatedAgent
from clinbench.protocol import EVALUATION, CellWorlds

AGENTS = ("heuristic", "random", "hcapo", "mira", "klong", "memexrl")
TASKS = ("recruitment/hard_bench", "trial_design/effective_drug")


def timed(env_id: str, agent_name: str, episodes: int, isolate: bool) -> tuple[float, int, list]:
    env = make(env_id)
    agent = make_agent(agent_name, AgentContext.of(env))
    cell = CellWorlds(PUBLIC, 1, agent_name, env_id)
    player = IsolatedAgent(agent) if isolate else agent
    try:
        t0 = time.perf_counter()
        played = cell.play(env, player, EVALUATION, episodes)
        seconds = time.perf_counter() - t0
    finally:
        if isolate:
            player.close()
    return seconds, sum(e.steps for e in played), [e.score for e in played]


def startup(env_id: str) -> float:
    agent = make_agent("heuristic", AgentContext.for_task(env_id))
    t0 = time.perf_counter()
    IsolatedAgent(agent).close()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for env_id in TASKS:
            for name in AGENTS:
                inside, steps, a = timed(env_id, name, args.episodes, False)
                outside, _, b = timed(env_id, name, args.episodes, True)
                assert a == b, f"{name} on {env_id}: isolation changed the scores"
                rows.append(
                    {
                        "task": env_id,
                        "agent": name,
                        "steps": steps,
                        "in_process_us": 1e6 * inside / steps,
                        "isolated_us": 1e6 * outside / steps,
                        "ratio": outside / inside,
                    }
                )
        start = {t: startup(t) for t in TASKS}
    if args.json:
        print(json.dumps({"rows": rows, "startup_seconds": start}, indent=2))
        return
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"{'task':32} {'agent':10} {'steps':>6} {'in process':>11} {'isolated':>10} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['task']:32} {r['agent']:10} {r['steps']:6d} {r['in_process_us']:9.0f}us "
            f"{r['isolated_us']:8.0f}us {r['ratio']:5.2f}x"
        )
    for t, s in start.items():
        print(f"child start-up ({t}): {s:.2f} s once per cell")


if __name__ == "__main__":
    main()
