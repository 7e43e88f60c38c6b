"""Environment speed: steps per second and reset time per task.

    python benchmarks/env_speed.py [--episodes 50] [--min-steps 20000] [--resets 300] [--json]

"with agent" times the whole loop, resets included, with the heuristic deciding every
step (a recruitment day, a trial look); "env only" replays the same actions and times
only ``env.step`` (what the simulator costs). Each task plays at least ``--episodes``
episodes and at least ``--min-steps`` steps (a trial episode is a few looks, so 50 of
them would be a few milliseconds), after a warm-up of 20 episodes on other seeds that
fills the caches a sweep worker has warm (the trial boundaries' memo among them).
Reset time is the median over distinct seeds (a new world is drawn each time).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import env_ids, make


def measure(env_id: str, episodes: int, resets: int, min_steps: int = 0) -> dict[str, float]:
    env = make(env_id)
    agent = make_agent("heuristic", AgentContext.of(env))
    for seed in range(20_000, 20_020):  # warm-up, not timed
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        done = False
        while not done:
            obs, _, done, _, _ = env.step(agent.act(obs))
    plays: list[tuple[int, list]] = []
    steps = seed = 0
    start = time.perf_counter()
    while seed < episodes or steps < min_steps:
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        actions, done = [], False
        while not done:
            action = agent.act(obs)
            actions.append(action)
            obs, _, done, _, _ = env.step(action)
        steps += len(actions)
        plays.append((seed, actions))
        seed += 1
    with_agent = steps / (time.perf_counter() - start)

    step_time = 0.0
    for seed, actions in plays:
        env.reset(seed=seed)
        t0 = time.perf_counter()
        for action in actions:
            env.step(action)
        step_time += time.perf_counter() - t0
    reset_times = []
    for seed in range(resets):
        t0 = time.perf_counter()
        env.reset(seed=10_000 + seed)
        reset_times.append(time.perf_counter() - t0)
    return {
        "steps_per_s_with_heuristic": with_agent,
        "steps_per_s_env_only": steps / step_time,
        "reset_ms_median": 1e3 * statistics.median(reset_times),
        "steps_per_episode": steps / len(plays),
        "episodes": len(plays),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--min-steps", type=int, default=20_000, help="steps per task, at least")
    parser.add_argument("--resets", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    results = {
        env_id: measure(env_id, args.episodes, args.resets, args.min_steps) for env_id in env_ids()
    }
    if args.json:
        print(
            json.dumps(
                {"machine": platform.processor() or platform.machine(), "results": results},
                indent=2,
            )
        )
        return
    print(
        f"machine: {platform.machine()} {platform.processor()}, python "
        f"{platform.python_version()}, one core"
    )
    print(f"{'task':28s} {'steps/s (heuristic)':>20s} {'steps/s (env only)':>19s} {'reset ms':>9s}")
    for env_id, r in results.items():
        print(
            f"{env_id:28s} {r['steps_per_s_with_heuristic']:20,.0f} "
            f"{r['steps_per_s_env_only']:19,.0f} {r['reset_ms_median']:9.3f}"
        )


if __name__ == "__main__":
    main()
