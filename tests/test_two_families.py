"""One sweep over both environment families: what the generic layers do with them.

An agent runs only on the families it plays, the report takes each task's references
from its family and gives each family its own aggregate and confirmatory family (an
agent that plays one family appears only in that family's), the operating
characteristics appear for the family that declares them (with exact binomial
intervals, checked against statsmodels), and each family's domain charts are drawn.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from clinbench.config import load
from clinbench.sweep import run_sweep
from clinbench.sweep.cells import expand

TASKS = "tasks=[easy_bench,effective_drug]"
AGENTS = "agents=[heuristic,random,fixed_design,hcapo]"


@pytest.fixture(scope="module")
def both(tmp_path_factory, invoke_module):
    folder = tmp_path_factory.mktemp("both") / "results"
    cfg = load(["preset=smoke", TASKS, AGENTS, f"results={folder}", "launcher=sequential"])
    outcome = run_sweep(cfg, show_progress=False)
    assert outcome.ok, outcome.failed
    result = invoke_module("report", "--results", str(folder), "--reproducible")
    assert result.exit_code == 0, result.output
    return cfg, folder, json.loads((folder / "benchmark_report.json").read_text())


@pytest.fixture(scope="module")
def invoke_module():
    from typer.testing import CliRunner

    from clinbench.cli.app import app

    runner = CliRunner(env={"COLUMNS": "200"})
    return lambda *args: runner.invoke(app, list(args))


def test_agents_run_only_on_the_families_they_play(both):
    cfg, folder, _ = both
    cells = {(c.task, c.agent) for c in expand(cfg)}
    assert ("easy_bench", "fixed_design") not in cells
    assert ("effective_drug", "fixed_design") in cells
    assert {c.env for c in expand(cfg) if c.task == "effective_drug"} == {"trial_design"}
    frame = pd.read_csv(folder / "sweep_results.csv")
    assert set(frame[frame.task == "easy_bench"].agent) == {"heuristic", "random", "hcapo"}
    # each family's metrics are columns, empty for the other family's rows
    assert frame.loc[frame.task == "easy_bench", "claimed"].isna().all()
    assert frame.loc[frame.task == "effective_drug", "net_enrolled"].isna().all()


def test_report_uses_each_familys_references_and_versions(both):
    rep = both[2]
    p = rep["protocol"]
    assert p["task_envs"] == {"easy_bench": "recruitment", "effective_drug": "trial_design"}
    assert p["task_version"] == {"recruitment": 2, "trial_design": 2}
    from clinbench.references.recruitment_scores import REFERENCE_SCORES as R
    from clinbench.references.trial_design_scores import REFERENCE_SCORES as T

    assert p["references"] == {"easy_bench": R["easy_bench"], "effective_drug": T["effective_drug"]}
    assert list(rep["per_task"]["easy_bench"]) == ["heuristic", "random", "hcapo"]
    # one aggregate and one confirmatory family per environment family, none across them
    aggs = rep["aggregates"]
    assert list(aggs) == ["recruitment", "trial_design"] and rep["cross_family"] == {}
    assert set(aggs["recruitment"]["agents"]) == {"heuristic", "random", "hcapo"}
    assert set(aggs["trial_design"]["agents"]) == {"heuristic", "random", "fixed_design", "hcapo"}
    confirmatory = {f["name"]: f for f in rep["families"] if f["role"] == "confirmatory"}
    assert {k: f["m"] for k, f in confirmatory.items()} == {"recruitment": 3, "trial_design": 6}
    # a task's exploratory family holds only pairs with cells on it: no fixed_design there
    easy = next(f for f in rep["families"] if f["name"] == "easy_bench")
    assert easy["m"] == 3 and all("fixed_design" not in m for m in easy["members"])


def test_operating_characteristics_match_statsmodels_on_their_episodes(both):
    from statsmodels.stats.proportion import proportion_confint

    cfg, folder, rep = both
    oc = rep["operating_characteristics"]
    assert list(oc) == ["effective_drug"]  # recruitment declares none
    rows = oc["effective_drug"]["agents"]
    assert set(rows) == {"heuristic", "random", "fixed_design", "hcapo"}
    for agent, row in rows.items():
        metrics, k, n = [], 0, 0
        for path in sorted((folder / "runs").glob("*.json")):
            record = json.loads(path.read_text())
            if record["key"]["task"] == "effective_drug" and record["key"]["agent"] == agent:
                assert len(record["oc_metrics"]) == cfg.protocol.oc_episodes
                metrics += record["oc_metrics"]
                # the type-I error comes from the cell's own null worlds, all null
                counts = record["null_counts"]
                assert counts["n"] == counts["null_world"] == cfg.protocol.null_episodes
                k, n = k + int(counts["claimed"]), n + int(counts["n"])
        c = row["type_i_error"]
        assert (c["k"], c["n"]) == (k, n)
        lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
        assert (c["lo"], c["hi"]) == pytest.approx((lo, hi), abs=1e-12)
        good = [m for m in metrics if m["good_world"] == 1]
        assert row["power"]["n"] == len(good)
        assert row["power"]["k"] == int(sum(m["correct_claim"] for m in good))
    md = (folder / "benchmark_report.md").read_text()
    assert "## Operating characteristics" in md and "P(claim \\| null drug)" in md


def test_each_trained_policy_has_its_own_rates(both):
    """A learning agent is a different policy at each seed: its rates are not pooled."""
    from statsmodels.stats.proportion import proportion_confint

    cfg, folder, rep = both
    policies = rep["operating_characteristics"]["effective_drug"]["policies"]
    assert set(policies) == {"hcapo"}  # the only agent trained per seed here
    assert sorted(map(int, policies["hcapo"])) == sorted(cfg.protocol.seeds)
    for path in sorted((folder / "runs").glob("*.json")):
        record = json.loads(path.read_text())
        k = record["key"]
        if k["task"] != "effective_drug" or k["agent"] != "hcapo":
            continue
        counts = record["null_counts"]
        c = policies["hcapo"][str(k["seed"])]["type_i_error"]
        assert (c["k"], c["n"]) == (int(counts["claimed"]), cfg.protocol.null_episodes)
        lo, hi = proportion_confint(c["k"], c["n"], alpha=0.05, method="beta")
        assert (c["lo"], c["hi"]) == pytest.approx((lo, hi), abs=1e-12)
    md = (folder / "benchmark_report.md").read_text()
    assert "Each trained policy on its own" in md


def test_each_familys_domain_charts_are_drawn(both):
    _, folder, _ = both
    names = {p.name for p in (folder / "charts").iterdir()}
    assert {"enrollment_trajectories.svg", "operating_characteristics.png"} <= names
