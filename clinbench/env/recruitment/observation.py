"""The typed, immutable observation of the recruitment simulator.

Scalars are plain fields; per-patient data is one small array copied per step plus
read-only references to the world's visible arrays, and the list-of-dict views
(``available_patients`` ...) are built only when asked for. That keeps a step cheap
while ``to_dict()`` still gives the reference benchmark's field names as plain JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from clinbench.env.base import FromFields
from clinbench.env.recruitment.world import VisibleWorld, patient_id, site_id

# Patient states (one per patient, always exactly one).
# ENROLLED means in follow-up; COMPLETED patients finished it and count towards E.
NOT_ARRIVED, AVAILABLE, INELIGIBLE, ELIGIBLE, CONSENTED, ENROLLED, DROPPED_OUT, LOST, COMPLETED = (
    range(9)
)
STATE_NAMES = (
    "not_arrived",
    "available",
    "ineligible",
    "eligible",
    "consented",
    "enrolled",
    "dropped_out",
    "lost",
    "completed",
)
# Rows of the per-patient dynamic table (home site is -1 until the patient arrives).
ROW_STATE, ROW_LAST_CONTACT, ROW_RECONTACTS_LEFT, ROW_DEADLINE, ROW_HOME = range(5)


class Funnel(NamedTuple):
    """Patients per state now, plus cumulative screenings."""

    not_arrived: int
    available: int
    ineligible: int
    eligible: int
    consented: int
    enrolled: int
    dropped_out: int
    lost: int
    completed: int
    screened: int


class SiteView(NamedTuple):
    """What the agent may see of a site: exact wait and capacity, empirical outcomes."""

    site_id: str
    wait_days: float
    capacity_remaining: int
    capacity_total: int
    recent_attempts: int
    recent_successes: int
    recent_dropouts: int
    active_enrolled: int
    reported_conversion: float
    under_audit: bool
    focused: bool
    active: bool  # opened (no allocation before); the opening day is not shown


class EventView(NamedTuple):
    """An event of a past day."""

    day: int
    event_type: str
    site_id: str | None
    duration: int


class Costs(NamedTuple):
    """Prices in force today (screening can be dearer during a backlog)."""

    screen: float
    recontact: float
    enrol: float
    strategy: float
    negotiate: float
    amendment: float  # relax / tighten criteria (a protocol amendment)


@dataclass(frozen=True)
class MemoryRecord:
    """An exact snapshot stored by ``summarize_and_index``."""

    key: str
    day: int
    payload: str
    site_attempts: tuple[int, ...]
    site_successes: tuple[int, ...]
    site_dropouts: tuple[int, ...]
    funnel: Funnel
    events: tuple[EventView, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "day": self.day,
            "payload": self.payload,
            "site_attempts": list(self.site_attempts),
            "site_successes": list(self.site_successes),
            "site_dropouts": list(self.site_dropouts),
            "funnel": self.funnel._asdict(),
            "events": [e._asdict() for e in self.events],
        }


@dataclass(frozen=True, eq=False)
class Observation(FromFields):
    """One day's view. Field names follow the reference benchmark where they agree."""

    timestamp: int
    max_steps: int
    task_id: str
    budget_remaining: float
    initial_budget: float
    enrolled_so_far: int
    target_enrollment: int
    funnel: Funnel
    sites: tuple[SiteView, ...]
    costs: Costs
    recent_events: tuple[EventView, ...]
    dropout_rate_7d: float
    uncertainty_level: float
    active_constraints: tuple[str, ...]
    milestones: tuple[tuple[str, int | None], ...]
    current_plan: tuple[str, str, int] | None
    indexed_memory_summary: tuple[tuple[str, int], ...]
    retrieved_memory_context: tuple[MemoryRecord, ...]
    token_usage_so_far: int
    hold_active: bool
    criteria: str
    outreach_active: bool
    pending_negotiations: int
    #: ``relax_criteria`` / ``tighten_criteria`` awaiting approval, else None
    pending_amendment: str | None
    amendments_left: int
    memory_capacity: int
    max_listed: int
    visible: VisibleWorld  # what may be seen of the world (no hidden truth)
    patients: (
        np.ndarray
    )  # (5, pool) int16 copy: state, last contact, recontacts left, deadline, home

    # ---- scalars derived on demand -------------------------------------------------
    @property
    def time_to_deadline_days(self) -> int:
        return self.max_steps - self.timestamp

    @property
    def screening_backlog(self) -> int:
        """Arrived patients not yet screened."""
        return self.funnel.available

    @property
    def active_milestone(self) -> str | None:
        for name, day in self.milestones:
            if day is None:
                return name
        return None

    # ---- fast array access for agents --------------------------------------------
    @cached_property
    def available_idx(self) -> np.ndarray:
        return np.flatnonzero(self.patients[ROW_STATE] == AVAILABLE)

    @cached_property
    def recontact_idx(self) -> np.ndarray:
        return np.flatnonzero(self.patients[ROW_STATE] == ELIGIBLE)

    @cached_property
    def allocation_idx(self) -> np.ndarray:
        return np.flatnonzero(self.patients[ROW_STATE] == CONSENTED)

    def consent_days_left(self, idx: np.ndarray) -> np.ndarray:
        return self.patients[ROW_DEADLINE, idx] - self.timestamp

    def home_site(self, i: int) -> int:
        """The site patient ``i`` came through (-1 before arrival)."""
        return int(self.patients[ROW_HOME, i])

    def days_since_contact(self, idx: np.ndarray) -> np.ndarray:
        return self.timestamp - self.patients[ROW_LAST_CONTACT, idx]

    # ---- list-of-dict views (reference benchmark names) ---------------------------
    def _patient_dict(self, i: int) -> dict[str, Any]:
        w = self.visible
        return {
            "id": patient_id(i),
            "age": int(w.age[i]),
            "prescreen_eligibility": float(w.prescreen_eligibility[i]),
            "prescreen_dropout_risk": float(w.prescreen_dropout[i]),
            "home_site": _site_name(int(self.patients[ROW_HOME, i])),
        }

    def _listed(self, idx: np.ndarray, key: np.ndarray) -> list[int]:
        order = np.lexsort((idx, key))[: self.max_listed]
        return [int(i) for i in idx[order]]

    @cached_property
    def available_patients(self) -> list[dict[str, Any]]:
        """Arrived, unscreened patients, best pre-screen first (at most ``max_listed``)."""
        idx = self.available_idx
        return [
            self._patient_dict(i)
            for i in self._listed(idx, -self.visible.prescreen_eligibility[idx])
        ]

    @cached_property
    def recontact_candidates(self) -> list[dict[str, Any]]:
        """Eligible patients who have not consented, longest without contact first."""
        idx = self.recontact_idx
        since = self.days_since_contact(idx)
        out = []
        for i in self._listed(idx, -since):
            d = self._patient_dict(i)
            d["days_since_contact"] = int(self.timestamp - self.patients[ROW_LAST_CONTACT, i])
            d["recontacts_left"] = int(self.patients[ROW_RECONTACTS_LEFT, i])
            out.append(d)
        return out

    @cached_property
    def allocation_candidates(self) -> list[dict[str, Any]]:
        """Consented patients awaiting allocation, closest consent deadline first."""
        idx = self.allocation_idx
        out = []
        for i in self._listed(idx, self.consent_days_left(idx)):
            d = self._patient_dict(i)
            d["consent_days_left"] = int(self.patients[ROW_DEADLINE, i] - self.timestamp)
            out.append(d)
        return out

    @property
    def site_performance(self) -> dict[str, dict[str, Any]]:
        out = {}
        for s in self.sites:
            d = s._asdict()
            del d["site_id"]
            d["recent_conversion"] = (
                round(s.recent_successes / s.recent_attempts, 4) if s.recent_attempts else None
            )
            out[s.site_id] = d
        return out

    @property
    def current_funnel(self) -> dict[str, int]:
        return self.funnel._asdict()

    def summary(self) -> dict[str, float]:
        """Time (the day), progress (net enrolled), the funnel and the working memory's
        status, for logs, milestones and the learners' inputs (which read nothing else
        of an observation but the macro features, so a batched core can feed them)."""
        f = self.funnel
        retrieved = self.retrieved_memory_context
        return {
            "time": self.timestamp,
            "progress": self.enrolled_so_far,
            "enrolled": self.enrolled_so_far,
            "target": self.target_enrollment,
            "budget_remaining": self.budget_remaining,
            "screened": f.screened,
            "ineligible": f.ineligible,
            "consented": f.consented,
            "dropped_out": f.dropped_out,
            "completed": f.completed,
            "horizon": self.max_steps,
            "memory_slots": len(self.indexed_memory_summary),
            "retrieved_day": retrieved[0].day if retrieved else -1,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data with the reference benchmark's field names."""
        plan = self.current_plan
        return {
            "timestamp": self.timestamp,
            "max_steps": self.max_steps,
            "time_to_deadline_days": self.time_to_deadline_days,
            "task_id": self.task_id,
            "budget_remaining": self.budget_remaining,
            "initial_budget": self.initial_budget,
            "enrolled_so_far": self.enrolled_so_far,
            "target_enrollment": self.target_enrollment,
            "current_funnel": self.current_funnel,
            "available_patients": self.available_patients,
            "recontact_candidates": self.recontact_candidates,
            "allocation_candidates": self.allocation_candidates,
            "site_performance": self.site_performance,
            "costs": self.costs._asdict(),
            "recent_events": [e._asdict() for e in self.recent_events],
            "screening_backlog": self.screening_backlog,
            "dropout_rate_7d": self.dropout_rate_7d,
            "uncertainty_level": self.uncertainty_level,
            "active_constraints": list(self.active_constraints),
            "milestones": {name: day for name, day in self.milestones},
            "active_milestone": self.active_milestone,
            "current_plan": (
                None
                if plan is None
                else {"target_phase": plan[0], "plan_summary": plan[1], "day": plan[2]}
            ),
            "indexed_memory_summary": [
                {"key": k, "day": d} for k, d in self.indexed_memory_summary
            ],
            "retrieved_memory_context": [r.to_dict() for r in self.retrieved_memory_context],
            "token_usage_so_far": self.token_usage_so_far,
            "hold_active": self.hold_active,
            "criteria": self.criteria,
            "outreach_active": self.outreach_active,
            "pending_negotiations": self.pending_negotiations,
            "pending_amendment": self.pending_amendment,
            "amendments_left": self.amendments_left,
            "memory_capacity": self.memory_capacity,
        }


def _site_name(s: int) -> str | None:
    return site_id(s) if s >= 0 else None
