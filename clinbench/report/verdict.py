"""The report's opening sentences: what a reader can trust without reading the tables.

Every comparative sentence is generated from a test in the JSON: "a > b" from the
family's confirmatory Holm family, "level" from its equivalence tests (TOST at the
declared margin), ranks as the ranges the tests allow (never a "best" agent the tests
do not separate from the rest). One environment family at a time; a cross-family
aggregate only when declared, with its interaction test. Exploratory results that
disagree with a confirmatory one are named; power is a planning statement, never
evidence. No sentence says why an agent scores as it does: no test shows causes.
"""

from __future__ import annotations

import math
from typing import Any

from clinbench.report.pairs import CONFIRMATORY, median_seeds_needed, winner
from clinbench.report.ranking import rank_text

#: Pairs listed by name in one sentence; beyond this, a count (the tables list them all).
LIST_AT_MOST = 12
#: Disagreements named in the verdict; the report's section lists every one.
DISAGREEMENTS_NAMED = 5


def _value(s: dict[str, Any]) -> str:
    """``0.92 [0.91, 0.94]``, or the value alone, saying why it has no interval."""
    if s.get("value") is None:
        return "no value"
    if s.get("no_spread"):
        return f"{s['value']:.2f} (the same on every seed: no spread)"
    if s.get("lo") is None or s.get("hi") is None:
        return f"{s['value']:.2f} (no interval: fewer than 3 seeds)"
    return f"{s['value']:.2f} [{s['lo']:.2f}, {s['hi']:.2f}]"


def _names(pairs: list[dict[str, Any]], text) -> str:
    shown = [text(p) for p in pairs[:LIST_AT_MOST]]
    rest = len(pairs) - len(shown)
    return ", ".join(shown) + (f" and {rest} more (see the tables)" if rest > 0 else "")


def _ordered(pair: dict[str, Any]) -> str:
    return " > ".join(winner(pair))


def _versus(pair: dict[str, Any]) -> str:
    return f"{pair['a']} vs {pair['b']}"


def ranks_sentence(section: dict[str, Any]) -> str:
    """Each agent's rank range, best first, with its headline mean."""
    rows, ranks = section["agents"], section["ranks"]
    order = sorted(rows, key=lambda a: (ranks[a][0], -rows[a]["mean"]["value"]))
    return (
        "Ranks the confirmatory tests allow (a range where they do not separate an agent "
        "from others): "
        + "; ".join(f"{a} {rank_text(ranks[a])} ({_value(rows[a]['mean'])})" for a in order)
        + "."
    )


def confirmatory(section: dict[str, Any], fam: dict[str, Any], test_name: str) -> list[str]:
    """The sentences of one environment family's aggregate and confirmatory family."""
    env, rows = section["name"], section["agents"]
    head = f"{env} ({', '.join(section['tasks'])}; {section['unit']}):"
    if not rows:
        return [f"{head} no agent has a result on every task: no aggregate."]
    if len(rows) == 1:
        ((agent, row),) = rows.items()
        return [f"{head} one agent ({agent}, {_value(row['mean'])}): nothing to compare."]
    tested = [p for p in fam["pairs"] if p["status"] != "too few seeds"]
    if not tested:
        return [
            f"{head} no confirmatory test: no declared pair has 3 seeds with a result on "
            + "every task of the family."
        ]
    sig = [p for p in fam["pairs"] if p["significant"]]
    rule = f"{test_name}, Holm over m = {fam['m']}, alpha {fam['alpha']}"
    if sig:
        out = [
            f"{head} {len(sig)} of {fam['m']} confirmatory differences are significant "
            + f"({rule}): {_names(sig, _ordered)}.",
            ranks_sentence(section),
        ]
    else:
        out = [
            f"{head} none of the {fam['m']} confirmatory differences is significant ({rule}): "
            + "the tests rank no agent above another."
        ]
    level = [p for p in fam["pairs"] if p.get("equivalent")]
    open_pairs = [p for p in tested if not p["significant"] and not p.get("equivalent")]
    margin = fam.get("equivalence_margin")
    if margin:
        tost = f"TOST at ±{margin:g} normalised, Holm over m = {fam['m']}"
        if level:
            out.append(
                f"Shown level ({tost}): " + _names(level, lambda p: f"{p['a']} and {p['b']}") + "."
            )
        if open_pairs:
            out.append(
                f"Neither shown different nor shown level ({tost}): "
                + _names(open_pairs, _versus)
                + "."
            )
    untestable = [p for p in fam["pairs"] if p["status"] == "no variance"]
    if untestable:
        out.append(
            "Not testable: " + _names(untestable, lambda p: f"{_versus(p)} ({p['note']})") + "."
        )
    few = [p for p in fam["pairs"] if p["status"] == "too few seeds"]
    if few:
        out.append(f"Not tested (fewer than 3 shared seeds): {_names(few, _versus)}.")
    return out


