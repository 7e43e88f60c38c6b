"""Input validation of the recruitment simulator: action arguments and task parameters.

No input may crash ``step`` (spec section 11, "No input crashes step"): a malformed
argument value (a numpy array, bytes, a number, a huge string, a confidence that is not
finite as a float) is an invalid action like any other, answered with
``invalid_argument`` before a handler reads it. Task parameters are checked once, when
a task is built, so that an override such as ``target=0`` or ``n_sites=27`` fails at
``make()`` with a message naming the parameter and its range instead of dividing by
zero (or worse, running) later on.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from operator import attrgetter
from typing import Any, NamedTuple

from clinbench.env.recruitment import tasks
from clinbench.env.recruitment.actions import Action, ErrorCode
from clinbench.env.recruitment.tasks import EVENT_TYPES, TaskParams

# ---------------------------------------------------------------- action arguments
#: Longest text accepted in any action field (ids are at most 12 characters).
MAX_TEXT_CHARS = 4096
#: The action fields that hold text.
TEXT_FIELDS: tuple[str, ...] = (
    "patient_id",
    "site_id",
    "strategy_change",
    "target_phase",
    "plan_summary",
    "memory_key",
    "memory_payload",
    "memory_query",
    "hypothesis",
)
_texts = attrgetter(*TEXT_FIELDS)


def argument_error(action: Action) -> ErrorCode | None:
    """``INVALID_ARGUMENT`` if a set field of ``action`` holds a malformed value, else None.

    A text field must be a ``str`` (exactly: numpy ``str_`` and other subclasses are
    refused) of at most ``MAX_TEXT_CHARS`` characters; ``confidence`` a real number other
    than a bool (numpy scalars included) that is finite as a float: ``nan``, ``inf`` and
    an integer too large for a float (``10**400``) are refused. Nothing is converted, and
    no value is truth-tested, so this never raises. It runs on every step: the usual
    action (mostly ``None`` fields, short strings) costs well under a microsecond.
    """
    try:
        for value in _texts(action):
            if value is not None and (type(value) is not str or len(value) > MAX_TEXT_CHARS):
                return ErrorCode.INVALID_ARGUMENT
        c = action.confidence
        if c is None:
            return None
        if type(c) is not float and (isinstance(c, bool) or not isinstance(c, numbers.Real)):
            return ErrorCode.INVALID_ARGUMENT
        # an int beyond float range raises OverflowError here: refused below
        return None if math.isfinite(c) else ErrorCode.INVALID_ARGUMENT
    except Exception:  # noqa: BLE001 - never raise: ints beyond float range, __float__ that misbehaves
        return ErrorCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- task parameters
WORLD_TYPES = tasks.WORLD_TYPES


class Range(NamedTuple):
    """The allowed values of one task parameter.

    ``kind`` is ``int``, ``float`` or ``prob`` (a float in [0, 1]) with bounds ``lo`` and
    ``hi`` (a bound may name another, already checked, parameter: ``hi="horizon"``), or
    ``int_pair`` (a ``(min, max)`` pair of ints with ``lo <= min <= max <= hi``), ``str``,
    ``world_types`` or ``event_rates`` (checked by their own rules, bounds unused).
    """

    kind: str
    lo: float | str = -math.inf
    hi: float | str = math.inf
    lo_inclusive: bool = True
    hi_inclusive: bool = True


_INF = math.inf
_PROB = Range("prob", 0.0, 1.0)
_COST = Range("float", 0.0, _INF, hi_inclusive=False)  # finite and >= 0
_MULT = Range("float", 0.0, 100.0)
_DAYS = Range("int", 0, 365)

#: Every field of ``TaskParams`` and its allowed values (a test keeps this complete).
#: Parameters that others refer to (``n_sites``, ``horizon``) come first.
PARAM_RANGES: dict[str, Range] = {
    "name": Range("str"),
    "description": Range("str"),
    "n_sites": Range("int", 1, 26),  # site letters A..Z
    "horizon": Range("int", 1, 3650),
    "pool_size": Range("int", 1, 100_000),
    "budget": Range("float", 0.0, _INF, lo_inclusive=False, hi_inclusive=False),
    "target": Range("int", 1, 100_000),
    "screen_cost": _COST,
    "recontact_cost": _COST,
    "enrol_cost": _COST,
    "strategy_cost": _COST,
    "prescreen_noise_sd": Range("float", 0.0, 1.0),
    "dropout_base": Range("float", 0.0, 1.0),  # 0: nobody drops out
    "site_capacity": Range("int", 0, 100_000),
    "world_types": Range("world_types"),
    "biased_sites": Range("int_pair", 0, "n_sites"),
    "event_rates": Range("event_rates"),
    "consent_window": _DAYS,
    "cooloff_days": _DAYS,
    "cooloff_decay": _PROB,
    "max_recontacts": Range("int", 0, 100),
    "loss_on_failed_allocation": _PROB,
    "wait_penalty": _COST,  # any finite >= 0 (huge: allocations fail)
    "dropout_world_multiplier": _MULT,
    "outreach_days": _DAYS,
    "outreach_arrival_multiplier": _MULT,
    "outreach_consent_multiplier": _MULT,
    "focus_days": _DAYS,
    "negotiate_delay": _DAYS,
    "negotiate_slots": Range("int", 0, 100_000),
    "negotiate_cost_multiplier": _MULT,
    "relax_eligibility_multiplier": _MULT,
    "relax_dropout_multiplier": _MULT,
    "tighten_eligibility_multiplier": _MULT,
    "tighten_dropout_multiplier": _MULT,
    "memory_capacity": Range("int", 1, 10_000),
    "history_window": _DAYS,
    "max_listed": Range("int", 0, 100_000),
    # sites, follow-up and amendments (task version 2)
    "followup_days": _DAYS,
    "site_rate_mean": Range("float", 0.0, 50.0, lo_inclusive=False),  # patients/day per site
    "site_rate_cv": Range("float", 0.0, 3.0),
    "activation_span": Range("int", 0, "horizon"),
    "never_enrol_prob": _PROB,
    "other_site_conversion": _PROB,  # conversion multiplier outside the home site
    "amendment_cost_multiplier": _MULT,
    "amendment_delay": Range("int_pair", 0, 365),
    "max_amendments": Range("int", 0, 20),
}


def check_params(params: TaskParams) -> None:
    """Raise ``ValueError`` naming the first parameter of ``params`` out of its range."""
    for name, rng in PARAM_RANGES.items():
        _check(name, getattr(params, name), rng, params)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_finite_real(v: Any) -> bool:
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except (OverflowError, TypeError, ValueError):  # e.g. an int beyond float range
        return False


def _bound(b: float | str, params: TaskParams) -> float:
    return getattr(params, b) if isinstance(b, str) else b


def _interval(rng: Range, lo: float, hi: float) -> str:
    return f"{'[' if rng.lo_inclusive else '('}{lo}, {hi}{']' if rng.hi_inclusive else ')'}"


def _fail(name: str, what: str, value: Any) -> None:
    raise ValueError(f"task parameter {name!r} must be {what}, got {value!r}")


def _check(name: str, value: Any, rng: Range, params: TaskParams) -> None:
    kind = rng.kind
    if kind == "str":
        if not isinstance(value, str):
            _fail(name, "a string", value)
    elif kind in ("int", "float", "prob"):
        lo, hi = _bound(rng.lo, params), _bound(rng.hi, params)
        what = f"{'an integer' if kind == 'int' else 'a float'} in {_interval(rng, lo, hi)}"
        ok = _is_int(value) if kind == "int" else _is_finite_real(value)
        if not ok or not (
            (lo <= value if rng.lo_inclusive else lo < value)
            and (value <= hi if rng.hi_inclusive else value < hi)
        ):
            _fail(name, what, value)
    elif kind == "int_pair":
        lo, hi = _bound(rng.lo, params), _bound(rng.hi, params)
        what = f"a (min, max) pair of integers with {lo} <= min <= max <= {hi}"
        if not (
            isinstance(value, (tuple, list))
            and len(value) == 2
            and _is_int(value[0])
            and _is_int(value[1])
            and lo <= value[0] <= value[1] <= hi
        ):
            _fail(name, what, value)
    elif kind == "world_types":
        what = f"a non-empty sequence of world types from {list(WORLD_TYPES)}"
        if (
            not isinstance(value, (tuple, list))
            or not value
            or not all(isinstance(t, str) and t in WORLD_TYPES for t in value)
        ):
            _fail(name, what, value)
    elif kind == "event_rates":
        if not isinstance(value, Mapping):
            _fail(name, f"a mapping of event types from {list(EVENT_TYPES)} to rates", value)
        for event, rate in value.items():
            if not isinstance(event, str) or event not in EVENT_TYPES:
                _fail(name, f"keyed by event types from {list(EVENT_TYPES)}", event)
            if not (_is_finite_real(rate) and 0.0 <= rate <= 1.0):
                raise ValueError(
                    f"task parameter {name!r} must map each event type to a daily rate in"
                    f" [0, 1], got {rate!r} for {event!r}"
                )
    else:  # pragma: no cover - a mistake in PARAM_RANGES itself
        raise AssertionError(f"unknown kind {kind!r} of task parameter {name!r}")
