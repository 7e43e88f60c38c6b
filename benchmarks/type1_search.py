"""Adversarial search of the dose-finding trial's familywise type-I error.

    python benchmarks/type1_search.py [--worlds 4000] [--jobs 2] [--task T] [--plan P] [--json F]

Plays legal plans on null worlds (no dose better than control: the task with
``scenario_mix=(0, 1, 0, 0)``) through the native API. Every plan claims the moment a
dose crosses its boundary (the crossing dose with the largest z), so its claim rate is
the familywise type-I error P(some dose crosses at some look | null drug), which the
protocol promises to keep at one-sided 0.025. The plans attack that promise: extreme
allocation ratios (control from 5 % to 94 % of every cohort), cohort sizes from 5
patients to the 100 cap, strictness kept at 0 (the cheapest patients: the budget then
buys up to twice the planned information, i.e. over-running), at 1 or switched look by
look, doses dropped, and data-driven plans (allocation to the current leader, small
cohorts when a dose looks promising, dropping the losers, random legal play). The two
plans of the evaluation-integrity review are rebuilt from their description:
``balanced_overrun`` (equal allocation, the information just short of its planned
maximum, then one more large cohort) and ``unbalanced`` (66 control and 9 patients per
dose in every cohort).

Each plan plays the same ``--worlds`` null worlds per task (world seeds from
``--first-world`` on); the table gives the rate with its Monte Carlo standard error and
whether it is within 0.025 + 2 standard errors (at the rate 0.025, as the tests use),
the mean patients enrolled and the mean largest information fraction at the end (as the
observation shows it, capped at 1).
Randomised plans draw from a numpy Generator seeded by the plan and the world.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import zlib
from dataclasses import asdict, dataclass

import numpy as np
from joblib import Parallel, delayed

from clinbench.env import make
from clinbench.env.trial_design import TASKS, TrialAction
from clinbench.env.trial_design.actions import MAX_COHORT
from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS

ALPHA = 0.025
NULL_MIX = (0.0, 1.0, 0.0, 0.0)
#: First world seed (disjoint from the tests' seeds 0..3999).
FIRST_WORLD = 1_000_000
SEED = 20_250_601


@dataclass(frozen=True)
class Plan:
    """A legal plan: a fixed design, or a simple policy of the observation."""

    name: str
    #: control's share of every cohort; the doses in use share the rest equally
    control: float = 0.25
    #: doses in use (the others get no patients and are dropped, one per look)
    doses: int = 3
    #: cohort sizes in patients (``unit="patients"``) or shares of the planned sample
    #: (``unit="planned"``); the last one repeats. Cut to the budget, time and 100 cap.
    cohorts: tuple[float, ...] = (48,)
    unit: str = "patients"
    #: inclusion strictness of each cohort, cycled
    strictness: tuple[float, ...] = (0.5,)
    #: a data-driven rule: "" (none), "leader" (the doses' share to the largest z),
    #: "hurry" (a cohort of 5 while some z >= 1.5), "wait" (a cohort of 5 while every
    #: z < 1.5), "drop_losers" (drop the smallest z each look), "random" (random play),
    #: "overrun" (cohorts that bring the doses' information fraction just to ``target``,
    #: then the largest cohorts: the most information past the planned maximum)
    adapt: str = ""
    target: float = 0.995


def _grid() -> list[Plan]:
    plans = [
        Plan("heuristic_like", cohorts=(0.25,), unit="planned"),
        Plan(
            "balanced_overrun",
            cohorts=(0.5,),
            unit="planned",
            strictness=(0.0,),
            adapt="overrun",
        ),
        Plan(
            "balanced_overrun_4",
            cohorts=(0.235, 0.235, 0.235, 0.235, 1.0),
            unit="planned",
            strictness=(0.0,),
        ),
        Plan("balanced_overrun_2", cohorts=(0.49, 0.49, 1.0), unit="planned", strictness=(0.0,)),
        Plan("balanced_overrun_3", cohorts=(0.96, 1.0), unit="planned", strictness=(0.0,)),
        Plan("unbalanced", control=66 / 93, cohorts=(93,), strictness=(0.0,)),
        Plan("unbalanced_one_dose", control=66 / 75, doses=1, cohorts=(75,), strictness=(0.0,)),
    ]
    for control in (0.05, 0.25, 0.5, 0.71, 0.85, 0.94):
        for size in (40, 100):
            for s in ((0.0,), (0.0, 1.0)):
                tag = "s0" if s == (0.0,) else "s01"
                plans.append(Plan(f"c{control:g}_n{size}_{tag}", control, 3, (size,), strictness=s))
    for control in (0.5, 0.71):
        plans.append(Plan(f"c{control:g}_n12_s0", control, 3, (12,), strictness=(0.0,)))
    # the worst of a finer grid around ``unbalanced`` (control 0.6-0.8, cohorts 60-100)
    plans.append(Plan("c0.71_n75_s0", 0.71, 3, (75,), strictness=(0.0,)))
    plans.append(Plan("c0.66_n100_s0", 0.66, 3, (100,), strictness=(0.0,)))
    for control in (0.5, 0.85):
        plans.append(Plan(f"c{control:g}_d1_n100_s0", control, 1, (100,), strictness=(0.0,)))
    plans += [
        Plan("tiny_cohorts_s0", cohorts=(5,), strictness=(0.0,)),
        Plan("strict_n24", cohorts=(24,), strictness=(1.0,)),
        Plan("switch_s_n24", cohorts=(24,), strictness=(1.0, 0.0)),
        Plan("leader_c0.5", control=0.5, cohorts=(40,), strictness=(0.0,), adapt="leader"),
        Plan("leader_c0.85", control=0.85, cohorts=(40,), strictness=(0.0,), adapt="leader"),
        Plan("hurry_n60", cohorts=(60,), strictness=(0.0,), adapt="hurry"),
        Plan("wait_n60", cohorts=(60,), strictness=(0.0,), adapt="wait"),
        Plan("drop_losers_n40", cohorts=(40,), strictness=(0.0,), adapt="drop_losers"),
        Plan(
            "drop_losers_c0.85", control=0.85, cohorts=(60,), strictness=(0.0,), adapt="drop_losers"
        ),
        Plan("random", adapt="random"),
    ]
    return plans


PLANS: dict[str, Plan] = {p.name: p for p in _grid()}


# ------------------------------------------------------------------------------- the policy
def claim(obs) -> str | None:
    """The crossing dose with the largest z (the greedy claimer)."""
    best = None
    for j in range(len(DOSE_ARMS)):
        if obs.crossed[j] and (best is None or obs.z[j] > obs.z[best]):
            best = j
    return None if best is None else DOSE_ARMS[best]


def room(obs, params, s: float) -> int:
    """The largest cohort the budget, the duration and the cap allow at strictness ``s``."""
    cpp = params.cost_base + params.cost_strictness * s
    by_budget = math.floor((obs.budget_remaining - params.look_cost) / cpp + 1e-9)
    rate = params.enrol_rate * (1.5 - s)
    by_time = math.floor((obs.max_weeks - obs.weeks - params.look_weeks) * rate + 1e-9)
    return max(0, min(by_budget, by_time, MAX_COHORT))


def _ranked(obs) -> list[int]:
    """Active doses, largest z first."""
    active = [j for j in range(len(DOSE_ARMS)) if obs.active[j + 1]]
    return sorted(active, key=lambda j: -obs.z[j])


def _random_action(obs, params, rng: np.random.Generator) -> TrialAction:
    active = [i for i in range(len(ARMS)) if obs.active[i]]
    drop = None
    if len(active) > 2 and rng.random() < 0.15:
        drop = int(rng.choice(active[1:]))
        active.remove(drop)
    s = float(rng.choice([0.0, 0.5, 1.0]))
    n = min(int(rng.integers(2, 101)), room(obs, params, s))
    w = np.zeros(len(ARMS))
    w[active] = rng.dirichlet(np.full(len(active), 0.5))
    w /= w.sum()
    return _cohort(n, w.tolist(), s, None if drop is None else ARMS[drop])


def _cohort(n: int, alloc: list[float], s: float, drop: str | None) -> TrialAction:
    if n <= 0:
        return TrialAction(stop_for_futility=True)
    return TrialAction(
        n_next_cohort=int(n),
        allocation_control=alloc[0],
        allocation_low=alloc[1],
        allocation_mid=alloc[2],
        allocation_high=alloc[3],
        drop_arm=drop,
        inclusion_criteria_strictness=s,
    )


def act(plan: Plan, params, obs, k: int, rng: np.random.Generator) -> TrialAction:
    """The plan's action at its ``k``-th cohort: claim any crossing, else enrol."""
    arm = claim(obs)
    if arm is not None:
        return TrialAction(stop_for_success=True, success_arm=arm)
    if obs.final_analysis:
        return TrialAction(stop_for_futility=True)
    if plan.adapt == "random":
        return _random_action(obs, params, rng)
    ranked = _ranked(obs)
    if plan.adapt == "leader" and k > 0:
        used = ranked[:1]
    elif plan.adapt == "drop_losers" and k > 0:
        used = ranked[:-1] if len(ranked) > 1 else ranked
    else:
        used = [j for j in range(plan.doses) if obs.active[j + 1]]
    drop = next((DOSE_ARMS[j] for j in ranked if j not in used), None)
    alloc = [plan.control] + [0.0] * len(DOSE_ARMS)
    for j in used:
        alloc[j + 1] = (1.0 - plan.control) / len(used)
    s = plan.strictness[k % len(plan.strictness)]
    size = plan.cohorts[min(k, len(plan.cohorts) - 1)]
    n = round(size * params.planned_patients) if plan.unit == "planned" else int(size)
    promising = max((obs.z[j] for j in ranked), default=0.0) >= 1.5
    if (plan.adapt == "hurry" and promising) or (plan.adapt == "wait" and not promising and k):
        n = 5
    if plan.adapt == "overrun":  # m patients on each of the 4 arms add m / per-arm plan to t
        short = plan.target - min(obs.information_fraction[j] for j in used)
        top_up = 4 * math.floor(short * params.planned_per_arm)
        n = min(n, top_up) if top_up > 0 else MAX_COHORT
    return _cohort(min(n, room(obs, params, s)), alloc, s, drop)


