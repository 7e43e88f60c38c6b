"""The typed action of one interim look, its error codes and its validation.

Field names are ClinicalTrialEnv's where the concept is the same, so agents written for
it port easily; the differences (nothing is clamped, zero allocation means zero
patients, claims name their arm) are listed in ``docs/environments.md``.

Numbers: a numeric field takes a Python ``int`` or ``float`` (``n_next_cohort`` an
``int``) or a numpy integer or floating scalar of at most 64 bits, which the action
stores as the Python value it holds (``.item()``, exact), so ``np.int64(5)`` and ``5``,
``np.float32(0.25)`` and ``0.25`` play bit-identical trials. A ``bool`` (or ``np.bool_``)
is never a number, and a number must be finite as a float: ``10**400`` is refused like
``inf``. Every refusal is an error code naming the field (``bad_cohort_size``,
``bad_allocation``, ``bad_strictness``; ``invalid_argument`` for a cohort size that is
not an integer or a decision flag that is not a bool), never an exception out of
``step``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

import numpy as np

from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS

ALLOCATION_FIELDS = tuple(f"allocation_{a}" for a in ARMS)
MAX_COHORT = 100
#: The allocations must sum to 1 within this.
SUM_TOL = 1e-6
#: The fields holding a number or a bool: numpy scalars in them are read as Python values.
SCALAR_FIELDS = (
    "n_next_cohort",
    *ALLOCATION_FIELDS,
    "inclusion_criteria_strictness",
    "stop_for_success",
    "stop_for_futility",
)
_PYTHON_SCALARS = (int, float, bool)


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

    def __post_init__(self) -> None:
        # A numpy scalar becomes the Python value it holds (np.int64 -> int, np.float32 ->
        # float, np.bool_ -> bool, all exact), so the simulator and ``to_dict`` see exactly
        # what the equivalent Python action holds. Other values are kept and checked by
        # ``argument_error`` (a longdouble, say, has no exact Python value: refused there).
        values = self.__dict__
        for name in SCALAR_FIELDS:
            v = values[name]
            if isinstance(v, np.generic):
                item = v.item()
                if type(item) in _PYTHON_SCALARS:
                    values[name] = item

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
    """A finite real number, not a bool: an ``int`` beyond float range is not finite."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an int too large for a float (10**400)
        return False


def argument_error(a: TrialAction) -> ErrorCode | None:
    """The first argument of ``a`` of the wrong type or out of its range, or ``None``.

    Never raises: an integer too large for a float is out of range like any other."""
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
