"""The committed hyper-parameter search: played on training worlds only, and the
configuration files hold what it chose."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from shared_helpers import load_script

from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "data" / "hparam_search" / "runs.csv"


def _search():
    return load_script(ROOT / "experiments" / "hparam_search.py")


def test_the_search_plays_held_out_training_worlds_only():
    search = _search()
    for family, tasks in search.TASKS.items():
        for task in tasks:
            worlds = search.held_out_worlds(family, task, search.WORLDS[family])
            assert all(TRAIN_SEED_LOW <= w < TRAIN_SEED_HIGH for w in worlds)
            assert len(set(worlds)) == len(worlds)


def test_the_search_is_complete_and_the_configs_hold_its_choice():
    search = _search()
    runs = pd.read_csv(RUNS)
    for agent in search.GRIDS:
        for tasks in search.TASKS.values():
            for task in tasks:
                got = runs[(runs.agent == agent) & (runs.task == task)]
                want = {json.dumps(c, sort_keys=True) for c in search.configurations(agent)}
                assert set(got.config) == want, (agent, task)
                assert (got.env_steps > 0).all()
    for agent, config in search.chosen(runs).items():
        defaults = OmegaConf.to_container(
            OmegaConf.load(ROOT / "clinbench/conf/agent" / f"{agent}.yaml")
        )
        for key, value in config.items():
            assert defaults[key] == pytest.approx(value), (agent, key)


def test_the_configs_hold_the_cheaper_updates_found_non_inferior():
    """``experiments/update_cost.py``: a cheaper setting is in the configuration file
    when it is non-inferior on every family, the former one otherwise; its verdict is
    scipy's one-sided t test against the margin on the same paired differences."""
    from scipy import stats

    cost = load_script(ROOT / "experiments" / "update_cost.py")
    runs = pd.read_csv(RUNS.parent / "update_cost.csv")
    verdicts = cost.non_inferiority(runs)
    for r in verdicts.itertuples():
        rows = cost.current(runs)
        rows = rows[(rows.agent == r.agent) & (rows.family == r.family)]
        wide = rows.pivot_table(index=["task", "seed"], columns="setting", values="score")
        diff = wide["cheaper"] - wide["former"]
        assert len(diff) == r.pairs == len(cost.SEEDS) * len(cost.FAMILIES[r.family])
        test = stats.ttest_1samp(diff, -cost.MARGIN, alternative="greater")
        assert r.non_inferior == (test.pvalue < 0.05), (r.agent, r.family)
    for agent, (former, cheaper) in cost.COMPARISONS.items():
        adopted = verdicts[verdicts.agent == agent].non_inferior.all()
        defaults = OmegaConf.to_container(
            OmegaConf.load(ROOT / "clinbench/conf/agent" / f"{agent}.yaml")
        )
        for key, value in (cheaper if adopted else former).items():
            assert defaults[key] == value, (agent, key)
