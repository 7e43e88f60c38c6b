"""Actions of the recruitment simulator and the stable error codes of invalid ones."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from clinbench.env.base import coerce_action


class ActionType(str, Enum):
    """The eight action types (names kept from the reference benchmark)."""

    SCREEN_PATIENT = "screen_patient"
    RECONTACT = "recontact"
    ALLOCATE_TO_SITE = "allocate_to_site"
    ADJUST_STRATEGY = "adjust_strategy"
    PLAN_NEXT_PHASE = "plan_next_phase"
    SUMMARIZE_AND_INDEX = "summarize_and_index"
    RETRIEVE_RELEVANT_HISTORY = "retrieve_relevant_history"
    STOP_RECRUITMENT = "stop_recruitment"


ACTION_TYPES: tuple[str, ...] = tuple(a.value for a in ActionType)

#: Valid ``target_phase`` values of ``plan_next_phase``.
PHASES: tuple[str, ...] = ("screening", "conversion", "allocation", "retention", "wrap_up")

#: Strategies that take no site; ``focus_site_<X>`` / ``negotiate_site_<X>`` take one.
GLOBAL_STRATEGIES: tuple[str, ...] = ("increase_outreach", "relax_criteria", "tighten_criteria")
SITE_STRATEGY_PREFIXES: tuple[str, ...] = ("focus_site_", "negotiate_site_")


class ErrorCode(str, Enum):
    """Why an action was invalid. Invalid actions take the day and change nothing."""

    MISSING_PATIENT_ID = "missing_patient_id"
    PATIENT_NOT_FOUND = "patient_not_found"
    PATIENT_NOT_ARRIVED = "patient_not_arrived"
    ALREADY_SCREENED = "already_screened"
    NOT_A_RECONTACT_CANDIDATE = "not_a_recontact_candidate"
    NOT_CONSENTED = "not_consented"
    ALREADY_ENROLLED = "already_enrolled"
    PATIENT_DROPPED = "patient_dropped"
    MISSING_SITE_ID = "missing_site_id"
    SITE_NOT_FOUND = "site_not_found"
    SITE_AT_CAPACITY = "site_at_capacity"
    SITE_UNDER_AUDIT = "site_under_audit"
    SITE_NOT_ACTIVE = "site_not_active"
    INSUFFICIENT_BUDGET = "insufficient_budget"
    REGULATORY_HOLD_ACTIVE = "regulatory_hold_active"
    UNKNOWN_STRATEGY = "unknown_strategy"
    STRATEGY_ALREADY_ACTIVE = "strategy_already_active"
    AMENDMENT_PENDING = "amendment_pending"
    AMENDMENT_LIMIT_REACHED = "amendment_limit_reached"
    INVALID_TARGET_PHASE = "invalid_target_phase"
    MISSING_MEMORY_KEY = "missing_memory_key"
    MISSING_MEMORY_QUERY = "missing_memory_query"
    MEMORY_NOT_FOUND = "memory_not_found"
    INVALID_ARGUMENT = "invalid_argument"


@dataclass(frozen=True, slots=True)
class Action:
    """One day's decision. Only the fields its ``action_type`` needs are read."""

    action_type: ActionType
    patient_id: str | None = None
    site_id: str | None = None
    strategy_change: str | None = None
    target_phase: str | None = None
    plan_summary: str | None = None
    memory_key: str | None = None
    memory_payload: str | None = None
    memory_query: str | None = None
    hypothesis: str | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.action_type, ActionType):
            object.__setattr__(self, "action_type", parse_action_type(self.action_type))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Action:
        """Build from a plain dict with the same keys (unknown keys are an error)."""
        if "action_type" not in data:
            raise ValueError(f"an action needs 'action_type', one of {list(ACTION_TYPES)}")
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"unknown action field(s) {sorted(unknown)}; "
                f"valid: {list(cls.__dataclass_fields__)}"
            )
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, without the fields left unset."""
        out = {k: v for k, v in asdict(self).items() if v is not None}
        out["action_type"] = self.action_type.value
        return out


def parse_action_type(value: Any) -> ActionType:
    """``ActionType`` from its name; anything else is a programming error."""
    try:
        return ActionType(value)
    except ValueError:
        raise ValueError(
            f"unknown action_type {value!r}; valid: {', '.join(ACTION_TYPES)}"
        ) from None


def as_action(action: Action | dict[str, Any]) -> Action:
    """Accept an ``Action`` or a plain dict with the same keys."""
    return coerce_action(action, Action)
