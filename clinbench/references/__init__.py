"""The references of the normalised score, and its one formula.

Each environment family stores, per task, the mean score of ``random`` and of its oracle
planner on ``REFERENCE_WORLDS`` fixed reference worlds, with their standard errors
(``Family.references`` names the module, ``<family>_scores.py``), computed by
``experiments/compute_reference_scores.py`` with :func:`reference_scores` and the
family's planner (``PLANNER`` in ``<family>.py`` here). 0 on the normalised scale is
random's mean *on those worlds*, not random's score in any run: on a run's own worlds
random can land below 0. Kept outside ``clinbench.env``
so that no environment package imports an agent; agents are imported only inside the
functions that play.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: How a score is normalised (the report states it).
FORMULA = (
    "(score - random) / (reference_planner - random), where random and reference_planner are "
    "those policies' mean scores on the task's reference worlds (fixed per task version)"
)


def normalise(score: Any, random: Any, planner: Any) -> Any:
    """``(score - random) / (planner - random)``: 0 is random's mean and 1 the planner's
    mean on the reference worlds (a run's own worlds can put random below 0).

    Works on floats and element-wise on arrays or pandas Series; never a min-max over
    the agents being compared.
    """
    return (score - random) / (planner - random)


#: The first world seed of the references (disjoint from sweep seeds, which are small).
REFERENCE_SEED_BASE = 100_000
#: Reference worlds per task: enough that each reference's standard error is small
#: beside the differences the report tests.
REFERENCE_WORLDS = 1_000


def reference_seeds(count: int = REFERENCE_WORLDS) -> tuple[int, ...]:
    """The first ``count`` fixed world seeds of the references."""
    if count < 2:
        raise ValueError(f"a reference needs at least 2 worlds (for its SE), got {count}")
    return tuple(range(REFERENCE_SEED_BASE, REFERENCE_SEED_BASE + count))


REFERENCE_SEEDS: tuple[int, ...] = reference_seeds()


def reference_scores(
    env_id: str, planner: Callable[[Any, Any], Any], seeds: tuple[int, ...] = REFERENCE_SEEDS
) -> dict[str, dict[str, float]]:
    """Per policy (``random``, ``reference_planner``): the mean score over ``seeds``, its
    standard error (sd / sqrt(worlds)) and the number of worlds.

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
    out = {}
    for name, agent in policies.items():
        scores = np.array(
            [
                play_episode(env, agent, s, agent_seed=a).score
                for s in seeds
                for a in acting_seeds(PUBLIC, s, name, env_id, EVALUATION, 1)
            ]
        )
        se = float(scores.std(ddof=1) / np.sqrt(scores.size)) if scores.size > 1 else float("nan")
        out[name] = {"mean": float(scores.mean()), "se": se, "worlds": int(scores.size)}
    return out


def reference_means(
    env_id: str, planner: Callable[[Any, Any], Any], seeds: tuple[int, ...] = REFERENCE_SEEDS
) -> dict[str, float]:
    """Mean score of ``random`` and of the family's reference planner over ``seeds``."""
    return {name: s["mean"] for name, s in reference_scores(env_id, planner, seeds).items()}


#: Cell code that computing the references never runs: the learners' shared code and the
#: isolated player (an edit there leaves the references' identity as it is).
_NOT_REFERENCE_CODE = ("agents/core/", "agents/learner.py", "isolation.py")


def reference_code_files(family: str) -> list[str]:
    """The sources, relative to the package, that computing ``family``'s references runs:
    its cells' code (:func:`clinbench.sweep.cells.cell_code_files`) but
    :data:`_NOT_REFERENCE_CODE`, this package, the family's planner module and the agent
    modules ``random`` and the planner use.

    A test traces :func:`reference_scores` against this list, as the cells' is traced.
    """
    from pathlib import Path

    import clinbench
    from clinbench.agents.registry import agent_entry, agent_source_files
    from clinbench.sweep.cells import cell_code_files

    root = Path(clinbench.__file__).resolve().parent
    planner = root / "references" / f"{family}.py"
    agents = agent_source_files([agent_entry("random").require()], [planner])
    files = [
        *(f for f in cell_code_files(family) if not f.startswith(_NOT_REFERENCE_CODE)),
        *(p.relative_to(root).as_posix() for p in (Path(__file__).resolve(), planner)),
        *(p.resolve().relative_to(root).as_posix() for p in agents),
    ]
    return list(dict.fromkeys(files))


def reference_code(family: str) -> str:
    """clinbench's version plus a hash of :func:`reference_code_files`: stored beside the
    references (``CODE``), so a quick test can tell they come from today's code; a full
    recomputation (``experiments/compute_reference_scores.py --check``) runs in CI."""
    import clinbench
    from clinbench.sweep.cells import sources_digest

    return f"{clinbench.__version__}+{sources_digest(reference_code_files(family))}"


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
