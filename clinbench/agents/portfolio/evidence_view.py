"""What the offline predictors read from an episode's public records."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from clinbench.env.portfolio.evidence import Record
from clinbench.env.portfolio.trials import TrialDesign


@dataclass(frozen=True)
class PublicView:
    """Per indication: patients, latest result, phases registered; the registered designs."""

    patients: dict[str, float]
    #: indication -> (phase, success, estimate, month) of its latest public result
    latest: dict[str, tuple[int, bool, float, int]]
    registered: dict[str, set[int]]
    #: (registry month, design) of every trial registered so far
    designs: list[tuple[int, TrialDesign]]
    new_standard: set[str]
    #: (completion month, design) of every trial whose completion is public
    completed: list[tuple[int, TrialDesign]]


def read_records(records: Iterable[Record]) -> PublicView:
    patients: dict[str, float] = {}
    latest: dict[str, tuple[int, bool, float, int]] = {}
    registered: dict[str, set[int]] = {}
    designs: list[tuple[int, TrialDesign]] = []
    new_standard: set[str] = set()
    by_trial: dict[str, TrialDesign] = {}
    completed: list[tuple[int, TrialDesign]] = []
    for r in sorted(records, key=lambda r: (r.month, r.id)):
        f, ind = r.fields, r.indication
        if r.kind == "epidemiology" and ind is not None:
            patients[ind] = float(f["patients_thousands"])
        elif r.kind == "result" and ind is not None:
            latest[ind] = (int(f["phase"]), bool(f["success"]), float(f["estimate"]), r.month)
        elif r.kind == "registry" and f.get("status") == "recruiting" and ind is not None:
            registered.setdefault(ind, set()).add(int(f["phase"]))
            d = TrialDesign(ind, int(f["phase"]), bool(f["randomised"]), bool(f["biomarker"]),
                            bool(f["combination"]))
            designs.append((r.month, d))
            by_trial[str(f["trial"])] = d
        elif r.kind == "registry" and f.get("status") == "completed":
            d = by_trial.get(str(f["trial"]))
            if d is not None:
                completed.append((r.month, d))
        elif r.kind == "regulatory" and f.get("event") == "new_standard" and ind is not None:
            new_standard.add(ind)
    return PublicView(patients, latest, registered, designs, new_standard, completed)
