"""A sweep's offline cells: which dataset, which splits, which agent names and tasks.

Each selected offline agent gets one set of cells per split, named by
:meth:`Split.agent_name` (``bc`` for ``worlds``, ``bc@task`` ...), on the selected
tasks the dataset covers. Checked before any work starts; problems are
:class:`~clinbench.offline.dataset.DatasetError` or
:class:`~clinbench.offline.splits.SplitError` (the config turns them into exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clinbench.offline import dataset, splits


@dataclass(frozen=True)
class OfflinePlan:
    dataset: str = ""
    digest: str = ""
    data_dir: str = ""
    #: cell agent name -> (agent name it is built by, split)
    agents: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the tasks offline cells run on (selected and in the dataset)
    tasks: tuple[str, ...] = ()


def plan(
    raw: dict[str, Any] | None, offline_agents: list[str], tasks: tuple[str, ...], families: dict
) -> OfflinePlan:
    """The plan of ``offline:`` (``dataset``, ``splits``, ``data_dir``) for these agents."""
    raw = raw or {}
    name = raw.get("dataset")
    if not offline_agents:
        if name:
            raise dataset.DatasetError(
                f"--dataset {name} is given but no offline agent is selected "
                "(bc, rwbc, learned_reward, iql, or a plugin with offline = True)"
            )
        return OfflinePlan()
    root = dataset.data_dir(raw.get("data_dir"))
    if not name:
        valid = ", ".join(dataset.names(root)) or f"none in {root} (clinbench dataset create)"
        raise dataset.DatasetError(
            f"offline agent(s) {', '.join(offline_agents)} learn from a dataset: give "
            f"--dataset NAME; available: {valid}"
        )
    meta = dataset.metadata(str(name), root)
    env = meta["spec"]["env"]
    covered = tuple(t for t in tasks if t in meta["spec"]["tasks"] and families.get(t) == env)
    if not covered:
        raise dataset.DatasetError(
            f"dataset {name!r} covers {env} tasks {', '.join(meta['spec']['tasks'])}; none "
            f"is selected (selected: {', '.join(tasks)})"
        )
    from clinbench.env.registry import family

    metrics = [m.name for m in family(env).episode_metrics]
    chosen = [splits.parse(s) for s in (raw.get("splits") or ["worlds"])]
    if len({s.label for s in chosen}) != len(chosen):
        raise splits.SplitError("splits must not repeat")
    for s in chosen:
        splits.check(s, meta, metrics)
    agents = {s.agent_name(a): (a, s.label) for a in offline_agents for s in chosen}
    return OfflinePlan(str(name), meta["digest"], str(root), agents, covered)
