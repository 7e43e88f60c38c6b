"""Cheaper updates, tested for non-inferiority on training worlds only.

    python experiments/update_cost.py            # run (or resume) every comparison
    python experiments/update_cost.py --table    # only print the Markdown table

A learner's update may cost most of its cell (klong's cloning: 150 full-batch Adam
steps over about 40,000 rows of teacher windows on recruitment). Each comparison trains
an agent with its former setting and with a cheaper one from the training streams of
five search seeds (not canonical seeds) on every task of a family, and scores both
greedily on the search's held-out *training* worlds (``hparam_search.held_out_worlds``:
neither evaluation nor validation worlds are played). The cheaper setting is adopted
when it is non-inferior at margin ``MARGIN``: the one-sided 95 % lower bound (t, over
the family's (task, seed) pairs) of the paired difference cheaper - former lies above
``-MARGIN``. Each run's CPU seconds are kept beside its score.

Rows go to ``data/hparam_search/update_cost.csv`` (resumable), the table to
``update_cost.md``; ``tests/test_hparam_search.py`` checks that the configuration files
hold every adopted setting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import clinbench  # noqa: F401  first: it pins the BLAS kernel before numpy loads

# isort: split
import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hparam_search  # the same held-out worlds and training runs

OUT = hparam_search.OUT
SEEDS = (1001, 1002, 1003, 1004, 1005)
MARGIN = 0.03
#: agent -> (former setting, cheaper setting). klong's pair is the agent before and
#: after this change as a whole: its cloning and the GRPO batch the search then chose
#: with it (a comparison of the cloning alone, at groups 4 on both sides, stays in the
#: CSV with its configurations: +0.007, bound -0.008 on recruitment; -0.003, bound
#: -0.017 on trial_design).
COMPARISONS: dict[str, tuple[dict, dict]] = {
    "klong": (
        {"imitation_steps": 150, "imitation_batch": 0, "groups": 4},
        {"imitation_steps": 300, "imitation_batch": 4096, "groups": 1},
    ),
    "hcapo": ({"hindsight_rows": 3000}, {"hindsight_rows": 1500}),
    "mira": ({"buffer_phases": 2}, {"buffer_phases": 1}),
}
#: the tasks of each family an agent plays (portfolio: its online task)
FAMILIES = {
    "recruitment": ["easy_bench", "medium_bench", "hard_bench"],
    "trial_design": ["effective_drug", "efficacy_safety", "rare_disease"],
    "portfolio": ["develop"],
}


def families(agent: str) -> list[str]:
    from clinbench.agents.registry import agent_entry

    plays = agent_entry(agent).envs
    return [f for f in FAMILIES if "*" in plays or f in plays]
COLUMNS = ["agent", "setting", "family", "task", "seed", "config", "score", "cpu_seconds"]


def run_one(agent: str, setting: str, family: str, task: str, seed: int, config: dict) -> dict:
    start = time.process_time()
    row = hparam_search.run_one(agent, family, task, seed, config)
    return {
        "agent": agent,
        "setting": setting,
        "family": family,
        "task": task,
        "seed": seed,
        "config": json.dumps(config, sort_keys=True),
        "score": row["score"],
        "cpu_seconds": time.process_time() - start,
    }


def current(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of the comparisons in :data:`COMPARISONS` (earlier ones keep their rows
    in the CSV, with their configurations)."""
    wanted = {
        (agent, setting, json.dumps(config, sort_keys=True))
        for agent, pair in COMPARISONS.items()
        for setting, config in zip(("former", "cheaper"), pair, strict=True)
    }
    keys = zip(runs.agent, runs.setting, runs.config, strict=True)
    return runs[[k in wanted for k in keys]]


def non_inferiority(runs: pd.DataFrame) -> pd.DataFrame:
    """Per agent and family: mean scores, the paired difference (cheaper - former) with
    its one-sided 95 % lower bound, CPU seconds per run, and the verdict."""
    runs = current(runs)
    out = []
    for (agent, family), rows in runs.groupby(["agent", "family"], sort=True):
        if rows.duplicated(["setting", "task", "seed"]).any():
            raise ValueError(f"{agent} on {family}: a (setting, task, seed) has two runs")
        wide = rows.pivot_table(index=["task", "seed"], columns="setting", values="score")
        wide = wide.dropna()
        diff = (wide["cheaper"] - wide["former"]).to_numpy()
        n = diff.size
        se = diff.std(ddof=1) / np.sqrt(n) if n > 1 else np.inf
        bound = diff.mean() - stats.t.ppf(0.95, n - 1) * se if n > 1 else -np.inf
        cpu = rows.groupby("setting")["cpu_seconds"].mean()
        out.append(
            {
                "agent": agent,
                "family": family,
                "pairs": n,
                "former": wide["former"].mean(),
                "cheaper": wide["cheaper"].mean(),
                "difference": diff.mean(),
                "lower_bound": bound,
                "cpu_former": cpu.get("former", np.nan),
                "cpu_cheaper": cpu.get("cheaper", np.nan),
                "non_inferior": bool(bound > -MARGIN),
            }
        )
    return pd.DataFrame(out)


def table(runs: pd.DataFrame) -> str:
    lines = [
        (
            f"Non-inferiority at margin {MARGIN} (one-sided 95 % t bound of the paired "
            "difference over tasks x seeds), held-out training worlds."
        ),
        "",
        "| agent | family | former -> cheaper | difference | lower bound | CPU s per run"
        + " | non-inferior |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in non_inferiority(runs).itertuples():
        former, cheaper = (json.dumps(c, sort_keys=True) for c in COMPARISONS[r.agent])
        lines.append(
            f"| {r.agent} | {r.family} | {r.former:.3f} -> {r.cheaper:.3f} | "
            f"{r.difference:+.3f} | {r.lower_bound:+.3f} | {r.cpu_former:.1f} -> "
            f"{r.cpu_cheaper:.1f} | {'yes' if r.non_inferior else 'no'} |"
        )
    lines += ["", "Settings (former -> cheaper):", ""]
    for agent, (former, cheaper) in COMPARISONS.items():
        lines.append(f"- {agent}: `{json.dumps(former)}` -> `{json.dumps(cheaper)}`")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "update_cost.csv"
    if not args.table:
        done = set()
        if path.exists():
            old = pd.read_csv(path)
            columns = ["agent", "setting", "task", "seed", "config"]
            done = set(old[columns].itertuples(index=False, name=None))
        todo = [
            (agent, setting, family, task, seed, config)
            for agent, pair in COMPARISONS.items()
            for family in families(agent)
            for task in FAMILIES[family]
            for seed in SEEDS
            for setting, config in zip(("former", "cheaper"), pair, strict=True)
            if (agent, setting, task, seed, json.dumps(config, sort_keys=True)) not in done
        ]
        hparam_search.append_runs(
            path, COLUMNS, run_one, todo, args.jobs,
            lambda row: (
                f"{row['agent']} {row['setting']} {row['task']} {row['seed']}: "
                f"{row['score']:.3f} ({row['cpu_seconds']:.1f} s)"
            ),
        )
    runs = pd.read_csv(path)
    text = table(runs)
    print(text)
    (OUT / "update_cost.md").write_text(text + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
