"""Pairwise comparisons of agents and their Holm families.

A pair is compared on the seeds both agents have (paired by seed: the same evaluation
worlds). The *primary* test is the one ``report.test`` names (default the paired t on
per-seed differences); the other t-test stays beside it as a robustness column and never
decides anything. Every interval and effect size of a pair belongs to the primary test.

Beside the difference test each pair gets an equivalence test (TOST, ``stats.TOST``)
against the declared margin: "level with" is a claim of its own, never read off a
non-significant difference. Holm runs over each family's difference tests and,
separately, over its equivalence tests.

Degenerate pairs are decided, not left to numpy: fewer than ``MIN_SEEDS`` shared seeds
means no test; zero variance with different means means "not testable"; both stay in
their family at p = 1 (the declared family size m never shrinks) and are never
significant (nor equivalent).
"""

from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench import stats

#: Below this many seeds the report runs no test and prints no interval.
MIN_SEEDS = 3

#: Families: each environment family's aggregate is confirmatory (the verdict comes from
#: it), the per-task families (and a cross-family aggregate with an interaction) exploratory.
CONFIRMATORY, EXPLORATORY = "confirmatory", "exploratory"

#: Why a pair has no test result.
TOO_FEW = f"not tested (fewer than {MIN_SEEDS} shared seeds)"

PoiFn = Callable[[np.ndarray, np.ndarray, np.random.Generator, int], tuple[float, float, float]]


def _t(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("t", "df", "p", "lo", "hi", "testable")}


def interval(value: float, lo: float, hi: float) -> dict[str, Any]:
    """A bootstrap estimate. A zero-width interval (its 2.5 % and 97.5 % quantiles equal:
    at least 95 % of the resamples give the same value) is flagged, never shown as
    certainty."""
    return {"value": value, "lo": lo, "hi": hi, "zero_width": bool(lo == hi)}


Samples = tuple[np.ndarray, np.ndarray]


def compare(
    shared: Samples,
    own: Samples,
    test: str,
    poi: PoiFn,
    rng: np.random.Generator,
    reps: int,
    margin: float | None = None,
) -> dict[str, Any]:
    """Every number of one pair (x = first agent).

    ``shared`` holds both agents' scores on the seeds they share, aligned by seed;
    ``own`` each agent's scores on all its seeds (the same in a complete grid). The
    paired test always uses ``shared``; Welch uses ``own`` when it is the primary test
    (an unpaired protocol keeps every seed) and ``shared`` when it is the robustness
    column. Effect size, probability of improvement and the equivalence test (TOST at
    ``margin``, none without one) follow the primary test's samples; ``poi(x, y, rng,
    reps)`` gives the probability of improvement with its bootstrap interval.
    """
    samples = {"paired": shared, "welch": own if test == "welch" else shared}
    x, y = samples[test]
    out: dict[str, Any] = {
        "n": int(min(x.size, y.size)),
        "n_each": [int(x.size), int(y.size)],
        "test": test,
        "status": "tested",
        "note": None,
        "mean_diff": float(x.mean() - y.mean()) if x.size and y.size else math.nan,
        "diff_lo": math.nan,
        "diff_hi": math.nan,
        "p": math.nan,
        "paired": None,
        "welch": None,
        "effect": None,
        "prob_improvement": None,
        "equivalence": None,
        "seeds_needed": None,
    }
    if min(x.size, y.size) < MIN_SEEDS:
        out.update(status="too few seeds", note=TOO_FEW)
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy on near-constant samples
        tests = {
            name: _t(fn(*samples[name]))
            if min(samples[name][0].size, samples[name][1].size) >= MIN_SEEDS
            else None
            for name, fn in stats.T_TESTS.items()
        }
        primary = stats.T_TESTS[test](x, y)
    effect_name, effect_fn = stats.EFFECT_SIZES[test]
    out.update(
        mean_diff=primary["diff"],
        diff_lo=primary["lo"],
        diff_hi=primary["hi"],
        p=primary["p"],
        effect={"name": effect_name, **effect_fn(x, y)},
        prob_improvement=interval(*poi(x, y, rng, reps)),
        equivalence=stats.TOST[test](x, y, margin) if margin else None,
        **tests,
    )
    if not primary["testable"]:
        out.update(status="no variance", note=stats.NO_VARIANCE)
    elif math.isnan(primary["t"]):  # equal constants: p = 1 by definition
        out["note"] = "identical scores on every seed: p = 1"
    return out


