"""Gymnasium speed: the adapter's overhead over the native env, and the batched VectorEnv.

    python benchmarks/gym_speed.py [--episodes 30] [--processes 5] [--num-envs 64] [--json]

Adapter overhead (the headline ratio): a random valid macro policy (seeded numpy
Generator, ``stop`` excluded so every episode runs to the deadline) plays the hard task
twice per seed, interleaved episode by episode so both see the same machine load. The
Gymnasium loop picks from ``info["action_mask"]`` and calls ``env.step(k)``; the native
loop does what an agent must do without the adapter: ``mask(obs)``, pick,
``to_action(k, obs)``, ``native.step(action)``. Both whole loops are timed, reset
included, with the same seeds and policy stream, so the ratio is the cost a user sees.
"Native step alone" replays each episode once more timing just ``native.step`` (reference).
Garbage collection is off while a loop is timed (as ``timeit`` does): with it on, each
cyclic collection lands in whichever loop happens to cross the allocation threshold, and
which one that is depends on the process (its hash seed), so one machine measured 1.05x
in some processes and 1.5x in others; with it off, 1.23x to 1.30x in all of them. The
ratio is still measured in ``--processes`` fresh interpreters (``PYTHONHASHSEED`` 0, 1,
...) and reported as their median and range.

VectorEnv: ``gym.make_vec(id, N, vectorization_mode="vector_entry_point")`` against
``"sync"`` (Gymnasium's ``SyncVectorEnv``) under the same policy, one BLAS/OpenMP thread,
interleaved in rounds, on hard_bench (the recruitment family's batched core) and on a
dose-finding task (a family without one: its VectorEnv steps N adapters).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

import clinbench  # noqa: F401  (registers the ids)
from clinbench.env import make
from clinbench.env.gym_adapter import gym_id

HARD = "recruitment/hard_bench"
DOSE = "trial_design/efficacy_safety"


def _pick(rng: np.random.Generator, mask: np.ndarray) -> int:
    valid = np.flatnonzero(mask[:-1])  # never the last macro (stop) while another is valid
    if valid.size == 0:
        valid = np.flatnonzero(mask)
    return int(valid[rng.integers(valid.size)])


def _without_gc(measure):
    """Run ``measure`` with cyclic garbage collection off (collected before), as ``timeit``."""

    def run(*args, **kwargs):
        gc.collect()
        gc.disable()
        try:
            return measure(*args, **kwargs)
        finally:
            gc.enable()

    return run


@_without_gc
def adapter_overhead(env_id: str, episodes: int) -> dict[str, float]:
    env = gym.make(gym_id(env_id)).unwrapped
    native = make(env_id)
    macros = native.macro_space
    gym_time = native_time = step_time = 0.0
    steps = native_steps = 0
    clock = time.perf_counter
    for seed in range(episodes):
        rng = np.random.default_rng(seed)
        t0 = clock()
        _, info = env.reset(seed=seed)
        done = False
        while not done:
            _, _, done, _, info = env.step(_pick(rng, info["action_mask"]))
            steps += 1
        gym_time += clock() - t0
        rng = np.random.default_rng(seed)
        t0 = clock()
        obs, _ = native.reset(seed=seed)
        done = False
        while not done:
            obs, _, done, _, _ = native.step(macros.to_action(_pick(rng, macros.mask(obs)), obs))
            native_steps += 1
        native_time += clock() - t0
        # Reference only (not in the ratio): the same episode, timing native.step alone.
        rng = np.random.default_rng(seed)
        obs, _ = native.reset(seed=seed)
        done = False
        while not done:
            action = macros.to_action(_pick(rng, macros.mask(obs)), obs)
            t1 = clock()
            obs, _, done, _, _ = native.step(action)
            step_time += clock() - t1
    if native_steps != steps:
        raise RuntimeError(f"the loops diverged: {steps} Gymnasium vs {native_steps} native steps")
    return {
        "steps": steps,
        "gym_steps_per_s": steps / gym_time,
        "native_steps_per_s": steps / native_time,
        "overhead_ratio": gym_time / native_time,
        "native_step_alone_per_s": steps / step_time,
    }


def _vec_run(envs: gym.vector.VectorEnv, steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    _, info = envs.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        mask = info["action_mask"]
        actions = np.array([_pick(rng, m) for m in mask], dtype=np.int64)
        _, _, _, _, info = envs.step(actions)
    return time.perf_counter() - t0


@_without_gc
def vector_speed(env_id: str, num_envs: int, steps: int, rounds: int) -> dict[str, float]:
    gid = gym_id(env_id)
    vec = gym.make_vec(gid, num_envs=num_envs, vectorization_mode="vector_entry_point")
    sync = gym.make_vec(gid, num_envs=num_envs, vectorization_mode="sync")
    t_vec = t_sync = 0.0
    for r in range(rounds):
        t_vec += _vec_run(vec, steps, r)
        t_sync += _vec_run(sync, steps, r)
    total = num_envs * steps * rounds
    return {
        "num_envs": num_envs,
        "vector_steps_per_s": total / t_vec,
        "sync_steps_per_s": total / t_sync,
        "speedup": t_sync / t_vec,
    }


def _one_thread() -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass


def adapter_in_processes(episodes: int, processes: int) -> dict[str, float]:
    """``adapter_overhead`` in fresh interpreters, one per ``PYTHONHASHSEED``: median, range."""
    runs = []
    for k in range(processes):
        env = {**os.environ, "PYTHONHASHSEED": str(k)}
        cmd = [sys.executable, __file__, "--worker", "--episodes", str(episodes)]
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out))
    ratios = sorted(r["overhead_ratio"] for r in runs)
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {**median, "processes": processes, "ratio_min": ratios[0], "ratio_max": ratios[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=30, help="adapter episodes per process")
    parser.add_argument("--processes", type=int, default=5, help="adapter measurements")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--vec-steps", type=int, default=400, help="vector steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-vector", action="store_true", help="only the adapter overhead")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    _one_thread()
    if args.worker:  # one adapter measurement, for adapter_in_processes
        print(json.dumps(adapter_overhead(HARD, args.episodes)))
        return
    results: dict[str, dict[str, float]] = {
        "adapter": adapter_in_processes(args.episodes, args.processes)
    }
    if not args.no_vector:
        for name, env_id in (("vector", HARD), ("vector_dose", DOSE)):
            results[name] = {
                "task": env_id,
                **vector_speed(env_id, args.num_envs, args.vec_steps, args.rounds),
            }
    machine = {
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if args.json:
        print(json.dumps({"machine": machine, "task": HARD, "results": results}, indent=2))
        return
    print(f"machine: {machine['cpu']} ({machine['platform']}), python {machine['python']}")
    a = results["adapter"]
    head = f"adapter ({HARD}; median of {a['processes']} processes)"
    print(f"{head:52s} {'steps/s':>10s}")
    print(f"{'  native loop (mask, to_action, step)':52s} {a['native_steps_per_s']:10,.0f}")
    print(f"{'  Gymnasium loop (env.step)':52s} {a['gym_steps_per_s']:10,.0f}")
    ratio = f"{a['overhead_ratio']:.2f}x"
    span = f"({a['ratio_min']:.2f}x to {a['ratio_max']:.2f}x)"
    print(f"{'  overhead (gym loop / native loop)':52s} {ratio:>10s} {span}")
    print(f"{'  native step alone (reference)':52s} {a['native_step_alone_per_s']:10,.0f}")
    for name in ("vector", "vector_dose"):
        if name in results:
            v = results[name]
            head = f"vector ({v['task']}), N = {v['num_envs']}, one thread"
            print(f"{head:52s} {'steps/s':>10s}")
            print(f"{'  SyncVectorEnv':52s} {v['sync_steps_per_s']:10,.0f}")
            print(f"{'  clinbench VectorEnv':52s} {v['vector_steps_per_s']:10,.0f}")
            print(f"{'  speed-up':52s} {v['speedup']:9.2f}x")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
