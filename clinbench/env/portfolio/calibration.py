"""The rates the calibration targets are stated in, measured on logged programs.

Counted per drug-indication pair, as BIO / Biomedtracker count phase transitions: a pair
that started Phase k either started Phase k+1 (a Phase III: was filed; a filing: was
approved) or did not. The likelihood of approval (LOA) is the share of pairs that
started Phase I and were approved; biomarker programs are drugs with a selection
biomarker. Years from Phase I to approval are averaged over approved pairs.
"""

from __future__ import annotations

from collections.abc import Iterable

from clinbench.env.portfolio.history import ProgramHistory


def pair_outcomes(history: ProgramHistory) -> dict[str, dict[str, object]]:
    """Per indication the program tried: phases started, first Phase I month, filed,
    approved, and the approval month."""
    out: dict[str, dict[str, object]] = {}
    for t in history.trials:
        d = t.design
        rec = out.setdefault(d.indication, {"phases": set(), "phase1_month": None,
                                            "filed": False, "approval_month": None})
        rec["phases"].add(d.phase)  # type: ignore[union-attr]
        if d.phase == 1:
            first = rec["phase1_month"]
            rec["phase1_month"] = t.start_month if first is None else min(first, t.start_month)
        if d.phase == 3 and t.outcome.success:
            rec["filed"] = True
        a = t.approval_month()
        if a is not None:
            rec["approval_month"] = a if rec["approval_month"] is None else min(
                a, rec["approval_month"])
    return out


def _share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


def pair_rates(histories: Iterable[ProgramHistory]) -> dict[str, float]:
    """Transition rates, LOA (all, biomarker, none), their ratio and years to approval."""
    n = {k: 0 for k in ("p1", "p2", "p3", "filed", "approved")}
    bm = {True: [0, 0], False: [0, 0]}  # biomarker -> [phase I pairs, approved]
    years = []
    for h in histories:
        for rec in pair_outcomes(h).values():
            phases = rec["phases"]
            approved = rec["approval_month"] is not None
            if 1 in phases:
                n["p1"] += 1
                bm[h.program.biomarker][0] += 1
                n["p2"] += 2 in phases
                bm[h.program.biomarker][1] += approved
                if approved:
                    years.append((rec["approval_month"] - rec["phase1_month"]) / 12.0)
            if 2 in phases:
                n.setdefault("p2_all", 0)
                n["p2_all"] += 1
                n.setdefault("p2_to_3", 0)
                n["p2_to_3"] += 3 in phases
            if 3 in phases:
                n.setdefault("p3_all", 0)
                n["p3_all"] += 1
                n["filed"] += rec["filed"]
            if rec["filed"]:
                n["approved"] += approved
    loa_bm = _share(bm[True][1], bm[True][0])
    loa_no = _share(bm[False][1], bm[False][0])
    return {
        "phase1_to_2": _share(n["p2"], n["p1"]),
        "phase2_to_3": _share(n.get("p2_to_3", 0), n.get("p2_all", 0)),
        "phase3_to_filing": _share(n["filed"], n.get("p3_all", 0)),
        "filing_to_approval": _share(n["approved"], n["filed"]),
        "loa_phase1": _share(bm[True][1] + bm[False][1], n["p1"]),
        "loa_biomarker": loa_bm,
        "loa_no_biomarker": loa_no,
        "biomarker_loa_ratio": loa_bm / loa_no if loa_no else float("nan"),
        "years_phase1_to_approval": sum(years) / len(years) if years else float("nan"),
        "pairs_phase1": float(n["p1"]),
        "approvals": float(len(years)),
    }
