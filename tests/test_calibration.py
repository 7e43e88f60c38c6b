"""Calibration properties of the recruitment tasks.

That policies enrolling nobody score exactly 0 is tested, on the same seeds, with the
regressions of the reference benchmark (tests/test_recruitment_regressions.py).
"""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from shared_helpers import clinbench_sources_run, load_script

import clinbench
from clinbench.agents.context import AgentContext
from clinbench.agents.reference_planner import ReferencePlanner
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.recruitment import TASKS
from clinbench.episode import play_episode
from clinbench.evaluation_key import PUBLIC
from clinbench.protocol import EVALUATION, acting_seeds

REPO = Path(clinbench.__file__).resolve().parents[1]
REFERENCE_SCRIPT = REPO / "experiments" / "compute_reference_scores.py"
CALIBRATION_SEEDS = tuple(range(500, 530))
TASK_NAMES = tuple(TASKS)
MIN_PLANNER_ENROLMENT = {"easy_bench": 0.9, "medium_bench": 0.7, "hard_bench": 0.5}


@cache
def _episodes(task, agent_name):
    env = make(f"recruitment/{task}")
    agent = (
        ReferencePlanner(AgentContext.of(env), world=lambda: env.world)
        if agent_name == "planner"
        else make_agent(agent_name, AgentContext.of(env))
    )
    env_id = f"recruitment/{task}"
    return [
        play_episode(
            env, agent, s, agent_seed=acting_seeds(PUBLIC, s, agent_name, env_id, EVALUATION, 1)[0]
        )
        for s in CALIBRATION_SEEDS
    ]


@pytest.mark.parametrize("task", TASK_NAMES)
def test_reference_planner_reaches_the_enrolment_floor(task):
    eps = _episodes(task, "planner")
    enrolment = np.mean([e.score_parts["enrolment"] for e in eps])
    assert enrolment >= MIN_PLANNER_ENROLMENT[task]


@pytest.mark.parametrize("task", TASK_NAMES)
def test_heuristic_beats_random_by_more_than_three_standard_errors(task):
    h = np.array([e.score for e in _episodes(task, "heuristic")])
    r = np.array([e.score for e in _episodes(task, "random")])
    se = np.sqrt(h.var(ddof=1) / h.size + r.var(ddof=1) / r.size)
    assert h.mean() - r.mean() > 3.0 * se


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("agent", ["random", "heuristic", "planner"])
def test_return_equals_score_on_every_episode(task, agent):
    for ep in _episodes(task, agent):
        assert abs(ep.ret - ep.score) <= 1e-12
        assert 0.0 <= ep.score <= 1.0


def test_stored_references_come_from_today_s_code():
    """Each family's constants carry the code identity that computed them: an edit to
    any source the computation runs (traced below) fails this until they are
    recomputed. CI recomputes the numbers themselves (next test)."""
    import importlib

    from clinbench.env.registry import family
    from clinbench.references import REFERENCE_WORLDS, reference_code

    module = load_script(REFERENCE_SCRIPT)
    assert module.with_references() == ["recruitment", "trial_design", "portfolio"]
    for name in module.with_references():
        stored = importlib.import_module(family(name).references)
        assert stored.CODE == reference_code(name), f"{name}: run {REFERENCE_SCRIPT.name}"
        assert f"CODE = {stored.CODE!r}" in module.target(name).read_text()
        assert {ref["worlds"] for ref in stored.REFERENCE_SCORES.values()} == {REFERENCE_WORLDS}


def test_ci_recomputes_the_stored_references():
    """A command line of its own (``set -e``: its failure fails CI), after the tests."""
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert "set -euo pipefail" in lines
    check = "python experiments/compute_reference_scores.py --check --jobs 2"
    assert check in lines and lines.index(check) > lines.index(
        next(line for line in lines if "python -m pytest" in line)
    )


@pytest.mark.parametrize("name", ["recruitment", "trial_design", "portfolio"])
def test_computing_the_references_runs_only_identified_code(name):
    """The profiler sees every clinbench function the computation calls; each must be
    in :func:`reference_code_files`, so ``CODE`` moves with any of them."""
    import importlib

    from clinbench.env.registry import env_ids, spec
    from clinbench.references import reference_code_files, reference_scores, reference_seeds

    planner = importlib.import_module(f"clinbench.references.{name}").PLANNER
    env_id = next(i for i in env_ids() if spec(i).env == name)
    reference_scores(env_id, planner, reference_seeds(2))  # imports, outside the count
    executed = clinbench_sources_run(
        lambda: reference_scores(env_id, planner, reference_seeds(2))
    )
    assert f"references/{name}.py" in executed and any(
        f.startswith(f"env/{name}/") for f in executed
    )
    assert executed - set(reference_code_files(name)) - {"agents/registry.py"} == set()


def test_the_script_computes_the_same_modules_with_two_jobs(tmp_path):
    """``--jobs 2`` (worker processes) writes the bytes one process renders."""
    done = subprocess.run(
        [
            sys.executable,
            str(REFERENCE_SCRIPT),
            "--family",
            "portfolio",
            "--seeds-count",
            "3",
            "--jobs",
            "2",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    module = load_script(REFERENCE_SCRIPT)
    assert (tmp_path / "portfolio_scores.py").read_text() == module.render("portfolio", 3)
    stale = (tmp_path / "portfolio_scores.py").read_text().replace("'worlds': 3", "'worlds': 4")
    (tmp_path / "portfolio_scores.py").write_text(stale)
    assert (
        module.main(
            ["--family", "portfolio", "--seeds-count", "3", "--check", "--output", str(tmp_path)]
        )
        == 1
    )


def test_normalised_score_maps_references_to_zero_and_one():
    from clinbench.references import normalised_score
    from clinbench.references.recruitment_scores import REFERENCE_SCORES

    for task, ref in REFERENCE_SCORES.items():
        env_id = f"recruitment/{task}"
        assert normalised_score(env_id, ref["random"]) == pytest.approx(0.0, abs=1e-12)
        assert normalised_score(env_id, ref["reference_planner"]) == pytest.approx(1.0)
        assert ref["reference_planner"] > ref["random"]