def family_seeds(pairs: list[dict[str, Any]]) -> int:
    """The number of seeds most of a family's pairs were tested on (its design's n)."""
    counts = collections.Counter(p["n"] for p in pairs if p["status"] != "too few seeds")
    return counts.most_common(1)[0][0] if counts else 0


def holm_family(
    name: str,
    role: str,
    test: str,
    pairs: list[dict[str, Any]],
    alpha: float,
    scope: dict[str, Any] | None = None,
    declared: Any = None,
    margin: float | None = None,
) -> dict[str, Any]:
    """Holm over the primary p-values of one family, and over its equivalence p-values;
    the family's smallest detectable effect; seeds needed at alpha and alpha / m.

    Untested pairs count as p = 1 so m is the declared number of pairs. "Seeds needed"
    is the number of seeds at which the primary test would detect the observed
    (bias-corrected) effect with 80 % power (a planning figure): at ``alpha`` and at
    Holm's first threshold, never below ``MIN_SEEDS`` (the report tests nothing on
    fewer); ``None`` where no feasible number of seeds would (an effect of 0 or tiny).
    """
    m = len(pairs)
    raw = [p["p"] if p["status"] == "tested" else 1.0 for p in pairs]
    adjusted = stats.holm(raw) if raw else []
    tost_raw = [
        e["p"]
        if (e := p.get("equivalence")) and e["testable"] and p["status"] != "too few seeds"
        else 1.0
        for p in pairs
    ]
    tost_adjusted = stats.holm(tost_raw) if tost_raw else []
    threshold = alpha / m if m else None
    needed = stats.PLANNING[test][2]
    for p, adj, eq_adj in zip(pairs, adjusted, tost_adjusted, strict=True):
        p["p_holm"] = float(adj)
        p["significant"] = bool(p["status"] == "tested" and adj <= alpha)
        if p.get("equivalence"):
            p["equivalence"]["p_holm"] = float(eq_adj)
        p["equivalent"] = bool(
            p.get("equivalence") and p["equivalence"]["testable"] and eq_adj <= alpha
        )
        effect = (p.get("effect") or {}).get("value")
        if effect is not None and math.isfinite(effect):
            at = {
                "alpha": needed(abs(effect), alpha) if effect else None,
                "holm": needed(abs(effect), threshold) if effect else None,
            }
            p["seeds_needed"] = {k: None if v is None else max(v, MIN_SEEDS) for k, v in at.items()}
    n = family_seeds(pairs)
    mde = (
        {"alpha": stats.PLANNING[test][1](n, alpha), "holm": stats.PLANNING[test][1](n, threshold)}
        if m and n >= MIN_SEEDS
        else None
    )
    return {
        "name": name,
        "role": role,
        "scope": scope or {},
        "declared": declared,
        "method": "holm",
        "test": test,
        "m": m,
        "members": [[p["a"], p["b"]] for p in pairs],
        "alpha": alpha,
        "holm_threshold": threshold,
        "equivalence_margin": margin,
        "seeds": n,
        "mde": mde,
        "pairs": pairs,
    }


def winner(pair: dict[str, Any]) -> tuple[str, str]:
    """(better, worse) agent of a pair by its mean difference."""
    return (pair["a"], pair["b"]) if pair["mean_diff"] > 0 else (pair["b"], pair["a"])


def median_seeds_needed(pairs: list[dict[str, Any]], key: str = "holm") -> float | None:
    """The median over pairs of the seeds each would need (``key``: at alpha or Holm's
    threshold), counting a pair that no feasible number of seeds detects as infinitely
    many (not dropping it), rounded up to whole seeds; None without pairs."""
    values = [
        math.inf if p["seeds_needed"][key] is None else p["seeds_needed"][key]
        for p in pairs
        if p.get("seeds_needed")
    ]
    if not values:
        return None
    med = float(np.median(values))  # an infinite middle value makes the median infinite
    return med if math.isinf(med) else float(math.ceil(med))
