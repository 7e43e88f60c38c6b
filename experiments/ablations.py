"""The ablations of the learning agents, each a sweep, and their table for docs/agents.md.

    python experiments/ablations.py            # runs (or resumes) every ablation sweep
    python experiments/ablations.py --table    # only prints the Markdown table

Each ablation collapses a method towards its parent (``docs/agents.md``) and runs on
the canonical protocol (seeds 1 7 21 42 123, default budget) over the recruitment tasks
(where every ablated component exists: memory actions, horizons of 180 days) into
``data/ablations/<name>/``, next to the full methods in ``data/sweep_results/``. One
runs on the trial_design tasks: mira with the milestone shaping of the recruitment
default (lambda = 1), the evidence behind its trial_design default of 0. Its
operating characteristics are left out (``protocol.oc_episodes=0``,
``protocol.null_episodes=0``): the table compares scores only.

Beside them, the reference learner ``maskable_ppo`` (stable-baselines3, the ``sb3``
extra) at the same budget in environment steps: on the three recruitment tasks (a
cell of it costs about 110 to 140 s there), the three trial tasks (scores only) and the
two portfolio tasks. Each learner's "reaches maskable_ppo at equal steps" is read
against these rows.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
#: label -> (results folder name, agent, overrides); recruitment unless in ``ENVS``
ABLATIONS = {
    "grpo (hcapo with omega = 0)": ("grpo", "grpo", ["agent.grpo.minibatch=64"]),
    # the GRPO core's outcome advantage swapped for GAE on a ridge value (a plugin:
    # experiments/ablation_agents/grpo_gae/): hcapo and memexrl against maskable_ppo
    # (docs/agents.md, grpo)
    "grpo, GAE advantages": ("grpo_gae", "grpo_gae", ["agent.grpo_gae.minibatch=64"]),
    "mira, lambda = 0": ("mira_lambda0", "mira", ["agent.mira.lam=0"]),
    # mira against maskable_ppo (docs/agents.md, mira): its three main choices that
    # differ from stable-baselines3's PPO, in every combination: the number of phases
    # (six, or 36 of 3,000 steps each, nearer stable-baselines3's update every 2,048
    # steps; the buffer of two phases then holds 6,000 steps), the advantage (mira's
    # critics as they are, the same standardised over the update's steps with a
    # plugin, experiments/ablation_agents/mira_standardised/, or GAE on a ridge value of
    # the return) and the actor (the regression, or PPO-clip with stable-baselines3's
    # schedule)
    "mira, 36 phases": ("mira_36_phases", "mira", ["agent.mira.phases=36"]),
    "mira, standardised advantages": ("mira_standardised", "mira_standardised", []),
    "mira, standardised advantages, 36 phases": (
        "mira_standardised_36_phases",
        "mira_standardised",
        ["agent.mira_standardised.phases=36"],
    ),
    "mira, GAE advantages": ("mira_gae_regression", "mira", ["agent.mira.advantage=gae"]),
    "mira, GAE advantages, 36 phases": (
        "mira_gae_regression_36_phases",
        "mira",
        ["agent.mira.advantage=gae", "agent.mira.phases=36"],
    ),
    "mira, PPO actor": ("mira_ppo_actor", "mira", ["agent.mira.actor=ppo"]),
    "mira, PPO actor, 36 phases": (
        "mira_ppo_actor_36_phases",
        "mira",
        ["agent.mira.actor=ppo", "agent.mira.phases=36"],
    ),
    "mira, PPO actor, standardised advantages": (
        "mira_ppo_standardised",
        "mira_standardised",
        ["agent.mira_standardised.actor=ppo"],
    ),
    "mira, PPO actor, standardised advantages, 36 phases": (
        "mira_ppo_standardised_36_phases",
        "mira_standardised",
        ["agent.mira_standardised.actor=ppo", "agent.mira_standardised.phases=36"],
    ),
    "mira, PPO actor, GAE advantages": (
        "mira_gae",
        "mira",
        ["agent.mira.actor=ppo", "agent.mira.advantage=gae"],
    ),
    "mira, PPO actor, GAE advantages, 36 phases": (
        "mira_gae_36_phases",
        "mira",
        ["agent.mira.actor=ppo", "agent.mira.advantage=gae", "agent.mira.phases=36"],
    ),
    "klong, imitation only": ("klong_imitation_only", "klong", ["agent.klong.rl=false"]),
    "klong, no stages": ("klong_no_stages", "klong", ["agent.klong.stages=[180]"]),
    "memexrl, memory masked": (
        "memexrl_memory_masked",
        "memexrl",
        ["agent.memexrl.mask_memory=true"],
    ),
    # memexrl with the GRPO update's former full-batch schedule (grpo's default): the
    # optimiser schedule the search changed, alone (docs/agents.md, grpo)
    "memexrl, full-batch updates": (
        "memexrl_full_batch",
        "memexrl",
        ["agent.memexrl.minibatch=0"],
    ),
    "mira, lambda = 1": (
        "mira_lambda1_trial",
        "mira",
        ["agent.mira.lam=1", "protocol.oc_episodes=0", "protocol.null_episodes=0"],
    ),
    # The reference learner at the same budget in steps (needs the `sb3` extra): what
    # "reaches maskable_ppo" is measured against, on every task.
    "maskable_ppo (stable-baselines3)": ("maskable_ppo_recruitment", "maskable_ppo", []),
    "maskable_ppo (stable-baselines3), trial": (
        "maskable_ppo_trial",
        "maskable_ppo",
        ["protocol.oc_episodes=0", "protocol.null_episodes=0"],
    ),
    # portfolio planning, where hcapo is the only in-house learner: the reference
    # learner and the GRPO core with GAE at the same 9,000 steps
    "maskable_ppo (stable-baselines3), portfolio": (
        "maskable_ppo_portfolio",
        "maskable_ppo",
        [],
    ),
    "grpo, GAE advantages, portfolio": (
        "grpo_gae_portfolio",
        "grpo_gae",
        ["agent.grpo_gae.minibatch=64"],
    ),
}
#: agents swept from a file of experiments/ablation_agents/ (their spec, from the root;
#: a folder each: a file plugin's code identity covers the modules loaded from its folder)
PLUGINS = {
    "grpo_gae": "experiments/ablation_agents/grpo_gae/grpo_gae.py:GRPOGAE",
    "mira_standardised": (
        "experiments/ablation_agents/mira_standardised/mira_standardised.py:MIRAStandardised"
    ),
}
#: the environment family of the ablations that do not run on recruitment
ENVS = {
    "mira, lambda = 1": "trial_design",
    "maskable_ppo (stable-baselines3), trial": "trial_design",
    "maskable_ppo (stable-baselines3), portfolio": "portfolio",
    "grpo, GAE advantages, portfolio": "portfolio",
}
#: the tasks of each family's table
TASKS = {
    "recruitment": ("easy_bench", "medium_bench", "hard_bench"),
    "trial_design": ("effective_drug", "efficacy_safety", "rare_disease"),
    "portfolio": ("develop", "develop_post_cutoff"),
}


def folder(label: str) -> Path:
    """The results folder, relative to the repository root (recorded in config.yaml)."""
    return Path("data") / "ablations" / ABLATIONS[label][0]


def run(label: str, fresh: bool = False) -> None:
    _, agent, overrides = ABLATIONS[label]
    args = [
        "sweep",
        f"env={ENVS.get(label, 'recruitment')}",
        "--agents",
        PLUGINS.get(agent, agent),
        "--results",
        folder(label).as_posix(),
        "--no-report",
        "--quiet",
        *overrides,
    ]
    if fresh:
        args.append("--no-resume")
    # each sweep in a process of its own: a file plugin's code identity covers the
    # modules loaded from its folder, so one plugin must not see another one loaded
    subprocess.run([sys.executable, "-m", "clinbench.cli.app", *args], check=True)


def cell(values: np.ndarray) -> str:
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return f"{values.mean():.3f} ± {half:.3f}"


def table(env: str) -> str:
    """The Markdown table of ``env``'s tasks: the baselines, then its ablations."""
    tasks = TASKS[env]
    rows = ["| agent | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    sources = [
        (a, Path("data") / "sweep_results", a)
        for a in ("heuristic", "random", "repeat_last", "hcapo", "mira", "klong", "memexrl")
    ]
    sources += [
        (label, folder(label), agent)
        for label, (_, agent, _) in ABLATIONS.items()
        if ENVS.get(label, "recruitment") == env
    ]
    for label, path, agent in sources:
        frame = pd.read_csv(path / "sweep_results.csv")
        frame = frame[frame.agent == agent]
        per_seed = frame.groupby(["task", "seed"]).score.mean()
        run = set(frame.task)
        if not run & set(tasks):  # an agent that does not play this family
            continue
        rows.append(
            f"| {label.removesuffix(', trial').removesuffix(', portfolio')} | "
            + " | ".join(cell(per_seed[t].to_numpy()) if t in run else "not run" for t in tasks)
            + " |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--fresh", action="store_true", help="recompute every cell (--no-resume)")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.table:
        for label in ABLATIONS:
            print(f"running {label} -> {folder(label)}", file=sys.stderr)
            run(label, args.fresh)
    print("\n\n".join(table(env) for env in TASKS))


if __name__ == "__main__":
    main()
