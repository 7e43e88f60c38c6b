"""The protocol of an offline cell: fit on a split of a dataset, evaluate online.

The agent is built from the task's :class:`AgentContext`, handed the split's
:class:`OfflineData` (arrays only: no environment, no factory of environments, no
world seed) and a training stream of its own, then evaluated exactly as every other
agent: on the cell seed's shared evaluation worlds, with acting seeds of its own
(:func:`clinbench.protocol.evaluate`), and on the operating-characteristic worlds
where the family declares them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.evaluation_key import PUBLIC, EvaluationKey
from clinbench.offline import splits
from clinbench.offline.data import OfflineData
from clinbench.offline.dataset import load, tasks_layout
from clinbench.offline.layout import Layout, relayout
from clinbench.protocol import (
    EVALUATION,
    CellResult,
    CellWorlds,
    Protocol,
    make_env,
    null_environment,
)


def training_data(
    name: str, root: Path, split: str, task: str
) -> tuple[OfflineData, dict[str, Any]]:
    """The arrays a cell on ``task`` learns from, and what the report says about them."""
    meta, episodes = load(name, root)
    chosen = splits.select(episodes, splits.parse(split), task)
    # learn in the layout of the tasks chosen, not the dataset's (clinbench.offline.layout)
    stored = Layout(tuple(meta["feature_names"]), tuple(meta["macro_names"]))
    seen = tasks_layout(meta["spec"], sorted({e.task for e in chosen}))
    chosen = [relayout(e, stored, seen) for e in chosen]
    data = OfflineData.from_episodes(chosen, seen.feature_names, seen.macro_names)
    scores: dict[str, list[float]] = {}
    for e in chosen:
        scores.setdefault(e.behaviour, []).append(e.score)
    about = {
        "dataset": name,
        "split": split,
        "digest": meta["digest"],
        "episodes": data.n_episodes,
        "transitions": len(data),
        "tasks": sorted({e.task for e in chosen}),
        "behaviour_scores": {b: float(np.mean(s)) for b, s in sorted(scores.items())},
        "data_score": float(np.mean([e.score for e in chosen])),
    }
    return data, about


def run_offline_cell(
    env_id: str,
    agent_ref: str,
    seed: int,
    protocol: Protocol,
    agent_config: dict[str, Any],
    env_overrides: dict[str, Any],
    agent_name: str,
    dataset: str,
    split: str,
    root: Path,
    key: EvaluationKey = PUBLIC,
    isolate: bool = False,
) -> tuple[CellResult, dict[str, Any]]:
    """Fit ``agent_ref`` on the split of ``dataset`` for ``env_id``'s task, evaluate it
    (on the worlds ``key`` derives; in a process of its own when ``isolate``)."""
    cell = CellWorlds(key, seed, agent_name, env_id)
    with threadpool_limits(limits=1, user_api="blas"):
        env = make_env(env_id, env_overrides)
        agent = make_agent(agent_ref, AgentContext.of(env), **agent_config)
        if not getattr(agent, "offline", False):
            raise TypeError(f"agent {agent_name!r} is not an offline agent (no dataset cells)")
        data, about = training_data(dataset, root, split, env_id.split("/", 1)[1])
        t0 = time.perf_counter()
        agent.fit(data, cell.training_stream())
        t1 = time.perf_counter()
        null_env = null_environment(env_id, env_overrides, None, protocol)
        episodes, oc_metrics, null_counts = cell.score(env, agent, protocol, isolate, null_env)
        t2 = time.perf_counter()
    eval_seeds = cell.worlds(EVALUATION, protocol.eval_episodes)
    result = CellResult(
        env_id,
        agent_name,
        seed,
        eval_seeds,
        episodes,
        [],
        t1 - t0,
        t2 - t1,
        oc_metrics,
        null_counts,
    )
    return result, about
