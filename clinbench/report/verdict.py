"""The report's opening sentences: what a reader can trust without reading the tables.

Claims come from the confirmatory (aggregate) family and list every significant pair;
"on every task" statements come from the exploratory per-task families and are
labelled so; power is a planning statement, never evidence.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.report.pairs import CONFIRMATORY, EXPLORATORY, winner


def _ordered(pair: dict[str, Any]) -> str:
    better, worse = winner(pair)
    return f"{better} > {worse}"


def _versus(pair: dict[str, Any]) -> str:
    return f"{pair['a']} vs {pair['b']}"


def _value(s: dict[str, Any]) -> str:
    """``0.92 [0.91, 0.94]``, or the value alone, saying why it has no interval."""
    if s.get("no_spread"):
        return f"{s['value']:.2f} (the same on every seed: no spread)"
    if s.get("lo") is None or s.get("hi") is None:
        return f"{s['value']:.2f} (no interval: fewer than 3 seeds)"
    return f"{s['value']:.2f} [{s['lo']:.2f}, {s['hi']:.2f}]"


def headline(report: dict[str, Any]) -> str | None:
    agg = report["aggregate"]
    if not agg or not agg["agents"]:
        return None
    rows = agg["agents"]
    best = max(rows, key=lambda a: rows[a]["mean"]["value"])
    return (
        f"Best aggregate ({agg['unit']}, mean over {len(agg['seeds'])} seeds, Student-t 95 % CI): "
        f"{best}, {_value(rows[best]['mean'])}."
    )


def confirmatory(fam: dict[str, Any], test_name: str) -> list[str]:
    if not fam["pairs"]:
        return []
    if all(p["status"] == "too few seeds" for p in fam["pairs"]):
        n = fam["pairs"][0]["n"]
        return [f"No confirmatory test: the aggregate has fewer than 3 complete seeds ({n})."]
    sig = [p for p in fam["pairs"] if p["significant"]]
    rest = [p for p in fam["pairs"] if p["status"] == "tested" and not p["significant"]]
    untestable = [p for p in fam["pairs"] if p["status"] != "tested"]
    head = (
        f"Confirmatory (aggregate family, {test_name}, Holm over m = {fam['m']}, alpha "
        f"{fam['alpha']}): "
        f"{len(sig)} of {fam['m']} differences are significant"
    )
    out = [head + (f": {', '.join(_ordered(p) for p in sig)}." if sig else ".")]
    if rest:
        out.append("Not significant on the aggregate: " + ", ".join(_versus(p) for p in rest) + ".")
    if untestable:
        out.append(
            "Not tested on the aggregate: "
            + ", ".join(f"{_versus(p)} ({p['note']})" for p in untestable)
            + "."
        )
    return out


def every_task(families: list[dict[str, Any]], agents: list[str]) -> str | None:
    """Pairs significant in the same direction in every per-task family."""
    tasks = [f for f in families if f["role"] == EXPLORATORY]
    if not tasks:
        return None
    claims = []
    for i, a in enumerate(agents):
        for b in agents[i + 1 :]:
            signs = set()
            for fam in tasks:
                p = next((p for p in fam["pairs"] if {p["a"], p["b"]} == {a, b}), None)
                signs.add(winner(p) if p is not None and p["significant"] else None)
            if len(signs) == 1 and None not in signs:
                claims.append(" > ".join(signs.pop()))
    head = "Exploratory (per-task families, Holm within each task):"
    if not claims:
        return f"{head} no pair differs significantly on every task."
    return f"{head} significant on every task: {', '.join(claims)}."


def planning(report: dict[str, Any], fam: dict[str, Any] | None) -> str | None:
    pw = report["power"]
    if "mde" not in pw:
        return None
    effect = "d_z" if pw["effect"] == "d_z" else "d"
    sentence = (
        f"Planning figure, not evidence: with {pw['seeds']} seeds the "
        f"{report['protocol']['test_name']} "
        f"detects {effect} = {pw['mde']['alpha']:.2f} with 80 % power at alpha {pw['alpha']} and "
        f"{effect} = {pw['mde']['holm']:.2f} at Holm's first threshold {pw['holm_threshold']:.4g}"
    )
    needed = [
        p["seeds_needed"]["holm"]
        for p in (fam or {}).get("pairs", [])
        if not p["significant"] and p.get("seeds_needed") and p["seeds_needed"]["holm"]
    ]
    if needed:
        sentence += (
            "; the non-significant aggregate pairs would need a median of "
            f"{int(np.median(needed))} seeds "
            "each at that threshold"
        )
    return sentence + "."


def verdict(report: dict[str, Any]) -> list[str]:
    """A few plain sentences: headline, confirmatory claims, exploratory claims, planning."""
    fams = {f["name"]: f for f in report["families"]}
    agg_fam = next((f for f in report["families"] if f["role"] == CONFIRMATORY), None)
    out = [s for s in [headline(report)] if s]
    if not report["aggregate"]:
        out.append(
            f"No aggregate across tasks ({report['aggregate_absent']}): no confirmatory family."
        )
    if agg_fam:
        out += confirmatory(agg_fam, report["protocol"]["test_name"])
    out += [
        s
        for s in [
            every_task(list(fams.values()), report["protocol"]["agents"]),
            planning(report, agg_fam),
        ]
        if s
    ]
    if report["missing"]:
        agg = report["aggregate"]
        scope = (
            f" the aggregate uses seeds {', '.join(map(str, agg['seeds'])) or 'none'}"
            if agg
            else ""
        )
        out.append(f"{len(report['missing'])} cells are missing or failed;{scope} (see Warnings).")
    return out
