"""Calibration properties of the recruitment tasks.

That policies enrolling nobody score exactly 0 is tested, on the same seeds, with the
regressions of the reference benchmark (tests/test_recruitment_regressions.py).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.reference_planner import ReferencePlanner
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.recruitment import TASKS
from clinbench.episode import play_episode
from clinbench.evaluation_key import PUBLIC
from clinbench.protocol import EVALUATION, acting_seeds

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


def test_stored_reference_scores_are_current():
    """The constants equal a fresh computation (so a model change cannot leave them stale)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments/compute_reference_scores.py"
    spec = importlib.util.spec_from_file_location("compute_reference_scores", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.with_references() == ["recruitment", "trial_design", "portfolio"]
    for name in module.with_references():
        assert module.target(name).read_text() == module.render(name), name


def test_normalised_score_maps_references_to_zero_and_one():
    from clinbench.references import normalised_score
    from clinbench.references.recruitment_scores import REFERENCE_SCORES

    for task, ref in REFERENCE_SCORES.items():
        env_id = f"recruitment/{task}"
        assert normalised_score(env_id, ref["random"]) == pytest.approx(0.0, abs=1e-12)
        assert normalised_score(env_id, ref["reference_planner"]) == pytest.approx(1.0)
        assert ref["reference_planner"] > ref["random"]
