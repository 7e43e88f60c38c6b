"""Operating characteristics: what a design does over many trials, per agent and task.

An environment family declares them (``Family.operating_characteristics``): a metric of
its episodes averaged over the episodes where a condition holds, e.g. the type-I error
P(success claim | null drug). The report pools the operating-characteristic episodes
(``protocol.oc_episodes`` per cell, worlds of their own) of all seeds of a (task, agent)
and shows a proportion with its exact binomial (Clopper-Pearson) 95 %
interval, a mean with its Student-t 95 % interval.

A trained agent is a different policy at each seed: a pooled rate could hide one
policy above alpha behind others below it, so each trained policy (a cell with a
learning curve or an offline fit) also gets its own rates (``policies``). A
characteristic measured ``on_null_worlds`` (the type-I error) is counted, where a cell
played them, on its null worlds (``protocol.null_episodes``, e.g. 2,000: enough that a
policy with a true rate of 1.5 % shows an upper bound under 2.5 %), not on the few
null worlds of the mixed operating-characteristic episodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench import stats
from clinbench.env.registry import family
from clinbench.report.results import Results


def episode_metrics(res: Results, task: str, agent: str) -> list[dict[str, float]]:
    """The episode metrics of ``agent`` on ``task``, all seeds pooled: its cells'
    operating-characteristic episodes (``protocol.oc_episodes``), or, in cells without
    them, the evaluation episodes."""
    out: list[dict[str, float]] = []
    for (t, a, _), record in sorted(res.records.items()):
        if t == task and a == agent:
            out += record.get("oc_metrics") or [e.get("metrics", {}) for e in record["episodes"]]
    return out


def characteristic(
    episodes: list[dict[str, float]], metric: str, among: str, kind: str
) -> dict[str, Any]:
    """One characteristic over ``episodes`` (those with ``among`` == 1 if given)."""
    values = [e[metric] for e in episodes if metric in e and (not among or e.get(among) == 1)]
    if kind == "rate":
        k, n = int(sum(values)), len(values)
        value, lo, hi = stats.clopper_pearson(k, n)
        return {"value": value, "lo": lo, "hi": hi, "k": k, "n": n, "kind": kind}
    n = len(values)
    if n == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0, "kind": kind}
    value, lo, hi = stats.t_interval(np.asarray(values, dtype=float))
    return {"value": value, "lo": lo, "hi": hi, "n": n, "kind": kind}


def null_rate(records: list[dict[str, Any]], oc: Any) -> dict[str, Any] | None:
    """``oc`` (a rate measured on null worlds) over the null-world counts of
    ``records``, or None when none of them played null worlds."""
    counts = [r["null_counts"] for r in records if r.get("null_counts")]
    if not oc.on_null_worlds or not counts:
        return None
    k = round(sum(c.get(oc.metric, 0.0) for c in counts))
    n = int(sum(c["n"] for c in counts))
    value, lo, hi = stats.clopper_pearson(k, n)
    return {"value": value, "lo": lo, "hi": hi, "k": k, "n": n, "kind": "rate", "null_worlds": True}


def trained(record: dict[str, Any]) -> bool:
    """Whether a cell's policy was trained at its seed (so each seed's is its own)."""
    return bool(record.get("curve") or record.get("offline"))


def policy_rates(res: Results, task: str, agent: str, fam: Any) -> dict[int, dict[str, Any]]:
    """Each trained policy's own rates on ``task``: {seed: {characteristic: value}}."""
    out = {}
    for (t, a, seed), record in sorted(res.records.items()):
        if t != task or a != agent or not trained(record):
            continue
        episodes = record.get("oc_metrics") or [e.get("metrics", {}) for e in record["episodes"]]
        out[seed] = {
            oc.name: null_rate([record], oc)
            or characteristic(episodes, oc.metric, oc.among, "rate")
            for oc in fam.operating_characteristics
            if fam.metric(oc.metric).kind == "rate"
        }
    return out


def operating_characteristics(res: Results) -> dict[str, dict[str, Any]]:
    """Per task of a family that declares them: the labels, per agent the values over
    all its seeds, and per trained policy (agent, seed) its own rates."""
    out: dict[str, dict[str, Any]] = {}
    for task in res.tasks:
        fam = family(res.task_env(task))
        if not fam.operating_characteristics:
            continue
        rows, policies = {}, {}
        for agent in res.agents:
            if own := policy_rates(res, task, agent, fam):
                policies[agent] = own
            episodes = episode_metrics(res, task, agent)
            if not episodes:
                continue
            cells = [r for (t, a, _), r in sorted(res.records.items()) if t == task and a == agent]
            rows[agent] = {
                oc.name: null_rate(cells, oc)
                or characteristic(episodes, oc.metric, oc.among, fam.metric(oc.metric).kind)
                for oc in fam.operating_characteristics
            }
        out[task] = {
            "labels": {oc.name: oc.label for oc in fam.operating_characteristics},
            "agents": rows,
            "policies": policies,
            "policy_labels": {
                oc.name: oc.label
                for oc in fam.operating_characteristics
                if fam.metric(oc.metric).kind == "rate"
            },
        }
    return out
