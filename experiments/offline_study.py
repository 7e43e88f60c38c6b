"""The canonical offline study (docs/offline.md): datasets, sweeps over splits, ablations.

    python experiments/offline_study.py            # creates (or resumes) everything
    python experiments/offline_study.py --table    # only prints the Markdown tables

Datasets are regenerated from their seeds into ``data/datasets/`` (not committed); the
sweeps write ``data/offline_study/<family>/`` (cell files, tidy CSVs, report, charts)
and the ablations ``data/offline_study/ablations/<name>/``. Every sweep is the canonical
protocol (seeds 1 7 21 42 123, 200 operating-characteristic episodes per cell, each
family's evaluation episodes except on dose finding: 100 rather than 480, since that
study has several hundred cells; and no null worlds, which would multiply its time by
about five: its type-I errors rest on the null worlds among the 200), with the online
references heuristic, random and memexrl beside the offline agents, so offline agents,
their behaviour policies and the online learner sit in one report.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NamedTuple

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
import numpy as np
import pandas as pd

from clinbench.cli.app import app
from clinbench.stats.intervals import t_interval

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("data") / "datasets"
OUT = Path("data") / "offline_study"
OFFLINE = ("bc", "rwbc", "learned_reward", "iql")
ONLINE = ("heuristic", "random", "memexrl")
class Study(NamedTuple):
    family: str
    dataset: str
    dataset_args: list[str]
    splits: list[str]
    sweep_args: list[str]


#: study folder -> Study (family, dataset, its arguments, splits, sweep tasks). The
#: recruitment tasks differ in their sites: the main recruitment study is one task's
#: dataset (the hardest); ``recruitment_tasks`` holds all three tasks in their united
#: layout and evaluates on hard_bench what was learnt from easy and medium (``task``)
#: beside what was learnt from hard_bench's own episodes (``worlds``).
STUDIES = {
    "recruitment": Study(
        "recruitment",
        "recruitment-hard-v0",
        ["--tasks", "hard_bench", "--episodes", "100"],
        ["worlds", "behaviour=heuristic+random"],
        ["--tasks", "hard_bench"],
    ),
    "recruitment_tasks": Study(
        "recruitment",
        "recruitment-mixed-v0",
        ["--env", "recruitment", "--episodes", "100"],
        ["worlds", "task"],
        ["--tasks", "hard_bench"],
    ),
    "trial_design": Study(
        "trial_design",
        "trial-mixed-v0",
        ["--env", "trial_design", "--episodes", "200"],
        ["worlds", "task", "unseen=null_world", "behaviour=heuristic+random"],
        [],
    ),
}
#: the studies the ablations repeat (one per family: its main study's dataset and tasks)
ABLATED = ("recruitment", "trial_design")
#: label -> (folder, agent, override): each collapses a method towards a simpler one
ABLATIONS = {
    "bc, linear (hidden = 0)": ("bc_linear", "bc", "agent.bc.hidden=0"),
    "rwbc, beta = 0 (= bc)": ("rwbc_beta0", "rwbc", "agent.rwbc.beta=0"),
    "learned_reward, immediate reward": (
        "learned_reward_myopic",
        "learned_reward",
        "agent.learned_reward.target=reward",
    ),
    "iql, expectile 0.5": ("iql_expectile05", "iql", "agent.iql.expectile=0.5"),
}
PROTOCOL = ["preset=canonical", "--quiet"]
#: the dose-finding study has several hundred cells: 100 evaluation episodes each rather
#: than the family's 480 keep its committed cell files small (wider per-task intervals),
#: and no null worlds (2,000 per cell would take about five times as long)
EVAL_EPISODES = {"trial_design": ["protocol.eval_episodes=100", "protocol.null_episodes=0"]}


def cli(*args: str) -> None:
    try:
        app(list(args), prog_name="offline_study", standalone_mode=False)
    except SystemExit as exc:  # typer exits 0 on success
        if exc.code:
            raise


def create_datasets() -> None:
    for _, name, args, _, _ in STUDIES.values():
        if not (DATA / name).exists():
            cli(
                "dataset",
                "create",
                "--name",
                name,
                *args,
                "--agents",
                ",".join(ONLINE),
                "--noise",
                "0.1",
                "--seed",
                "0",
                "--data-dir",
                str(DATA),
                "--quiet",
            )


def sweep(study: str, fresh: bool) -> None:
    family, name, _, splits, tasks = STUDIES[study]
    folder = OUT / study
    cli(
        "sweep",
        *PROTOCOL,
        *EVAL_EPISODES.get(family, []),
        f"env={family}",
        *tasks,
        "--agents",
        ",".join((*ONLINE, *OFFLINE)),
        "--dataset",
        name,
        "--split",
        ",".join(splits),
        "--data-dir",
        str(DATA),
        "--results",
        folder.as_posix(),
        "--no-report",
        *(["--no-resume"] if fresh else []),
    )
    cli("report", "--results", folder.as_posix(), "--reproducible")


def ablation(label: str, family: str, fresh: bool) -> None:
    folder, agent, override = ABLATIONS[label]
    cli(
        "sweep",
        *PROTOCOL,
        *EVAL_EPISODES.get(family, []),
        f"env={family}",
        *STUDIES[family].sweep_args,
        "--agents",
        agent,
        "--dataset",
        STUDIES[family].dataset,
        "--data-dir",
        str(DATA),
        "--results",
        (OUT / "ablations" / f"{folder}_{family}").as_posix(),
        "--no-report",
        override,
        *(["--no-resume"] if fresh else []),
    )


def cell(values: np.ndarray) -> str:
    mean, lo, _ = t_interval(values)
    return f"{mean:.3f} ± {mean - lo:.3f}"


def table(study: str) -> str:
    frame = pd.read_csv(OUT / study / "sweep_results.csv")
    sources = [(a, frame[frame.agent == a]) for a in frame.agent.unique()]
    for label, (folder, agent, _) in ABLATIONS.items():
        path = OUT / "ablations" / f"{folder}_{study}" / "sweep_results.csv"
        if study in ABLATED and path.exists():
            ab = pd.read_csv(path)
            sources.append((label, ab[ab.agent == agent]))
    tasks = list(dict.fromkeys(frame.task))
    rows = ["| agent | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for label, rows_of in sources:
        per_seed = rows_of.groupby(["task", "seed"]).score.mean()
        rows.append(
            f"| {label} | " + " | ".join(cell(per_seed[t].to_numpy()) for t in tasks) + " |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", action="store_true", help="only print the tables")
    parser.add_argument("--fresh", action="store_true", help="recompute every cell (--no-resume)")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.table:
        create_datasets()
        for study in STUDIES:
            print(f"sweeping {study} -> {OUT / study}", file=sys.stderr)
            sweep(study, args.fresh)
        for family in ABLATED:
            for label in ABLATIONS:
                print(f"ablation {label} on {family}", file=sys.stderr)
                ablation(label, family, args.fresh)
    for study in STUDIES:
        print(f"\n### {study}\n\n{table(study)}")


if __name__ == "__main__":
    main()
