"""The training budget at which each learner would beat the heuristic, extrapolated
from the default budget and ten times it.

    python experiments/budget_extrapolation.py     # prints docs/agents.md's table

No learner beats the heuristic significantly at the default budget, nor at ten times
it (``data/long_budget/``). This reads both runs, which share their seeds and their
evaluation worlds, and asks per learner and task (one per family: the long runs'
tasks) how many more decades of environment steps its score's rise from the default
budget to ten times it would take to beat the heuristic in a paired t-test at the
task's strictest Holm threshold of the canonical report (``power.families``), with
80 % power (:func:`clinbench.stats.budget_to_beat`; it states the model and what it
leaves out). Nothing is run: this is arithmetic on the committed results, and an
extrapolation, not a measurement. ``tests/doc_tables.py`` checks docs/agents.md's
table against it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clinbench import stats
from clinbench.report.results import load_results

ROOT = Path(__file__).resolve().parents[1]
CANONICAL = "data/sweep_results"
LONG_BUDGET = "data/long_budget"
REFERENCE = "heuristic"
#: the long runs' folders in the order the docs list the families
FAMILIES = ("recruitment", "trial_design", "portfolio")
HEADER = (
    "agent",
    "task",
    "gap at 10x",
    "margin",
    "target (reference planner)",
    "gain per decade",
    "budget to beat the heuristic (steps) [range]",
    "with per-seed gains",
)


def _budget(res, task: str, agent: str) -> int:
    steps = {
        r["config"]["protocol"]["train_steps"]
        for (t, a, _), r in res.records.items()
        if t == task and a == agent
    }
    if len(steps) != 1:
        raise ValueError(f"{agent} on {task}: cells with budgets {sorted(steps)}")
    return int(steps.pop())


def rows(root: Path = ROOT, reference: str = REFERENCE) -> list[dict]:
    """One row per (learner, task) of each long run: its budgets, the seeds it shares
    with the default run and the reference, and :func:`stats.budget_to_beat`."""
    canonical = load_results(root / CANONICAL)
    report = json.loads((root / CANONICAL / "benchmark_report.json").read_text())
    power, references = report["power"], report["protocol"]["references"]
    out = []
    folders = sorted(
        (root / LONG_BUDGET).iterdir(),
        key=lambda f: (FAMILIES.index(f.name) if f.name in FAMILIES else len(FAMILIES), f.name),
    )
    for folder in folders:
        if not (folder / "manifest.json").exists():
            continue
        long = load_results(folder)
        for task in long.tasks:
            ref = long.scores(task, reference)
            for agent in long.agents:
                if agent == reference or not any(
                    r.get("curve")
                    for (t, a, _), r in long.records.items()
                    if t == task and a == agent
                ):
                    continue
                short, far = canonical.scores(task, agent), long.scores(task, agent)
                seeds = sorted(set(ref) & set(short) & set(far))
                b_short, b_long = _budget(canonical, task, agent), _budget(long, task, agent)
                result = stats.budget_to_beat(
                    [ref[s] for s in seeds],
                    [short[s] for s in seeds],
                    [far[s] for s in seeds],
                    factor=b_long / b_short,
                    alpha=power["families"][task]["holm_threshold"],
                    ceiling=references[task]["reference_planner"],
                )
                out.append(
                    {
                        "planner": references[task]["reference_planner"],
                        "agent": agent,
                        "task": task,
                        "seeds": seeds,
                        "budget": b_short,
                        "long_budget": b_long,
                        **result,
                    }
                )
    return out


def _steps(decades: float | None, long_budget: int) -> str:
    if decades is None:
        return "none"
    steps = long_budget * 10**decades
    return f"{steps:.1e}".replace("e+0", "e").replace("e+", "e")


def budget_cell(row: dict) -> str:
    """The extrapolated budget in environment steps, point [range], or why there is none."""
    d, b = row["decades"], row["long_budget"]
    if row["verdict"] == "beaten":
        return "beaten at 10x"
    if row["verdict"] == "not rising":
        return "none (not rising)"
    if row["verdict"] == "above the ceiling":
        return "none (target above the reference planner)"
    if row["verdict"] == "undetermined":
        return f"none at the mean gain [{_steps(d['low'], b)}, none]"
    times = row["long_budget"] * 10 ** d["point"] / row["budget"]
    return (
        f"{_steps(d['point'], b)} ({times:,.0f}x the default) "
        f"[{_steps(d['low'], b)}, {_steps(d['high'], b)}]"
    )


def table_rows(root: Path = ROOT) -> list[list[str]]:
    """docs/agents.md's rows (:data:`HEADER`)."""
    out = []
    for r in rows(root):
        g = r["gain_per_decade"]
        out.append(
            [
                r["agent"],
                r["task"],
                f"{r['gap']:+.3f}",
                f"{r['margin']:.3f}",
                f"{r['target']:.3f} ({r['planner']:.3f})",
                f"{g['mean']:+.3f} [{g['lo']:+.3f}, {g['hi']:+.3f}]",
                budget_cell(r),
                "reached" if r["per_seed_gains_reach"] else "never",
            ]
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows()]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
