"""Learning curves in the report: where each learner starts, where it ends, and whether
its curve is still rising when the budget runs out.

A comparison of learners at one budget says little if some are still climbing: the
report computes, per (task, learning agent), the trend over the last 20 % of the budget
(:func:`clinbench.stats.end_trend`: "still improving" when its 95 % interval lies above
0) and the change from the untrained policy (the curve's first point) to the last one,
paired by seed; an agent that ends below its untrained policy is flagged. Curves are
scored on validation worlds, never on the evaluation worlds.

Where the cells evaluated the trained checkpoint that scored best on those worlds
(``protocol.select_checkpoint``), the summary gives that checkpoint too: its
validation score (the maximum of the trained points, so chosen on the same numbers:
an optimistic estimate, unlike the evaluation worlds' score) and the training steps it
had taken when it was scored.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench import stats
from clinbench.report.results import Results

#: the share of the budget whose slope decides "still improving"
END_SHARE = 0.2


def _steps(point: dict[str, Any]) -> float:
    # env steps since this round; a record from before counted episodes
    return float(point.get("env_steps", point.get("episodes_seen", 0)))


def curve_summary(
    curves: dict[int, list[dict[str, Any]]],
    budget: float,
    kept: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Start, end, change (paired by seed) and end trend of one agent's curves on one
    task ({seed: curve points}), and the checkpoint each seed evaluated ({seed: its
    ``training.kept``}; none: the last policy)."""
    seeds = sorted(s for s, c in curves.items() if c)
    first = np.array([curves[s][0]["mean_score"] for s in seeds])
    last = np.array([curves[s][-1]["mean_score"] for s in seeds])

    def interval(x: np.ndarray) -> dict[str, Any]:
        m, lo, hi = stats.t_interval(x)
        finite = x.size > 1
        return {"mean": m, "lo": lo if finite else None, "hi": hi if finite else None}

    change = interval(last - first)
    trend = stats.end_trend(
        [([_steps(p) for p in curves[s]], [p["mean_score"] for p in curves[s]]) for s in seeds],
        budget,
        END_SHARE,
    )
    kept = {s: k for s, k in (kept or {}).items() if s in seeds}
    selected = None
    if kept and len(kept) == len(seeds):
        scores = np.array([kept[s]["mean_score"] for s in seeds])
        gain = interval(scores - first)
        selected = {
            **interval(scores),
            "env_steps": float(np.mean([kept[s]["env_steps"] for s in seeds])),
            "change": gain,
            "below_untrained": gain["hi"] is not None and gain["hi"] < 0,
        }
    return {
        "seeds": len(seeds),
        "points": int(np.median([len(curves[s]) for s in seeds])),
        "budget": budget,
        "untrained": interval(first),
        "final": interval(last),
        "change": change,
        "ends_below_untrained": change["hi"] is not None and change["hi"] < 0,
        "end_trend": trend,
        "kept": selected,
        "kept_seeds": len(kept),
    }


def learning_curves(res: Results) -> dict[str, dict[str, Any]]:
    """{task: {agent: curve_summary}} for every learning agent with curves."""
    out: dict[str, dict[str, Any]] = {}
    for task in res.tasks:
        rows = {}
        for agent in res.agents:
            cells = {
                seed: r
                for (t, a, seed), r in sorted(res.records.items())
                if t == task and a == agent and r.get("curve")
            }
            if not cells:
                continue
            curves = {seed: r["curve"] for seed, r in cells.items()}
            kept = {
                seed: r["training"]["kept"]
                for seed, r in cells.items()
                if "kept" in r.get("training", {})
            }
            budget = max(_steps(c[-1]) for c in curves.values())
            rows[agent] = curve_summary(curves, budget, kept)
        if rows:
            out[task] = rows
    return out
