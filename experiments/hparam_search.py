"""A small hyper-parameter search of the in-house learners, on training worlds only.

    python experiments/hparam_search.py                 # run (or resume) the whole grid
    python experiments/hparam_search.py --table         # only print the Markdown table
    python experiments/hparam_search.py --agents mira --families recruitment

Each configuration is trained at the family's default step budget from the training
stream of a search seed (``SEEDS``; not a canonical seed) and scored greedily on
``WORLDS`` held-out *training* worlds: world seeds drawn from the training range
``[2**31, 2**32)`` with a stream of their own. Neither the evaluation worlds (below
``2**30``) nor the validation worlds of the learning curves (``[2**30, 2**31)``) are
played, so the choice cannot fit the numbers the report tests (``docs/agents.md``,
"Hyper-parameters").

Every run appends one row to ``data/hparam_search/runs.csv`` (resumable; the code
version is in each row). An agent's chosen configuration has the highest mean, over the
two families, of its mean held-out score on each family's searched tasks (``TASKS``:
recruitment's middle task only, whose cells cost about twenty dose-finding cells). One
seed and one recruitment task make this a coarse search: it picks among settings, it
does not rank them reliably. The configuration files (``clinbench/conf/agent/*.yaml``)
hold the result, which a test checks against this file.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
from pathlib import Path

import clinbench  # first: it pins the BLAS kernel before numpy loads

# isort: split
import numpy as np
import pandas as pd
from joblib import Parallel, delayed

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "hparam_search"
SEEDS = (1001,)
WORLDS = {"recruitment": 60, "trial_design": 300, "portfolio": 100}  # portfolio: update_cost.py

#: per agent: the grid searched (key -> values); every combination is one configuration
GRIDS: dict[str, dict[str, list]] = {
    "hcapo": {"groups": [1, 4], "omega": [0.25, 1.0], "minibatch": [0, 64]},
    "memexrl": {"groups": [1, 4], "epochs": [4, 16], "minibatch": [0, 64]},
    "klong": {"groups": [1, 4], "epochs": [4, 16], "minibatch": [0, 64]},
    "mira": {"actor_steps": [60, 200], "lr": [0.01, 0.03]},
}
TASKS = {
    "recruitment": ["medium_bench"],  # a recruitment cell costs ~20 trial cells
    "trial_design": ["effective_drug", "efficacy_safety", "rare_disease"],
}
COLUMNS = ["agent", "family", "task", "seed", "config", "score", "se", "env_steps", "code"]


def configurations(agent: str) -> list[dict]:
    grid = GRIDS[agent]
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def held_out_worlds(family: str, task: str, n: int) -> list[int]:
    """``n`` training-range world seeds of the search's own stream (not any cell's)."""
    from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW

    rng = np.random.default_rng(np.random.SeedSequence([7, *map(ord, f"{family}/{task}")]))
    return rng.integers(TRAIN_SEED_LOW, TRAIN_SEED_HIGH, size=n).tolist()


def run_one(agent: str, family: str, task: str, seed: int, config: dict) -> dict:
    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import make_agent
    from clinbench.env import make
    from clinbench.env.registry import family as family_of
    from clinbench.episode import play_episode
    from clinbench.protocol import training_env_factory

    env_id = f"{family}/{task}"
    env = make(env_id)
    fam = family_of(family)
    steps = fam.training_steps
    learner = make_agent(agent, AgentContext.of(env), **config)
    worlds = training_env_factory(env_id, steps=steps)
    learner.train(worlds, steps, np.random.default_rng([seed, 1]), curve_points=1)
    scores = [
        play_episode(env, learner, w, agent_seed=k).score
        for k, w in enumerate(held_out_worlds(family, task, WORLDS[family]))
    ]
    return {
        "agent": agent,
        "family": family,
        "task": task,
        "seed": seed,
        "config": json.dumps(config, sort_keys=True),
        "score": float(np.mean(scores)),
        "se": float(np.std(scores, ddof=1) / np.sqrt(len(scores))),
        "env_steps": worlds.budget.used,
        "code": clinbench.__version__,
    }


def done_keys(path: Path) -> set[tuple]:
    if not path.exists():
        return set()
    runs = pd.read_csv(path)
    return {
        tuple(r)
        for r in runs[["agent", "family", "task", "seed", "config"]].itertuples(index=False)
    }


def choices(runs: pd.DataFrame) -> pd.DataFrame:
    """Per agent and configuration: the mean held-out score on each family's searched
    tasks and their mean (each family counts once), best first."""
    fam = runs.groupby(["agent", "config", "family"])["score"].mean().unstack("family")
    fam["overall"] = fam.mean(axis=1)
    fam = fam.reset_index().sort_values(["agent", "overall"], ascending=[True, False])
    return fam


def chosen(runs: pd.DataFrame) -> dict[str, dict]:
    """The configuration each agent defaults to: the best overall mean."""
    best = choices(runs).groupby("agent", sort=True).head(1)
    return {r.agent: json.loads(r.config) for r in best.itertuples()}


def table(runs: pd.DataFrame) -> str:
    families = [f for f in TASKS if f in set(runs.family)]
    lines = [
        "| agent | configuration | " + " | ".join(families) + " | mean |",
        "|---|---|" + "---|" * (len(families) + 1),
    ]
    for agent, rows in choices(runs).groupby("agent", sort=True):
        for k, r in enumerate(rows.itertuples()):
            mark = " (chosen)" if k == 0 else ""
            cells = " | ".join(f"{getattr(r, f):.3f}" for f in families)
            lines.append(f"| {agent} | `{r.config}`{mark} | {cells} | {r.overall:.3f} |")
    return "\n".join(lines)


def append_runs(
    path: Path, columns: list[str], run, jobs: list[tuple], n_jobs: int, describe
) -> None:
    """``run(*job)`` for every job, ``n_jobs`` processes at a time, each row appended to
    the CSV at ``path`` as it finishes (so an interrupted search resumes)."""
    print(f"{len(jobs)} runs to do", file=sys.stderr)
    new = not path.exists()
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        if new:
            writer.writeheader()
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(run)(*job) for job in jobs
        )
        for k, row in enumerate(results, 1):
            writer.writerow(row)
            fh.flush()
            print(f"[{k}/{len(jobs)}] {describe(row)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=list(GRIDS))
    parser.add_argument("--families", nargs="+", default=list(TASKS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "runs.csv"
    if not args.table:
        done = done_keys(path)
        todo = [
            (agent, fam, task, seed, config)
            for agent in args.agents
            for fam in args.families
            for task in TASKS[fam]
            for seed in SEEDS
            for config in configurations(agent)
            if (agent, fam, task, seed, json.dumps(config, sort_keys=True)) not in done
        ]
        append_runs(
            path, COLUMNS, run_one, todo, args.jobs,
            lambda row: f"{row['agent']} {row['task']} {row['config']}: {row['score']:.3f}",
        )
    runs = pd.read_csv(path)
    print(table(runs))
    (OUT / "table.md").write_text(table(runs) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
