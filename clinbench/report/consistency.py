"""Exploratory results that disagree with a confirmatory one, listed rather than hidden.

A reader who sees "A > B" in a per-task table while the confirmatory family says
"B > A" (or a post-hoc that calls significant what the confirmatory test did not) must
be told which one the report's claims rest on. Two kinds are listed:

- *opposite*: an exploratory family finds the pair significant in the direction
  opposite to a significant confirmatory result (per-task families of the family's
  tasks, the cross-family aggregate, the family's ranking post-hoc);
- *disagrees*: the family's ranking post-hoc (the same tasks and agents, another test)
  decides the pair differently: significant where the confirmatory test is not, or the
  reverse.

A per-task family finding a difference the aggregate does not is not a disagreement
(tasks may differ); only a reversal is.
"""

from __future__ import annotations

from typing import Any

from clinbench.report.pairs import winner


def outcome(pair: dict[str, Any] | None) -> str:
    """``a > b``, ``not significant`` or why there is no test."""
    if pair is None:
        return "not compared"
    if pair.get("significant"):
        return " > ".join(winner(pair))
    if pair.get("status", "tested") != "tested":
        return pair.get("note") or pair["status"]
    return "not significant"


def _lookup(pairs: list[dict[str, Any]]) -> dict[frozenset, dict[str, Any]]:
    return {frozenset((p["a"], p["b"])): p for p in pairs}


def disagreements(
    confirmatory: dict[str, Any],
    exploratory: list[dict[str, Any]],
    ranking: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Every disagreement of ``exploratory`` families and the ``ranking`` post-hoc with
    the ``confirmatory`` family (see the module docstring)."""
    out = []
    posthoc = _lookup((ranking or {}).get("posthoc", {}).get("pairs", []))
    for c in confirmatory["pairs"]:
        key = frozenset((c["a"], c["b"]))
        for fam in exploratory:
            e = _lookup(fam["pairs"]).get(key)
            if e and c["significant"] and e["significant"] and winner(e) != winner(c):
                out.append(_row(confirmatory, c, fam["name"], e, "opposite"))
        e = posthoc.get(key)
        if e is None or c["status"] == "too few seeds":
            continue
        if c["significant"] and e["significant"] and winner(e) != winner(c):
            out.append(_row(confirmatory, c, "ranking post-hoc", e, "opposite"))
        elif c["significant"] != e["significant"]:
            out.append(_row(confirmatory, c, "ranking post-hoc", e, "disagrees"))
    return out


def _row(
    fam: dict[str, Any], c: dict[str, Any], where: str, e: dict[str, Any], kind: str
) -> dict[str, Any]:
    return {
        "confirmatory": fam["name"],
        "exploratory": where,
        "a": c["a"],
        "b": c["b"],
        "kind": kind,
        "confirmatory_result": outcome(c),
        "exploratory_result": outcome(e),
    }
