"""Served-environment speed: steps/s and step latency over loopback (extra ``serve``).

    python benchmarks/serve_speed.py [--task recruitment/hard_bench] [--episodes 10]
                                     [--sessions 1 8 32] [--json]

Starts ``clinbench serve`` in its own process on a free 127.0.0.1 port, then plays
seeded random-macro episodes (``stop`` excluded, so every episode runs to its end):

- one session with OpenEnv's own client (``GenericEnvClient``, macro indices sent, the
  full observation received: ``to_dict()``, mask, features and the native observation);
- one session with clinbench's :class:`~clinbench.serve.remote.RemoteEnv`, which also
  decodes the native observation for the agent;
- N concurrent sessions (threads of this process, OpenEnv's client): total steps/s.

Latency is per ``step`` call, measured by the client (p50 / p99). The same episodes
played in process give the reference steps/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np

from clinbench.env import make


def _random_macro(rng: np.random.Generator, mask) -> int:
    valid = np.flatnonzero(np.asarray(mask)[:-1])
    return int(valid[rng.integers(valid.size)]) if valid.size else len(mask) - 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(task: str, port: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "clinbench.cli.app", "serve", "-t", task, "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


def openenv_session(url: str, task: str, seeds: list[int]) -> tuple[int, float, list[float]]:
    """(steps, seconds, per-step latencies) of OpenEnv's client playing ``seeds``."""
    from openenv.core.generic_client import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=60).connect()
    steps, latencies, clock = 0, [], time.perf_counter
    t0 = clock()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        result = client.reset(seed=seed, task=task)
        while not result.done:
            k = _random_macro(rng, result.observation["action_mask"])
            t = clock()
            result = client.step({"macro": k})
            latencies.append(clock() - t)
            steps += 1
    elapsed = clock() - t0
    client.close()
    return steps, elapsed, latencies


def remote_env_session(url: str, task: str, seeds: list[int]) -> tuple[int, float, list[float]]:
    from clinbench.serve.remote import RemoteEnv

    env = RemoteEnv(url, task)
    macros = env.macro_space
    steps, latencies, clock = 0, [], time.perf_counter
    t0 = clock()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            action = macros.to_action(_random_macro(rng, macros.mask(obs)), obs)
            t = clock()
            obs, _, done, _, _ = env.step(action)
            latencies.append(clock() - t)
            steps += 1
    elapsed = clock() - t0
    env.close()
    return steps, elapsed, latencies


def in_process(task: str, seeds: list[int]) -> tuple[int, float]:
    env = make(task)
    macros = env.macro_space
    steps, t0 = 0, time.perf_counter()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            k = _random_macro(rng, macros.mask(obs))
            obs, _, done, _, _ = env.step(macros.to_action(k, obs))
            steps += 1
    return steps, time.perf_counter() - t0


def concurrent(url: str, task: str, sessions: int, episodes: int) -> dict[str, float]:
    out: list[tuple[int, float, list[float]]] = []
    seeds = [[1000 * s + e for e in range(episodes)] for s in range(sessions)]
    threads = [
        threading.Thread(target=lambda s=s: out.append(openenv_session(url, task, s)))
        for s in seeds
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    steps = sum(o[0] for o in out)
    lat = np.concatenate([o[2] for o in out])
    return {
        "sessions": sessions,
        "steps_per_s": steps / wall,
        "p50_ms": float(np.percentile(lat, 50) * 1e3),
        "p99_ms": float(np.percentile(lat, 99) * 1e3),
    }


def _summary(steps: int, seconds: float, latencies: list[float]) -> dict[str, float]:
    lat = np.asarray(latencies)
    return {
        "steps_per_s": steps / seconds,
        "p50_ms": float(np.percentile(lat, 50) * 1e3),
        "p99_ms": float(np.percentile(lat, 99) * 1e3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="recruitment/hard_bench")
    parser.add_argument("--episodes", type=int, default=10, help="episodes per session")
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    port = _free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = start_server(args.task, port)
    try:
        seeds = list(range(args.episodes))
        openenv_session(url, args.task, [999])  # warm-up
        results = {
            "in_process": dict(zip(("steps", "seconds"), in_process(args.task, seeds))),
            "openenv_client": _summary(*openenv_session(url, args.task, seeds)),
            "remote_env": _summary(*remote_env_session(url, args.task, seeds)),
            "concurrent": [concurrent(url, args.task, n, 2) for n in args.sessions],
        }
    finally:
        proc.terminate()
        proc.wait(10)
    p = results["in_process"]
    p["steps_per_s"] = p["steps"] / p["seconds"]
    machine = f"{platform.platform()} {platform.processor()}, python {platform.python_version()}"
    if args.json:
        print(json.dumps({"machine": machine, "task": args.task, "results": results}, indent=2))
        return
    print(f"machine: {machine}; task {args.task}; server in its own process, loopback")
    print(f"{'':36s} {'steps/s':>9s} {'p50 ms':>8s} {'p99 ms':>8s}")
    print(f"{'in process (reference)':36s} {p['steps_per_s']:9,.0f}")
    rows = (("openenv_client", "1 session, OpenEnv client"), ("remote_env", "1 session, RemoteEnv"))
    for name, label in rows:
        r = results[name]
        print(f"{label:36s} {r['steps_per_s']:9,.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}")
    for r in results["concurrent"]:
        label = f"{r['sessions']} concurrent sessions (total)"
        print(f"{label:36s} {r['steps_per_s']:9,.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}")


if __name__ == "__main__":
    main()
