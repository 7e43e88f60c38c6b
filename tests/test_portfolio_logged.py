"""The sponsors' logged decisions as a Minari dataset (``clinbench dataset logged``):
date-gated observations, actions equal to the offline task's labels, rewards that pay
each program's net value once, determinism and clear errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.env.portfolio.logged import build_logged
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.logged import digest
from clinbench.offline import available

runner = CliRunner(env={"COLUMNS": "200"})
needs_minari = pytest.mark.skipif(not available(), reason="needs the offline extra (minari)")


@pytest.fixture(scope="module")
def logged():
    return build_logged(20, 3)


def test_each_program_is_an_episode_of_its_decision_dates(logged):
    data = build_dataset(TASKS["develop"], 3, 20)
    assert sum(len(t.actions) for t in logged.trajectories) == len(data.episodes)
    by_program = {t.metadata["program"]: t for t in logged.trajectories}
    for e in data.episodes:
        t = by_program[e.program_id]
        k = t.metadata["months"].index(e.month)
        chosen = {label for label, bit in zip(t.metadata["catalogue"], t.actions[k], strict=True)
                  if bit}
        assert chosen == {d.label for d in e.label}
        assert len(t.observations["text"]) == len(t.actions) + 1


def test_observations_up_to_a_decision_are_exactly_its_public_evidence(logged):
    data = build_dataset(TASKS["develop"], 3, 20)
    by_program = {t.metadata["program"]: t for t in logged.trajectories}
    for e in data.episodes:
        t = by_program[e.program_id]
        k = t.metadata["months"].index(e.month)
        shown = [r for step in t.observations["records"][: k + 1] for r in json.loads(step)]
        assert all(r["month"] <= e.month for r in shown)
        assert sorted(r["id"] for r in shown) == sorted(r.id for r in e.evidence)


def test_the_last_step_pays_the_programs_net_value():
    paper_size = build_logged(45, 0)  # the paper's size: some programs pay, most do not
    for t in paper_size.trajectories:
        assert np.all(t.rewards[:-1] == 0) and t.rewards[-1] == t.metadata["net_value"]
    assert any(t.rewards[-1] > 0 for t in paper_size.trajectories)
    assert any(t.rewards[-1] < 0 for t in paper_size.trajectories)


def test_the_same_seed_logs_the_same_data(logged):
    assert digest(build_logged(20, 3)) == digest(logged)
    assert digest(build_logged(20, 4)) != digest(logged)


@needs_minari
def test_the_cli_writes_a_minari_dataset_others_can_load(tmp_path, monkeypatch):
    import minari

    base = ["dataset", "logged", "--env", "portfolio", "--programs", "12", "--seed", "2",
            "--data-dir", str(tmp_path)]
    r = runner.invoke(app, [*base, "--name", "portfolio-logged-12-v0"])
    assert r.exit_code == 0, r.output
    monkeypatch.setitem(os.environ, "MINARI_DATASETS_PATH", str(tmp_path))
    ds = minari.load_dataset("portfolio-logged-12-v0")
    expected = build_logged(12, 2)
    assert ds.total_episodes == len(expected.trajectories)
    for ep, t in zip(ds.iterate_episodes(), expected.trajectories, strict=True):
        assert np.array_equal(ep.actions, t.actions) and np.allclose(ep.rewards, t.rewards)
        assert list(ep.observations["text"]) == t.observations["text"]
    meta = ds.storage.metadata["clinbench"]
    assert meta["family"] == "portfolio" and meta["digest"] == digest(expected)
    again = runner.invoke(app, [*base, "--name", "portfolio-logged-12-v0"])
    assert again.exit_code == 2 and "--force" in again.output
    bad = runner.invoke(app, [*base[:3], "nope", *base[4:], "--name", "x-v0"])
    assert bad.exit_code == 2 and "families with logged data: portfolio" in bad.output


@needs_minari
def test_an_offline_sweep_refuses_logged_decisions_and_list_and_info_show_them(tmp_path):
    r = runner.invoke(app, ["dataset", "logged", "--env", "portfolio", "--programs", "5",
                            "--data-dir", str(tmp_path), "--name", "pl-v0"])
    assert r.exit_code == 0, r.output
    listed = runner.invoke(app, ["dataset", "list", "--data-dir", str(tmp_path), "--json"])
    assert listed.exit_code == 0 and "logged decisions" in listed.output
    info = runner.invoke(app, ["dataset", "info", "pl-v0", "--data-dir", str(tmp_path)])
    assert info.exit_code == 0 and "programs / seed: 5 / 0" in info.output
    sweep = runner.invoke(app, ["sweep", "preset=smoke", "env=portfolio", "--agents", "bc",
                                "--dataset", "pl-v0", f"offline.data_dir={tmp_path}",
                                "--results", str(tmp_path / "r")])
    assert sweep.exit_code == 2 and "clinbench dataset create" in sweep.output
