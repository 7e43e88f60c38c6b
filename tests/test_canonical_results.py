"""The committed results were computed by the code in this checkout.

A cell's hash covers the code that runs it, so results of other code would not be
resumed by `clinbench sweep`; this test fails when the environment, agents or protocol
change without the canonical run (and the ablations) being recomputed. CI separately
checks that the committed report and charts are what the code renders from them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinbench.evaluation_key import PUBLIC
from clinbench.sweep.cells import code_id

ROOT = Path(__file__).resolve().parents[1]
RUNS = [
    ROOT / "data" / "sweep_results",
    *sorted((ROOT / "data" / "ablations").glob("*")),
    *sorted((ROOT / "data" / "long_budget").glob("*")),
    *sorted(p for p in (ROOT / "data" / "offline_study").glob("*") if p.name != "ablations"),
    *sorted((ROOT / "data" / "offline_study" / "ablations").glob("*")),
]


@pytest.mark.parametrize("folder", RUNS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_committed_runs_come_from_this_code(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    code = {env: code_id(env) for env in manifest["code"]}
    assert manifest["code"] == code, (
        f"{folder} was computed by cell code {manifest['code']}, this checkout is {code}: "
        "rerun `clinbench sweep preset=canonical --no-resume` (and `python "
        "experiments/ablations.py --fresh`, `python experiments/offline_study.py --fresh`)"
    )
    assert manifest["counts"]["failed"] == 0
    assert all(c["status"] == "ok" for c in manifest["cells"])
    for cell in manifest["cells"]:
        assert (folder / "runs" / f"{cell['hash']}.json").exists()


def test_canonical_run_is_the_default_protocol():
    manifest = json.loads((ROOT / "data" / "sweep_results" / "manifest.json").read_text())
    assert manifest["grid"]["seeds"] == [1, 7, 21, 42, 123]
    assert manifest["grid"]["agents"] == [
        "heuristic",
        "random",
        "hcapo",
        "mira",
        "klong",
        "memexrl",
        "fixed_design",
        "repeat_last",
    ]
    assert manifest["grid"]["envs"] == ["recruitment", "trial_design", "portfolio"]
    assert manifest["protocol"] == {
        "train_steps": None,
        "budget_scale": 1,
        "train_steps_by_family": {
            "recruitment": 108_000,
            "trial_design": 3_000,
            "portfolio": 9_000,
        },
        "eval_episodes": None,
        "eval_episodes_by_family": {"recruitment": 40, "trial_design": 480, "portfolio": 480},
        "curve_episodes": None,
        "curve_episodes_by_family": {"recruitment": 5, "trial_design": 50, "portfolio": 20},
        "select_checkpoint": True,
        "curve_points": 21,
        "oc_episodes": 200,
        "null_episodes": 2000,
    }
    assert manifest["evaluation"] == {
        "mode": "public",
        "commitment": PUBLIC.commitment,
        "isolated_agents": False,
    }


def test_the_canonical_preset_describes_the_committed_run():
    from omegaconf import OmegaConf

    manifest = json.loads((ROOT / "data" / "sweep_results" / "manifest.json").read_text())
    preset = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "preset" / "canonical.yaml"))
    assert preset["agents"] == manifest["grid"]["agents"]
    assert preset["protocol"]["seeds"] == manifest["grid"]["seeds"]
    set_by_preset = {k: v for k, v in preset["protocol"].items() if k != "seeds"}
    assert set_by_preset == {k: manifest["protocol"][k] for k in set_by_preset}


@pytest.mark.parametrize(
    "folder",
    sorted((ROOT / "data" / "long_budget").glob("*")),
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_a_long_budget_run_is_the_canonical_protocol_with_ten_times_the_steps(folder):
    """``preset=long`` on the canonical seeds: each family's training budget 10 times the
    canonical run's, the same evaluation, validation and checkpoint protocol; scores
    only (no operating-characteristic episodes or null worlds)."""
    canonical = json.loads((ROOT / "data" / "sweep_results" / "manifest.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    long, base = manifest["protocol"], canonical["protocol"]
    assert manifest["grid"]["seeds"] == canonical["grid"]["seeds"]
    assert manifest["evaluation"] == canonical["evaluation"]
    assert long["budget_scale"] == 10 and base["budget_scale"] == 1
    families = long["train_steps_by_family"]
    assert families and all(
        steps == 10 * base["train_steps_by_family"][family] for family, steps in families.items()
    )
    for key in ("eval_episodes_by_family", "curve_episodes_by_family"):
        assert long[key] == {f: base[key][f] for f in families}
    for key in ("curve_points", "select_checkpoint", "train_steps", "eval_episodes"):
        assert long[key] == base[key]
    assert long["oc_episodes"] == long["null_episodes"] == 0


@pytest.mark.parametrize("folder", RUNS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_committed_cells_come_from_their_agent_s_code(folder):
    """Each cell records its agent's code identity: a built-in's own modules (not the
    family's cell code, so editing one agent re-runs its cells only), an entry-point
    agent's package (the offline agents, sb3). One cell per agent is read."""
    from clinbench.agents.registry import AgentLoadError, agent_entry

    manifest = json.loads((folder / "manifest.json").read_text())
    first = {cell["agent"]: cell for cell in reversed(manifest["cells"])}
    for agent, cell in sorted(first.items()):
        record = json.loads((folder / "runs" / f"{cell['hash']}.json").read_text())
        try:
            entry = agent_entry(record["config"]["agent_ref"])
        except AgentLoadError:
            continue
        if entry.unavailable:  # an extra not installed here (sb3): nothing to compare
            continue
        assert entry.code == record["config"]["agent_code"], (
            f"{folder.name}: {agent} was computed by {record['config']['agent_code']!r}, "
            f"this checkout has {entry.code!r}: rerun the sweep that wrote {folder}"
        )