def every_task(env: str, families: list[dict[str, Any]]) -> str | None:
    """Pairs significant in the same direction in every per-task family of ``env``
    (exploratory: Holm within each task only)."""
    tasks = [f for f in families if f["scope"].get("kind") == "task" and f["scope"]["env"] == env]
    if len(tasks) < 2:
        return None
    first, *rest = tasks
    claims = []
    for p in first["pairs"]:
        if not p["significant"]:
            continue
        same = [
            next((q for q in f["pairs"] if {q["a"], q["b"]} == {p["a"], p["b"]}), None)
            for f in rest
        ]
        if all(q and q["significant"] and winner(q) == winner(p) for q in same):
            claims.append(p)
    head = f"Exploratory ({env}'s per-task families, Holm within each task):"
    if not claims:
        return f"{head} no pair differs significantly on every task."
    return f"{head} significant in the same direction on every task: {_names(claims, _ordered)}."


def planning(fam: dict[str, Any], effect: str, test_name: str) -> str | None:
    """The family's smallest detectable effect and the seeds its open pairs would need."""
    if not fam.get("mde"):
        return None
    sentence = (
        f"Planning figure for {fam['name']}, not evidence: with {fam['seeds']} seeds the "
        f"{test_name} detects {effect} = {fam['mde']['alpha']:.2f} with 80 % power at alpha "
        f"{fam['alpha']} and {effect} = {fam['mde']['holm']:.2f} at Holm's first threshold "
        f"{fam['holm_threshold']:.4g}"
    )
    needed = median_seeds_needed([p for p in fam["pairs"] if not p["significant"]])
    if needed is not None:
        sentence += (
            "; its non-significant pairs would need a median of "
            + ("more than 100,000" if math.isinf(needed) else f"{int(needed)}")
            + " seeds each at that threshold"
        )
    return sentence + "."


def cross(section: dict[str, Any], fam: dict[str, Any]) -> list[str]:
    """The declared cross-family aggregate: its role and its interactions."""
    if not section:
        return []
    k = section["interacting_pairs"]
    if k:
        return [
            f"Across families (declared; {', '.join(section['families'])}): the family x pair "
            + f"interaction is significant for {k} of {fam['m']} pairs, so the cross-family "
            + "aggregate is exploratory: it describes neither family for those pairs."
        ]
    sig = [p for p in fam["pairs"] if p["significant"]]
    return [
        f"Across families (declared; {', '.join(section['families'])}): no family x pair "
        f"interaction is significant; {len(sig)} of {fam['m']} differences are significant"
        + (f": {_names(sig, _ordered)}." if sig else ".")
    ]


def disagreement_sentence(rows: list[dict[str, Any]]) -> str | None:
    if not rows:
        return None
    named = "; ".join(
        f"{r['a']} vs {r['b']}: {r['confirmatory']} (confirmatory) {r['confirmatory_result']}, "
        f"{r['exploratory']} {r['exploratory_result']}"
        for r in rows[:DISAGREEMENTS_NAMED]
    )
    rest = len(rows) - DISAGREEMENTS_NAMED
    return (
        f"{len(rows)} exploratory result(s) disagree with a confirmatory one; the claims "
        f"above rest on the confirmatory families: {named}"
        + (f"; and {rest} more (see 'Exploratory results that disagree')" if rest > 0 else "")
        + "."
    )


def verdict(report: dict[str, Any]) -> list[str]:
    """A few plain sentences per environment family, then what disagrees, what is
    missing and what the design could detect."""
    p = report["protocol"]
    fams = {f["name"]: f for f in report["families"] if f["role"] == CONFIRMATORY}
    out: list[str] = []
    for env, section in report["aggregates"].items():
        if section.get("absent"):
            out.append(f"{env}: no aggregate ({section['absent']}): no confirmatory family.")
            continue
        out += confirmatory(section, fams[env], p["test_name"])
        out += [s for s in [every_task(env, report["families"])] if s]
    cross_fam = next(
        (f for f in report["families"] if f["scope"].get("kind") == "cross_family"), None
    )
    out += cross(report["cross_family"], cross_fam) if cross_fam else []
    out += [s for s in [disagreement_sentence(report["disagreements"])] if s]
    effect = report["power"]["effect"]
    for env in report["aggregates"]:
        if env in fams and (s := planning(fams[env], effect, p["test_name"])):
            out.append(s)
    if report["missing"]:
        out.append(
            f"{len(report['missing'])} cells are missing or failed; each comparison uses the "
            "seeds its pair shares and says which it dropped (see Warnings)."
        )
    return out
