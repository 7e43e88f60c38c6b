"""The references of the normalised score, and its one formula.

Each environment family stores the random floor and its oracle planner's mean score per
task (``Family.references`` names the module, ``<family>_scores.py``), computed by
``experiments/compute_reference_scores.py`` with :func:`reference_means` and the
family's planner (``PLANNER`` in ``<family>.py`` here). Kept outside ``clinbench.env``
so that no environment package imports an agent; agents are imported only inside the
functions that play.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: How a score is normalised (the report states it).
FORMULA = "(score - random) / (reference_planner - random), fixed per task version"


def normalise(score: Any, random: Any, planner: Any) -> Any:
    """``(score - random) / (planner - random)``: 0 is the random floor, 1 the planner.

    Works on floats and element-wise on arrays or pandas Series; never a min-max over
    the agents being compared.
    """
    return (score - random) / (planner - random)


#: The fixed world seeds of the references (disjoint from sweep seeds, which are small).
REFERENCE_SEEDS: tuple[int, ...] = tuple(range(100_000, 100_100))


def reference_means(
    env_id: str, planner: Callable[[Any, Any], Any], seeds: tuple[int, ...] = REFERENCE_SEEDS
) -> dict[str, float]:
    """Mean score of ``random`` and of the family's reference planner over ``seeds``.

    ``random`` is built from the task's public context like any agent; the planner
    (``planner(context, env)``) is the one policy handed the hidden world, explicitly.
    Each is reset with its own seed per world (:func:`clinbench.protocol.acting_seeds`
    under the public key, with the world seed as the cell seed), never the world seed.
    """
    import numpy as np

    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import make_agent
    from clinbench.env.registry import make
    from clinbench.episode import play_episode
    from clinbench.evaluation_key import PUBLIC
    from clinbench.protocol import EVALUATION, acting_seeds

    env = make(env_id)
    policies = {
        "random": make_agent("random", AgentContext.of(env)),
        "reference_planner": planner(AgentContext.of(env), env),
    }
    return {
        name: float(
            np.mean(
                [
                    play_episode(env, agent, s, agent_seed=a).score
                    for s in seeds
                    for a in acting_seeds(PUBLIC, s, name, env_id, EVALUATION, 1)
                ]
            )
        )
        for name, agent in policies.items()
    }


def normalised_score(env_id: str, score: float) -> float:
    """:func:`normalise` with the stored references of ``env_id``'s task."""
    import importlib

    from clinbench.env.registry import family, spec

    s = spec(env_id)
    fam = family(s.env)
    stored = importlib.import_module(fam.references)
    if stored.TASK_VERSION != fam.task_version:
        raise RuntimeError(
            f"reference scores are for task version {stored.TASK_VERSION}, the tasks are "
            f"version {fam.task_version}: run experiments/compute_reference_scores.py"
        )
    ref = stored.REFERENCE_SCORES[s.task]
    return normalise(score, ref["random"], ref["reference_planner"])
