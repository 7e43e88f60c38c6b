"""An aggregate across environment families, only when the config declares one.

Averaging two families describes neither when a pair's difference changes with the
family (one agent ahead on recruitment, behind on dose finding). So the cross-family
aggregate is never the headline: when ``report.cross_family`` is true it is shown after
the per-family tables, every pair gets a family x pair interaction test
(``stats.repeated_measures_f`` over its per-seed differences on each family), and a
pair whose interaction is significant at alpha (unadjusted: a missed interaction would
let an average stand for families it does not describe) is labelled exploratory, as is
the whole family when any pair's is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench import stats
from clinbench.report.aggregate import family_aggregate, normalised
from clinbench.report.pairs import CONFIRMATORY, EXPLORATORY, MIN_SEEDS, holm_family
from clinbench.report.results import Results

#: The cross-family aggregate's name in the JSON and the Markdown.
NAME = "across families"


def interaction(
    res: Results,
    refs: dict[str, dict[str, float]],
    groups: dict[str, list[str]],
    pair: dict[str, Any],
    alpha: float,
) -> dict[str, Any] | None:
    """The family x pair interaction of one pair on the seeds it was compared on."""
    seeds = pair["seeds"]
    if len(seeds) < MIN_SEEDS:
        return None
    d = np.column_stack(
        [
            np.mean(
                np.stack(normalised(res, refs, pair["a"], seeds, tasks))
                - np.stack(normalised(res, refs, pair["b"], seeds, tasks)),
                axis=0,
            )
            for tasks in groups.values()
        ]
    )
    f = stats.repeated_measures_f(d)
    return {
        "test": "repeated-measures F (family x pair)",
        "families": list(groups),
        "family_diffs": f.pop("condition_means"),
        **f,
        "significant": bool(f["testable"] and f["p"] <= alpha),
    }


def cross_family(
    res: Results,
    refs: dict[str, dict[str, float]],
    groups: dict[str, list[str]],
    members: list[tuple[str, str]],
    declared: Any,
    test: str,
    alpha: float,
    margin: float,
    reps: int,
    rng: Callable[..., np.random.Generator],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cross-family section and its Holm family (exploratory if any pair interacts)."""
    tasks = [t for ts in groups.values() for t in ts]
    agents = res.agents_on(tasks)
    section, pairs = family_aggregate(
        res, refs, NAME, tasks, agents, members, test, margin, reps, rng
    )
    for p in pairs:
        p["interaction"] = interaction(res, refs, groups, p, alpha)
    interacting = [p for p in pairs if p["interaction"] and p["interaction"]["significant"]]
    role = EXPLORATORY if interacting else CONFIRMATORY
    fam = holm_family(
        NAME,
        role,
        test,
        pairs,
        alpha,
        scope={"kind": "cross_family", "families": list(groups), "tasks": tasks},
        declared=declared,
        margin=margin,
    )
    section["families"] = list(groups)
    section["interacting_pairs"] = len(interacting)
    section["role"] = role
    return section, fam
