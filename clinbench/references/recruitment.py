"""Reference scores for normalisation: ``random`` and the reference planner.

Both are means over the same 100 fixed world seeds, computed by
``experiments/compute_reference_scores.py`` and stored as constants in
``recruitment_scores.py`` together with the task version they belong to. The
normalised score is :func:`clinbench.references.normalise`.
"""

from __future__ import annotations

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.reference_planner import ReferencePlanner
from clinbench.agents.registry import make_agent
from clinbench.env.registry import make
from clinbench.episode import play_episode
from clinbench.protocol import acting_seed
from clinbench.references import normalise

#: The fixed world seeds of the references (disjoint from sweep seeds, which are small).
REFERENCE_SEEDS: tuple[int, ...] = tuple(range(100_000, 100_100))


def reference_means(task: str, seeds: tuple[int, ...] = REFERENCE_SEEDS) -> dict[str, float]:
    """Mean score of ``random`` and of the reference planner over ``seeds``.

    ``random`` is built from the task's public context like any agent; the planner is
    the one policy handed the hidden world, explicitly (it reads the truth by design).
    Each is reset with its own seed per world (:func:`clinbench.protocol.acting_seed`
    with the world seed as the cell seed), never the world seed.
    """
    env_id = f"recruitment/{task}"
    env = make(env_id)
    policies = {
        "random": make_agent("random", AgentContext.of(env)),
        "reference_planner": ReferencePlanner(AgentContext.of(env), world=lambda: env.world),
    }
    return {
        name: float(
            np.mean(
                [
                    play_episode(env, agent, s, agent_seed=acting_seed(s, name, env_id, s)).score
                    for s in seeds
                ]
            )
        )
        for name, agent in policies.items()
    }


def normalised_score(task: str, score: float) -> float:
    """``(score - random) / (planner - random)`` with the stored references of ``task``."""
    from clinbench.env.recruitment.tasks import TASK_VERSION as CURRENT
    from clinbench.references.recruitment_scores import REFERENCE_SCORES, TASK_VERSION

    if TASK_VERSION != CURRENT:
        raise RuntimeError(
            f"reference scores are for task version {TASK_VERSION}, the tasks are version "
            f"{CURRENT}: run experiments/compute_reference_scores.py"
        )
    ref = REFERENCE_SCORES[task]
    return normalise(score, ref["random"], ref["reference_planner"])
