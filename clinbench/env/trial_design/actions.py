"""The typed action of one interim look, its error codes and its validation.

Field names are ClinicalTrialEnv's where the concept is the same, so agents written for
it port easily; the differences (nothing is clamped, zero allocation means zero
patients, claims name their arm) are listed in ``docs/environments.md``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS

ALLOCATION_FIELDS = tuple(f"allocation_{a}" for a in ARMS)
MAX_COHORT = 100
#: The allocations must sum to 1 within this.
SUM_TOL = 1e-6


class ErrorCode(StrEnum):
    """Why an action was refused (it then changes nothing and costs nothing)."""

    INVALID_ARGUMENT = "invalid_argument"
    BAD_COHORT_SIZE = "bad_cohort_size"
    BAD_ALLOCATION = "bad_allocation"
    ALLOCATION_TO_DROPPED_ARM = "allocation_to_dropped_arm"
    CANNOT_DROP = "cannot_drop"
    BAD_STRICTNESS = "bad_strictness"
    CONFLICTING_DECISIONS = "conflicting_decisions"
    UNKNOWN_ARM = "unknown_arm"
    #: the protocol forbids a success claim for an arm that does not cross its boundary
    BOUNDARY_NOT_CROSSED = "boundary_not_crossed"
    OVER_BUDGET = "over_budget"
    OVER_DURATION = "over_duration"


@dataclass(frozen=True)
class TrialAction:
    """What the trial statistician decides at one look.

    Either a decision (``stop_for_success`` with ``success_arm``, or
    ``stop_for_futility``; the other fields are then ignored) or the next cohort:
    ``n_next_cohort`` patients (0..100) split by the allocations (``None``: equal over
    the active arms), after dropping ``drop_arm`` and setting the inclusion strictness
    (``None``: unchanged).
    """

    n_next_cohort: int = 0
    allocation_control: float | None = None
    allocation_low: float | None = None
    allocation_mid: float | None = None
    allocation_high: float | None = None
    drop_arm: str | None = None
    inclusion_criteria_strictness: float | None = None
    stop_for_success: bool = False
    success_arm: str | None = None
    stop_for_futility: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialAction:
        """Build from a plain dict; an unknown key is a ``ValueError``."""
        names = {f.name for f in fields(cls)}
        bad = sorted(set(data) - names)
        if bad:
            raise ValueError(f"unknown action field(s) {bad}; valid: {sorted(names)}")
        return cls(**data)

    @property
    def allocation(self) -> tuple[float | None, ...]:
        # the fields by name (ALLOCATION_FIELDS' order): read every look, several times
        return (
            self.allocation_control,
            self.allocation_low,
            self.allocation_mid,
            self.allocation_high,
        )

    @property
    def is_decision(self) -> bool:
        return bool(self.stop_for_success) or bool(self.stop_for_futility)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def argument_error(a: TrialAction) -> ErrorCode | None:
    """The first argument of ``a`` of the wrong type or out of its range, or ``None``."""
    if not (_is_bool(a.stop_for_success) and _is_bool(a.stop_for_futility)):
        return ErrorCode.INVALID_ARGUMENT
    if a.stop_for_success and a.stop_for_futility:
        return ErrorCode.CONFLICTING_DECISIONS
    if a.stop_for_success:
        if not isinstance(a.success_arm, str) or a.success_arm not in DOSE_ARMS:
            return ErrorCode.UNKNOWN_ARM
        return None
    if a.stop_for_futility:
        return None
    n = a.n_next_cohort
    if not isinstance(n, int) or isinstance(n, bool):
        return ErrorCode.INVALID_ARGUMENT
    if not 0 <= n <= MAX_COHORT:
        return ErrorCode.BAD_COHORT_SIZE
    s = a.inclusion_criteria_strictness
    if s is not None and (not _is_number(s) or not 0.0 <= s <= 1.0):
        return ErrorCode.BAD_STRICTNESS
    if a.drop_arm is not None and (not isinstance(a.drop_arm, str) or a.drop_arm not in ARMS):
        return ErrorCode.UNKNOWN_ARM
    alloc = a.allocation
    given = [v for v in alloc if v is not None]
    if given and len(given) != len(alloc):
        return ErrorCode.BAD_ALLOCATION  # all four or none
    if any(not _is_number(v) or v < 0 for v in given):
        return ErrorCode.BAD_ALLOCATION
    return None
