"""Training speed: environment steps per CPU-second of a learning cell, one by one vs
batched, and the batched core against one native environment.

    python benchmarks/learner_speed.py [--task recruitment/medium_bench] [--steps 36000]
                                       [--rounds 2] [--core-rounds 9] [--num-envs 256]
                                       [--core-only] [--json]

Learning cells: each in-house learner trains for ``--steps`` environment steps of
``--task`` twice per round, interleaved so both see the same machine load: once with
its episodes collected one by one through the native environment (what every learner
did before batched collection: a batch-1 policy forward per step, the features and
mask of one observation at a time), once through the family's batched core
(``TrainingEnv.batch``: one policy forward per day for every running episode, the
features and masks of all of them as array operations). Both are the learner's whole
``train`` call, updates included, in CPU seconds (``time.process_time``) with one
BLAS thread. The same seed gives the same trajectories both ways
(``tests/test_batched_collection.py``), so the two runs do the same work.

Each run also times its collection (the CPU seconds inside ``rollout.collect``: the
episodes of the method's RL updates, policy forwards included; klong's teacher
episodes and every update are outside it). What is left outside collection bounds any
speed-up of collection alone: ``bound`` is the one-by-one run's whole time over the
batched run's time outside collection, the speed-up if collection cost nothing.

Batched core: ``--num-envs`` worlds of the task stepped together by a random valid
macro policy (drawn as one array operation) against one native environment under the
same kind of policy (features, mask, ``to_action`` and ``step`` per day, as an agent
must), steps per CPU-second each. A round of each takes under a second, where this
machine's speed varies by a quarter from one second to the next, so they alternate for
``--core-rounds`` rounds and the figure is the median of the rounds' ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time

import clinbench  # noqa: F401  (registers the ids; pins the BLAS kernel)

# isort: split
import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents import mira
from clinbench.agents.context import AgentContext
from clinbench.agents.core import rollout
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.gym_vector import batched_core
from clinbench.protocol import training_env_factory

LEARNERS = ("hcapo", "mira", "klong", "memexrl")


@contextlib.contextmanager
def timed_collection():
    """Yield a list whose one entry accumulates the CPU seconds spent in
    ``rollout.collect`` (through every module that calls it) while the block runs."""
    spent = [0.0]
    inner = rollout.collect

    def collect(*args, **kwargs):
        t0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - t0

    rollout.collect, mira.collect = collect, collect
    try:
        yield spent
    finally:
        rollout.collect, mira.collect = inner, inner


def learner_rate(
    task: str, agent: str, steps: int, batched: bool, seed: int
) -> tuple[float, float, float]:
    """(environment steps per CPU-second of the whole ``train`` call, its CPU seconds,
    the CPU seconds of those spent collecting episodes)."""
    learner = make_agent(agent, AgentContext.of(make(task)))
    worlds = training_env_factory(task, steps=steps, batched=batched)
    with timed_collection() as collecting:
        t0 = time.process_time()
        learner.train(worlds, steps, np.random.default_rng(seed), curve_points=1)
        seconds = time.process_time() - t0
    return worlds.budget.used / seconds, seconds, collecting[0]


def _medians(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Medians over rounds of :func:`learner_rate`'s runs: the rate, the CPU seconds and
    the share of them spent collecting."""
    return (
        float(np.median([rate for rate, _, _ in runs])),
        float(np.median([sec for _, sec, _ in runs])),
        float(np.median([col / sec for _, sec, col in runs])),
    )


def _random_valid(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly drawn valid macro per row, never ``stop`` (the last) while another
    is valid, as one array operation."""
    m = masks.copy()
    m[:, -1] &= ~m[:, :-1].any(axis=1)
    scores = np.where(m, rng.random(m.shape), -1.0)
    return scores.argmax(axis=1)


def core_rate(task: str, num_envs: int, days: int, seed: int) -> float:
    native = make(task)
    core = batched_core(native, num_envs)
    macros = native.macro_space
    feats = np.zeros((num_envs, macros.n_features))
    masks = np.zeros((num_envs, macros.n), dtype=np.bool_)
    rows = np.arange(num_envs)
    rng = np.random.default_rng(seed)
    for i in range(num_envs):
        core.reset(i, seed * num_envs + i, None)
    t0 = time.process_time()
    steps = 0
    for _ in range(days):
        core.observe(feats, masks, rows)
        core.step(rows.tolist(), _random_valid(rng, masks).tolist())
        steps += num_envs
    return steps / (time.process_time() - t0)


def native_rate(task: str, episodes: int, seed: int) -> float:
    env = make(task)
    macros = env.macro_space
    rng = np.random.default_rng(seed)
    t0 = time.process_time()
    steps = 0
    for e in range(episodes):
        obs, _ = env.reset(seed=seed * episodes + e)
        done = False
        while not done:
            macros.features(obs)
            k = int(_random_valid(rng, macros.mask(obs)[None])[0])
            obs, _, done, _, _ = env.step(macros.to_action(k, obs))
            steps += 1
    return steps / (time.process_time() - t0)


def _cpu() -> str:
    """The processor's model name (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="recruitment/medium_bench")
    parser.add_argument("--steps", type=int, default=36_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--core-rounds", type=int, default=9)
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--core-only", action="store_true", help="skip the learning cells")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out: dict = {
        "task": args.task,
        "steps": args.steps,
        "machine": f"{_cpu()}, {os.cpu_count()} cores",
        "load_average": os.getloadavg()[0],
        "learners": {},
    }
    with threadpool_limits(limits=1, user_api="blas"):
        for agent in () if args.core_only else LEARNERS:
            serial, batched = [], []
            for r in range(args.rounds):
                serial.append(learner_rate(args.task, agent, args.steps, False, r))
                batched.append(learner_rate(args.task, agent, args.steps, True, r))
            # medians over the rounds: rate, CPU seconds, share of them collecting
            (s, s_sec, s_share), (b, b_sec, b_share) = (_medians(r) for r in (serial, batched))
            bound = s_sec / (b_sec * (1.0 - b_share))
            out["learners"][agent] = {
                "one_by_one": s,
                "batched": b,
                "speedup": b / s,
                "collection_share_one_by_one": s_share,
                "collection_share_batched": b_share,
                "bound": bound,
            }
            print(
                f"{agent:8s} one by one {s:8.0f}  batched {b:8.0f} steps/CPU-s  x{b / s:.1f}  "
                f"collecting {s_share:.0%} / {b_share:.0%}  bound x{bound:.1f}",
                file=sys.stderr,
            )
        cores, natives = [], []
        for r in range(args.core_rounds):
            cores.append(core_rate(args.task, args.num_envs, 180, r % 3 + 1))
            natives.append(native_rate(args.task, 20, r % 3 + 1))
        c, n = float(np.median(cores)), float(np.median(natives))
        ratios = [a / b for a, b in zip(cores, natives, strict=True)]
        speedup = float(np.median(ratios))
        out["core"] = {
            "num_envs": args.num_envs,
            "core": c,
            "native": n,
            "speedup": speedup,
            "speedup_range": [min(ratios), max(ratios)],
        }
        print(
            f"core N={args.num_envs} {c:8.0f} vs one native env {n:8.0f} steps/CPU-s  "
            f"x{speedup:.1f} (rounds x{min(ratios):.1f} to x{max(ratios):.1f})",
            file=sys.stderr,
        )
    out["load_average_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
