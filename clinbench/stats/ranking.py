"""Ranking several agents over blocks (task × seed): Friedman test and Nemenyi critical difference.

Reference: Demšar, "Statistical Comparisons of Classifiers over Multiple Data Sets",
JMLR 7 (2006).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
from scipy import stats as sps

from clinbench.stats._arrays import snap_ties


def _blocks(scores: Any) -> np.ndarray:
    """``scores[block, agent]`` checked, with values equal up to rounding tied."""
    a = np.asarray(scores, dtype=float)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2:
        raise ValueError(f"scores must be [block, agent] with at least 2 agents, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("scores contain NaN or infinite values")
    return snap_ties(a)


def friedman(scores: Any) -> dict[str, float]:
    """Friedman's chi-square test that all agents rank alike within blocks.

    ``scores[block, agent]``; scipy's ``friedmanchisquare`` needs at least 3 agents
    (with 2, use the paired tests instead).
    Reference: Friedman, "The Use of Ranks to Avoid the Assumption of Normality Implicit
    in the Analysis of Variance", JASA 32 (1937).
    If every block is a complete tie the tie-corrected statistic is 0 / 0: statistic and
    p are NaN (as in R's ``friedman.test``), without scipy's division warning.
    """
    a = _blocks(scores)
    if a.shape[1] < 3:
        raise ValueError("the Friedman test needs at least 3 agents")
    if np.all(a == a[:, :1]):
        return {"statistic": math.nan, "p": math.nan}
    res = sps.friedmanchisquare(*a.T)
    return {"statistic": float(res.statistic), "p": float(res.pvalue)}


def average_ranks(scores: Any) -> np.ndarray:
    """Mean rank of each agent over blocks; the highest score ranks 1, ties share the average."""
    return sps.rankdata(-_blocks(scores), axis=1).mean(axis=0)


@cache
def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Critical value ``q_alpha`` = studentized range quantile (k groups, df = ∞) / sqrt(2)."""
    if k < 2:
        raise ValueError(f"need at least 2 agents, got {k}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return float(sps.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2))


def nemenyi_cd(k: int, n_blocks: int, alpha: float = 0.05) -> float:
    """Critical difference ``q_alpha sqrt(k (k+1) / (6 N))`` of average ranks (Demšar 2006).

    Two agents whose average ranks differ by more than this differ significantly.
    """
    if n_blocks < 1:
        raise ValueError(f"need at least one block, got {n_blocks}")
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6 * n_blocks))


def rank_ranges(agents: list[str], separated: list[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """The ranks each agent can hold given which pairs a test separated.

    ``separated`` lists (better, worse) pairs the tests found significant. An agent's
    best rank is 1 + the agents significantly above it, its worst rank ``k`` minus the
    agents significantly below it; a rank is stated as one number only where the tests
    separate the agent from every other, otherwise as the range its ties allow.
    """
    k = len(agents)
    above = {a: 0 for a in agents}
    below = {a: 0 for a in agents}
    for better, worse in separated:
        if better in above and worse in above:
            above[worse] += 1
            below[better] += 1
    return {a: (1 + above[a], k - below[a]) for a in agents}
