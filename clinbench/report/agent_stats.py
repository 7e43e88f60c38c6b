"""What agents report about their own episodes (``episode_stats``), per task and agent.

An LLM agent counts its calls, repairs, fallbacks, API errors, tokens and latency; the
report shows their totals over the evaluation episodes of all seeds and the mean per
episode, so a model that mostly fell back to the declared action cannot pass for one
that decided. Agents whose cells are not reproducible (``deterministic = False``, e.g.
replies of a remote model) are listed.
"""

from __future__ import annotations

from typing import Any

from clinbench.report.results import Results


def agent_stats(res: Results) -> dict[str, dict[str, Any]]:
    """``{task: {agent: {stat: {"total", "per_episode"}, "episodes": n}}}`` (agents
    without stats left out)."""
    out: dict[str, dict[str, Any]] = {}
    for (task, agent, _), record in sorted(res.records.items()):
        episodes = [e["agent_stats"] for e in record.get("episodes", []) if e.get("agent_stats")]
        if not episodes:
            continue
        row = out.setdefault(task, {}).setdefault(agent, {"episodes": 0, "totals": {}})
        row["episodes"] += len(episodes)
        for e in episodes:
            for name, value in e.items():
                row["totals"][name] = row["totals"].get(name, 0) + value
    for task, rows in out.items():
        names = list(dict.fromkeys(n for row in rows.values() for n in row["totals"]))
        for row in rows.values():
            n, totals = row["episodes"], row.pop("totals")
            row["stats"] = {
                name: {"total": totals[name], "per_episode": totals[name] / n}
                if name in totals
                else None
                for name in names
            }
        out[task] = rows
    return out


def nondeterministic_agents(res: Results) -> list[str]:
    """Agents with a cell marked ``deterministic: false`` (its numbers may not repeat)."""
    records = res.records.items()
    return sorted({a for (_, a, _), r in records if r["config"].get("deterministic") is False})
