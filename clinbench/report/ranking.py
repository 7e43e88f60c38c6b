"""Ranks: the ranges the confirmatory tests allow, and the Friedman ranking per family.

A rank is a claim: "fourth" says three agents are above and the rest below. The report
states an agent's rank as one number only where its family's confirmatory tests
separate it from every other agent, otherwise as the range of ranks its ties allow
(``stats.rank_ranges``).

The Friedman test over (task, seed) blocks of one environment family, with a pairwise
Wilcoxon-Holm post-hoc (Benavoli, Corani and Mangili, "Should We Really Use Post-Hoc
Tests Based on Mean-Ranks?", JMLR 17, 2016), is exploratory; Nemenyi's critical
difference only draws the descriptive diagram.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from clinbench import stats
from clinbench.report.pairs import MIN_SEEDS, winner
from clinbench.report.results import Results


def rank_ranges(fam: dict[str, Any], agents: list[str]) -> dict[str, list[int]]:
    """``{agent: [best rank, worst rank]}`` from a family's significant pairs."""
    separated = [winner(p) for p in fam["pairs"] if p["significant"]]
    return {a: list(r) for a, r in stats.rank_ranges(agents, separated).items()}


def rank_text(span: list[int]) -> str:
    """``3`` or ``2-5``."""
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def ranking(res: Results, name: str, tasks: list[str], agents: list[str], alpha: float):
    """Friedman over the family's (task, seed) blocks and its Wilcoxon-Holm post-hoc, on
    the seeds complete for the agents it keeps (it says what it dropped); {} with fewer
    than 3 agents or ``MIN_SEEDS`` seeds."""
    scope = res.scope(MIN_SEEDS, tasks, agents)
    kept, seeds = scope["agents"], scope["seeds"]
    if len(kept) < 3 or len(seeds) < MIN_SEEDS:
        return {}
    blocks = np.array([[res.score(t, a, s) for a in kept] for t in tasks for s in seeds])
    fr = stats.friedman(blocks)
    posthoc = []
    for (i, a), (j, b) in itertools.combinations(enumerate(kept), 2):
        w = stats.wilcoxon(blocks[:, i], blocks[:, j])
        posthoc.append(
            {
                "a": a,
                "b": b,
                "mean_diff": float(np.mean(blocks[:, i] - blocks[:, j])),
                "status": "tested" if w["testable"] else "no variance",
                "statistic": w["statistic"],
                "p": w["p"],
            }
        )
    adjusted = stats.holm([p["p"] if p["status"] == "tested" else 1.0 for p in posthoc])
    for p, adj in zip(posthoc, adjusted, strict=True):
        p["p_holm"] = float(adj)
        p["significant"] = bool(p["status"] == "tested" and adj <= alpha)
    return {
        "family": name,
        "tasks": list(tasks),
        "blocks": int(blocks.shape[0]),
        "agents": kept,
        "seeds": seeds,
        "dropped_agents": scope["dropped_agents"],
        "dropped_seeds": scope["dropped_seeds"],
        "friedman_statistic": fr["statistic"],
        "friedman_p": fr["p"],
        "average_ranks": dict(zip(kept, stats.average_ranks(blocks).tolist(), strict=True)),
        "posthoc": {
            "test": "wilcoxon signed-rank over blocks",
            "method": "holm",
            "m": len(posthoc),
            "pairs": posthoc,
        },
        "critical_difference": stats.nemenyi_cd(len(kept), blocks.shape[0], alpha),
    }
