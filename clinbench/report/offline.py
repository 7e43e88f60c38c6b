"""Offline cells beside their data: dataset, split, size, and the behaviour's scores.

An offline agent can only be judged against the data it learned from: the report
shows, per task and offline agent, the dataset and split of its cells, how many
episodes and transitions it was fitted on, the mean score of those logged episodes
(per behaviour agent and for the whole selection), and the agent's own mean score on
the evaluation worlds. The logged episodes were played on training worlds, the agent
on the shared evaluation worlds, so the difference is descriptive, not a paired test.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.report.results import Results


def offline_cells(res: Results) -> dict[str, dict[str, Any]]:
    """``{task: {agent: {dataset, split, episodes, transitions, data_score,
    behaviour_scores, score, seeds}}}`` for the offline cells (empty without any)."""
    out: dict[str, dict[str, Any]] = {}
    for (task, agent, _), record in sorted(res.records.items()):
        about = record.get("offline")
        if not about or not record.get("episodes"):
            continue
        row = out.setdefault(task, {}).setdefault(
            agent,
            {
                "dataset": about["dataset"],
                "split": about["split"],
                "episodes": about["episodes"],
                "transitions": about["transitions"],
                "trained_on": about["tasks"],
                "data_score": about["data_score"],
                "behaviour_scores": about["behaviour_scores"],
                "per_seed": [],
            },
        )
        row["per_seed"].append(float(np.mean([e["score"] for e in record["episodes"]])))
    for rows in out.values():
        for row in rows.values():
            scores = row.pop("per_seed")
            row["seeds"], row["score"] = len(scores), float(np.mean(scores))
            row["minus_data"] = row["score"] - row["data_score"]
    return out
