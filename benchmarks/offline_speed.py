"""Offline learning speed: logging behaviour episodes, and fitting each offline agent.

    python benchmarks/offline_speed.py [--task recruitment/hard_bench] [--transitions 100000]
                                       [--json]

1. Logging: the same seeded heuristic and random (epsilon 0.1) episodes played plainly
   (``play_episode``) and logged for a dataset (``play_logged``: features, masks and
   macro labels each step), side by side: steps/s of each.
2. Fitting: every offline agent with its default hyper-parameters (``conf/agent/``) on
   the first ``--transitions`` logged transitions, one BLAS thread, CPU seconds
   (``process_time``) and wall seconds of ``fit``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
import numpy as np
from omegaconf import OmegaConf

from clinbench.agents import AgentContext, make_agent
from clinbench.agents.learner import TRAIN_SEED_LOW
from clinbench.config import config_dir
from clinbench.env import make
from clinbench.episode import play_episode
from clinbench.offline.collect import play_logged
from clinbench.offline.data import OfflineData

AGENTS = ("bc", "rwbc", "learned_reward", "iql")


def log(task: str, transitions: int) -> tuple[list, dict[str, float]]:
    env = make(task)
    ctx = AgentContext.of(env)
    episodes, speeds = [], {}
    for behaviour in ("heuristic", "random"):
        agent = make_agent(behaviour, ctx)
        rng = np.random.default_rng(0)
        seeds = [TRAIN_SEED_LOW + i for i in range(10_000)]
        got, steps, t0 = [], 0, time.perf_counter()
        for i, s in enumerate(seeds):
            e = play_logged(env, agent, task, behaviour, s, i, 0.1, rng)
            got.append(e)
            steps += len(e)
            if steps >= transitions // 2:
                break
        t_logged = time.perf_counter() - t0
        t0 = time.perf_counter()
        plain = sum(
            play_episode(env, agent, e.world_seed, agent_seed=i).steps for i, e in enumerate(got)
        )
        t_plain = time.perf_counter() - t0
        speeds[f"{behaviour} plain steps/s"] = plain / t_plain
        speeds[f"{behaviour} logged steps/s"] = steps / t_logged
        episodes += got
    return episodes, speeds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="recruitment/hard_bench")
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    episodes, speeds = log(args.task, args.transitions)
    macros = make(args.task).macro_space
    keep = np.flatnonzero(np.cumsum([len(e) for e in episodes]) <= args.transitions)
    data = OfflineData.from_episodes(
        [episodes[i] for i in keep], macros.feature_names, macros.names
    )
    fits = {}
    for name in AGENTS:
        params = OmegaConf.to_container(OmegaConf.load(config_dir() / "agent" / f"{name}.yaml"))
        agent = make_agent(name, AgentContext.of(make(args.task)), **params)
        c0, w0 = time.process_time(), time.perf_counter()
        agent.fit(data, np.random.default_rng(0))
        fits[name] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
    out = {
        "task": args.task,
        "transitions": len(data),
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
        "logging": speeds,
        "fit": fits,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.task}, {len(data):,} transitions ({out['machine']})")
    for k, v in speeds.items():
        print(f"  {k:28s} {v:10,.0f}")
    print("  fit (one BLAS thread)         cpu s    wall s")
    for name, t in fits.items():
        print(f"  {name:28s} {t['cpu_s']:6.1f} {t['wall_s']:9.1f}")


if __name__ == "__main__":
    main()
