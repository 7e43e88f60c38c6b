"""Coverage of the aggregate intervals at a handful of seeds, by simulation.

    python experiments/bootstrap_coverage.py [--sims 2000] [--reps 2000] [--tasks 3]

Draws runs per task from normal distributions with known means (three tasks on
different spreads, as in the benchmark; ``--tasks 6`` repeats the three twice, as a
six-task aggregate), computes the 95 % stratified percentile bootstrap interval of the
mean over tasks (what rliable reports) and the Student-t interval over per-seed means
(clinbench's headline), and prints how often each covers the true value.
docs/statistics.md quotes the output and ``clinbench/report/aggregate.py``
(``BOOTSTRAP_COVERAGE``) the caveat's number for a report's shape.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats as sps

from clinbench import stats

MEANS = np.array([0.9, 0.8, 0.6])
SDS = np.array([0.02, 0.05, 0.15])


def coverage(
    runs: int, sims: int, reps: int, tasks: int = 3, seed: int = 2026
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.resize(MEANS, tasks)
    sds = np.resize(SDS, tasks)
    truth = means.mean()
    boot = tee = 0
    for _ in range(sims):
        scores = rng.normal(means, sds, size=(runs, tasks))  # [run, task]
        _, lo, hi = stats.stratified_bootstrap_ci(scores, stats.aggregate_mean, rng, reps=reps)
        boot += lo <= truth <= hi
        per_seed = scores.mean(axis=1)
        half = sps.t.ppf(0.975, runs - 1) * per_seed.std(ddof=1) / np.sqrt(runs)
        tee += abs(per_seed.mean() - truth) <= half
    return boot / sims, tee / sims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.tasks} tasks")
    print("runs per task | stratified bootstrap 95 % | Student-t 95 % over seeds")
    for runs in (3, 5, 10, 20):
        b, t = coverage(runs, args.sims, args.reps, args.tasks)
        print(f"{runs:13d} | {b:25.3f} | {t:.3f}")


if __name__ == "__main__":
    main()