def play(plan: Plan, task: str, seeds: list[int]) -> dict[str, float]:
    """Claims, errors, patients and information of ``plan`` on the null worlds ``seeds``."""
    env = make(f"trial_design/{task}", scenario_mix=NULL_MIX)
    params = env.params
    tag = zlib.crc32(plan.name.encode())
    claims = errors = 0
    patients = info = 0.0
    for seed in seeds:
        rng = np.random.default_rng([SEED, tag, seed])
        obs, _ = env.reset(seed=seed)
        k, done, last = 0, False, {}
        while not done:
            action = act(plan, params, obs, k, rng)
            k += action.n_next_cohort > 0
            obs, _, done, _, last = env.step(action)
            errors += last["error"] is not None
        claims += int(last["claimed"])
        patients += last["patients"]
        info += max(obs.information_fraction)
    n = len(seeds)
    return {
        "claims": claims,
        "worlds": n,
        "errors": errors,
        "patients": patients / n,
        "max_information": info / n,
    }


def type_i(plan: Plan, task: str, worlds: int, first: int = FIRST_WORLD, jobs: int = 1):
    """Familywise type-I error of ``plan`` on ``task``: (rate, standard error, details)."""
    seeds = list(range(first, first + worlds))
    chunks = [seeds[i::jobs] for i in range(jobs)]
    parts = (
        Parallel(n_jobs=jobs)(delayed(play)(plan, task, c) for c in chunks)
        if jobs > 1
        else [play(plan, task, seeds)]
    )
    return _merge(parts)


