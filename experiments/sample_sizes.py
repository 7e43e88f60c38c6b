"""How many evaluation and operating-characteristic episodes the protocol needs, measured.

    python experiments/sample_sizes.py [--results data/sweep_results] [--agents ...]

Reads the per-episode scores and timings of a results folder (the canonical run by
default) and applies docs/statistics.md's sample-size rules per (task, agent):

- a learning agent (a cell with a learning curve or an offline fit): evaluation noise
  (episode variance / episodes) under 25 % of the variance of its cell means across
  seeds. With ``s2`` the episode variance, ``V`` the variance of the cell means at the
  run's ``E0`` episodes and ``b = V - s2 / E0`` the policies' own between-seed variance,
  the rule is ``s2 / E < 0.25 (b + s2 / E)``, i.e. ``E > 3 s2 / b``. Where ``b`` is not
  distinguishable from 0 (F test of ``V`` against ``s2 / E0``, p > 0.05) the seeds'
  policies score alike and no number of episodes meets the rule; then the half-width
  rule below applies to it as well. The plain reading with ``V`` held at its measured
  value (``E > 4 s2 / V``) is printed beside it;
- a non-learning agent: the 95 % half-width of its per-task mean under 0.02, i.e.
  ``t_{n-1} sqrt(s2 / (n E)) < 0.02`` over ``n`` seeds;
- operating characteristics: each trained policy on enough null worlds that a true
  1.5 % claim rate gives a Clopper-Pearson upper bound below 2.5 %; the null share of
  the operating-characteristic worlds is measured (metric ``null_world``).

It prints the episodes each rule needs, the largest per task and family, and the extra
time of a protocol (``--eval`` per family, ``--oc``) on the default grid, from the
cells' measured seconds per episode (``timing.eval_seconds`` over the episodes played;
learning curves replay ``eval_episodes`` validation episodes at each of their points).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats as sps

from clinbench.stats import clopper_pearson

#: The README's main command: every baseline, no optional extra.
DEFAULT_GRID = ("heuristic", "random", "hcapo", "mira", "klong", "memexrl", "fixed_design")


def load(folder: Path) -> dict[tuple[str, str], dict[int, dict]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    cells: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for c in manifest["cells"]:
        record = json.loads((folder / "runs" / f"{c['hash']}.json").read_text())
        cells[c["task"], c["agent"]][int(c["seed"])] = record
    return cells


def chance_below(n: int, rate: float = 0.015, bound: float = 0.025) -> float:
    """The probability that ``n`` null worlds with a true claim rate ``rate`` give a
    Clopper-Pearson upper bound below ``bound``."""
    if clopper_pearson(0, n)[2] >= bound:
        return 0.0
    k = 0
    while clopper_pearson(k + 1, n)[2] < bound:
        k += 1
    return float(sps.binom.cdf(k, n, rate))


def null_worlds_needed(power: float = 0.8, step: int = 100) -> int:
    """Fewest null worlds (in steps of ``step``) with ``chance_below`` at least ``power``."""
    n = step
    while chance_below(n) < power:
        n += step
    return n


def rules(seeds: dict[int, dict]) -> dict[str, float]:
    """The measured variances and the episodes each rule needs for one (task, agent)."""
    scores = [np.array([e["score"] for e in r["episodes"]]) for r in seeds.values()]
    e0, n = scores[0].size, len(scores)
    s2 = float(np.mean([s.var(ddof=1) for s in scores]))
    means = np.array([s.mean() for s in scores])
    v = float(means.var(ddof=1))
    noise = s2 / e0
    b = v - noise
    f_p = float(sps.f.sf(v / noise, n - 1, n * (e0 - 1))) if noise > 0 else math.nan
    t = float(sps.t.ppf(0.975, n - 1))
    return {
        "learning": any(bool(r.get("curve") or r.get("offline")) for r in seeds.values()),
        "s2": s2,
        "var_means": v,
        "noise_share": noise / v if v > 0 else math.inf if noise > 0 else 0.0,
        "between_p": f_p,
        "e_components": math.ceil(3 * s2 / b) if b > 0 and f_p <= 0.05 else None,
        "e_plain": math.ceil(4 * s2 / v) if v > 0 else (0 if s2 == 0 else None),
        "e_half": math.ceil(t * t * s2 / (n * 0.02**2)),
        "seconds": float(
            np.mean(
                [
                    r["timing"]["eval_seconds"]
                    / (len(r["episodes"]) + len(r.get("oc_metrics") or []))
                    for r in seeds.values()
                ]
            )
        ),
        "null_share": (
            float(np.mean([m["null_world"] for r in seeds.values() for m in r["oc_metrics"]]))
            if all(r.get("oc_metrics") for r in seeds.values())
            else None
        ),
        "oc": len(next(iter(seeds.values())).get("oc_metrics") or []),
        "e0": e0,
    }


def needed(r: dict[str, float]) -> int:
    """The episodes the rules ask of one (task, agent)."""
    if r["learning"] and r["e_components"] is not None:
        return r["e_components"]
    return r["e_half"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=Path("data/sweep_results"))
    parser.add_argument("--grid", nargs="*", default=list(DEFAULT_GRID), help="agents timed")
    parser.add_argument(
        "--eval", nargs="*", default=[], help="proposed episodes per family: FAMILY=E ..."
    )
    parser.add_argument("--curve-episodes", type=int, help="validation episodes per curve point")
    parser.add_argument(
        "--null-worlds", type=int, default=2000, help="null worlds per trained policy (proposal)"
    )
    args = parser.parse_args()
    cells = load(args.results)
    manifest = json.loads((args.results / "manifest.json").read_text())
    task_env = manifest["grid"]["task_envs"]
    curve_points = manifest["protocol"]["curve_points"]
    print(
        "task | agent | learning | s2 episodes | var cell means | noise share at E0 | "
        "between-seed p | E (25 % rule) | E (plain 4 s2/V) | E (half-width 0.02) | ms/episode"
    )
    measured = {}
    for (task, agent), seeds in sorted(cells.items()):
        r = measured[task, agent] = rules(seeds)
        print(
            f"{task} | {agent} | {'yes' if r['learning'] else 'no'} | {r['s2']:.5f} | "
            f"{r['var_means']:.6f} | {r['noise_share']:.2f} | {r['between_p']:.3f} | "
            f"{r['e_components'] if r['e_components'] is not None else 'not met'} | "
            f"{r['e_plain']} | {r['e_half']} | {1000 * r['seconds']:.2f}"
        )
    print()
    per_family: dict[str, int] = defaultdict(int)
    for (task, agent), r in measured.items():
        per_family[task_env[task]] = max(per_family[task_env[task]], needed(r))
        per_family[task] = max(per_family[task], needed(r))
    for name, e in sorted(per_family.items()):
        print(f"episodes needed on {name}: {e}")
    need = args.null_worlds
    print(
        f"\nnull worlds for an 80 % chance that a true 1.5 % rate's upper bound is below 2.5 %: "
        f"{null_worlds_needed()}; with {need}: a {chance_below(need):.0%} chance"
    )
    shares = {t: r["null_share"] for (t, _), r in measured.items() if r["null_share"] is not None}
    for task, share in sorted(shares.items()):
        print(f"{task}: null share {share:.3f} -> {math.ceil(need / share)} mixed OC episodes")
    proposal = dict(kv.split("=") for kv in args.eval)
    if not proposal:
        return
    extra = defaultdict(float)
    for (task, agent), r in measured.items():
        if agent not in args.grid:
            continue
        e = int(proposal.get(task_env[task], r["e0"]))
        seeds = len(cells[task, agent])
        extra["evaluation"] += (e - r["e0"]) * r["seconds"] * seeds
        if r["learning"]:
            curve = args.curve_episodes if args.curve_episodes is not None else e
            extra["learning-curve validation"] += (
                (curve - r["e0"]) * curve_points * r["seconds"] * seeds
            )
        if r["null_share"] is not None:
            if r["learning"]:
                extra["OC, mixed worlds (trained)"] += (
                    (math.ceil(need / r["null_share"]) - r["oc"]) * r["seconds"] * seeds
                )
                extra["OC, null worlds only (trained)"] += need * r["seconds"] * seeds
            else:
                pooled = math.ceil(need / seeds)
                extra["OC, mixed worlds (untrained)"] += (
                    max(0, math.ceil(pooled / r["null_share"]) - r["oc"]) * r["seconds"] * seeds
                )
                extra["OC, null worlds only (untrained)"] += pooled * r["seconds"] * seeds
    print(f"\nextra core-seconds on {', '.join(args.grid)}:")
    for k, v in extra.items():
        print(f"  {k}: {v:.0f} (about {v / 2:.0f} s wall on 2 cores)")


if __name__ == "__main__":
    main()
