"""What the developer of a program sees at a decision date.

Its own trials (a readout's estimate from the readout month on), the candidate
indications with what it has earned in each, its cash, the catalogue's validity mask,
and the public records of the date (structured, with text for language agents). No
latent effect, toxicity or future outcome is in it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

from clinbench.env.base import FromFields
from clinbench.env.portfolio.calendar import month_label
from clinbench.env.portfolio.evidence import Record


@dataclass(frozen=True)
class IndicationView:
    key: str
    tumour: str
    line: str
    patients: float
    value: float
    #: highest phase read out successfully (0: none)
    earned: int
    #: phases tried so far, and whether a trial is running now
    tried: tuple[int, ...]
    running: bool
    #: the latest own readout here (phase 0 and estimate None: none yet)
    last_phase: int
    last_estimate: float | None
    last_success: bool
    filed: bool
    approved: bool
    #: a new standard of care here is public
    new_standard: bool


@dataclass(frozen=True)
class TrialView:
    id: str
    indication: str
    phase: int
    randomised: bool
    biomarker: bool
    combination: bool
    start: int
    readout: int
    cost: float
    read_out: bool
    estimate: float | None
    success: bool | None


@dataclass(frozen=True, eq=False)
class Observation(FromFields):
    """One decision date of one program (immutable; ``to_dict`` is strict JSON; its keys
    ``program_budget`` and ``evidence`` hold ``budget`` and ``records``, names the
    generic layers use for other things)."""

    task_id: str
    program_id: str
    drug_class: str
    modality: str
    biomarker: bool
    sponsor_size: str
    decision: int
    max_decisions: int
    month: int
    cash: float
    budget: float
    portfolio_cap: int
    indications: tuple[IndicationView, ...]
    trials: tuple[TrialView, ...]
    #: per catalogue entry (``trials.catalogue_for`` of the indications' keys): startable
    #: now on its own (earned, not running, affordable)
    catalogue_mask: tuple[bool, ...]
    records: tuple[Record, ...]
    approvals: int
    last_error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "program_id": self.program_id,
            "drug_class": self.drug_class,
            "modality": self.modality,
            "biomarker": self.biomarker,
            "sponsor_size": self.sponsor_size,
            "decision": self.decision,
            "max_decisions": self.max_decisions,
            "date": month_label(self.month),
            "month": self.month,
            "cash": self.cash,
            "program_budget": self.budget,
            "portfolio_cap": self.portfolio_cap,
            "indications": [asdict(i) | {"tried": list(i.tried)} for i in self.indications],
            "trials": [asdict(t) for t in self.trials],
            "catalogue_mask": list(self.catalogue_mask),
            "evidence": [r.to_dict() for r in self.records],
            "approvals": self.approvals,
            "last_error": self.last_error,
        }

    def summary(self) -> dict[str, float]:
        """Time (the decision index), progress (approvals) and a few scalars for logs."""
        running = sum(1 for t in self.trials if not t.read_out)
        return {
            "time": self.decision,
            "progress": self.approvals,
            "approvals": self.approvals,
            "cash": self.cash,
            "trials": len(self.trials),
            "running": running,
            "best_phase": max((i.earned for i in self.indications), default=0),
        }

    @cached_property
    def indication_keys(self) -> tuple[str, ...]:
        """The indications' keys in order (kept: every macro and check asks for them)."""
        return tuple(i.key for i in self.indications)