def _merge(parts: list[dict[str, float]]) -> tuple[float, float, dict[str, float]]:
    n = sum(p["worlds"] for p in parts)
    out = {
        "claims": sum(p["claims"] for p in parts),
        "worlds": n,
        "errors": sum(p["errors"] for p in parts),
        "patients": sum(p["patients"] * p["worlds"] for p in parts) / n,
        "max_information": sum(p["max_information"] * p["worlds"] for p in parts) / n,
    }
    rate = out["claims"] / n
    return rate, math.sqrt(rate * (1.0 - rate) / n), out


def bound(worlds: int) -> float:
    """0.025 + 2 Monte Carlo standard errors (of a rate of 0.025) on ``worlds`` worlds."""
    return ALPHA + 2.0 * math.sqrt(ALPHA * (1.0 - ALPHA) / worlds)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worlds", type=int, default=4000)
    parser.add_argument("--first-world", type=int, default=FIRST_WORLD)
    parser.add_argument("--jobs", type=int, default=2, help="processes (at most 2 here)")
    parser.add_argument("--task", action="append", choices=list(TASKS))
    parser.add_argument("--plan", action="append", choices=list(PLANS))
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    tasks = args.task or list(TASKS)
    plans = [PLANS[p] for p in args.plan] if args.plan else list(PLANS.values())
    seeds = list(range(args.first_world, args.first_world + args.worlds))
    jobs = [(p, t) for p in plans for t in tasks]
    start = time.perf_counter()
    parts = Parallel(n_jobs=max(1, args.jobs))(delayed(play)(p, t, seeds) for p, t in jobs)
    elapsed = time.perf_counter() - start
    limit = bound(args.worlds)
    rows = []
    for (plan, task), part in zip(jobs, parts, strict=True):
        rate, se, out = _merge([part])
        rows.append(
            {
                "plan": plan.name,
                "task": task,
                "rate": rate,
                "se": se,
                "within": rate <= limit,
                **out,
            }
        )
    print(
        f"{len(plans)} plans x {len(tasks)} tasks x {args.worlds} null worlds, "
        f"{elapsed:.0f} s; bound 0.025 + 2 SE = {limit:.4f}"
    )
    print(
        f"{'plan':22s} {'task':16s} {'rate':>7s} {'SE':>7s} {'patients':>9s} "
        f"{'max t':>6s} {'errors':>6s}"
    )
    for r in sorted(rows, key=lambda r: -r["rate"]):
        flag = "" if r["within"] else "  ABOVE"
        print(
            f"{r['plan']:22s} {r['task']:16s} {100 * r['rate']:6.2f}% {100 * r['se']:6.2f}% "
            f"{r['patients']:9.1f} {r['max_information']:6.2f} {r['errors']:6d}{flag}"
        )
    for task in tasks:
        worst = max((r for r in rows if r["task"] == task), key=lambda r: r["rate"])
        print(
            f"worst on {task}: {worst['plan']} {100 * worst['rate']:.2f}% "
            f"(SE {100 * worst['se']:.2f}%)"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "worlds": args.worlds,
                    "first_world": args.first_world,
                    "bound": limit,
                    "plans": {p.name: asdict(p) for p in plans},
                    "results": rows,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
