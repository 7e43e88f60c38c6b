"""Task-parameter validation of the dose-finding tasks, run once at ``make()``.

An override such as ``budget=0`` or ``alpha=0.7`` fails with a message naming the
parameter and its range instead of dividing by zero (or running a trial whose numbers
mean nothing) later on.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from clinbench.env.trial_design.tasks import TaskParams

#: name -> (low, high, low inclusive, high inclusive); integers where the field is one.
PARAM_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "base": (0.0, 1.0, True, False),
    "emax": (0.0, 1.0, True, True),
    "ed50": (0.0, math.inf, False, False),
    "hill": (0.0, 10.0, False, True),
    "ae0": (0.0, 1.0, True, False),
    "ae_slope": (0.0, 1.0, True, True),
    "ae_threshold": (0.0, 1.0, False, False),
    "mcid": (0.0, 1.0, False, False),
    "budget": (0.0, math.inf, False, False),
    "max_weeks": (0.0, math.inf, False, False),
    "max_looks": (1, 100, True, True),
    "cost_base": (0.0, math.inf, False, False),
    "cost_strictness": (0.0, math.inf, True, False),
    "look_cost": (0.0, math.inf, True, False),
    "look_weeks": (0.0, math.inf, True, False),
    "enrol_rate": (0.0, math.inf, False, False),
    "emax_jitter": (0.0, 2.0, True, True),
    "ed50_jitter": (0.0, 2.0, True, True),
    "ae_jitter": (0.0, 2.0, True, True),
    "unsafe_factor": (0.0, 100.0, True, True),
    "weak_factor": (0.0, 1.0, True, True),
    "kappa0": (0.0, math.inf, False, False),
    "kappa_strictness": (0.0, math.inf, True, False),
    "alpha": (0.0, 0.5, False, False),
    "safety_prob": (0.5, 1.0, True, False),
    "safety_min_n": (0, 10_000, True, True),
    "futility_pp": (0.0, 1.0, True, True),
    "cost_weight": (0.0, 0.5, True, True),
    "time_weight": (0.0, 0.5, True, True),
    "unsafe_penalty": (0.0, math.inf, True, False),
}
_INTEGERS = frozenset({"max_looks", "safety_min_n"})


def check_params(params: TaskParams) -> None:
    """Raise ``ValueError`` naming the first parameter of ``params`` out of its range."""
    for name, (lo, hi, lo_in, hi_in) in PARAM_RANGES.items():
        v = getattr(params, name)
        kind = "an integer" if name in _INTEGERS else "a number"
        ok_type = _is_int(v) if name in _INTEGERS else _is_real(v)
        inside = ok_type and (v >= lo if lo_in else v > lo) and (v <= hi if hi_in else v < hi)
        if not inside:
            interval = f"{'[' if lo_in else '('}{lo}, {hi}{']' if hi_in else ')'}"
            raise ValueError(f"task parameter {name!r} must be {kind} in {interval}, got {v!r}")
    doses = params.doses
    if not (
        isinstance(doses, tuple)
        and len(doses) == 3
        and all(_is_real(d) and d > 0 for d in doses)
        and list(doses) == sorted(set(doses))
    ):
        raise ValueError(
            f"task parameter 'doses' must be 3 increasing positive numbers, got {doses!r}"
        )
    mix = params.scenario_mix
    if not (
        isinstance(mix, tuple)
        and len(mix) == 4
        and all(_is_real(m) and m >= 0 for m in mix)
        and abs(sum(mix) - 1.0) < 1e-9
    ):
        raise ValueError(
            "task parameter 'scenario_mix' must be 4 non-negative numbers summing to 1 "
            f"(effective, null, unsafe_high, weak), got {mix!r}"
        )
    if params.cost_weight + params.time_weight >= 1.0:
        raise ValueError("cost_weight + time_weight must be below 1 (efficiency stays positive)")


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except (OverflowError, TypeError, ValueError):
        return False
