"""The online action: a portfolio of trials to start now, or stopping the program.

``PortfolioAction(trials=(...), stop=False)``: ``trials`` is a list or tuple of
:class:`~clinbench.env.portfolio.trials.TrialDesign` or dicts with ``indication``
(str), ``phase`` (int 1-3) and optionally the bool flags ``randomised``,
``biomarker``, ``combination`` (default False). A numpy integer phase or numpy bool
flag counts as its Python value; a bool is never a phase, a float never a phase, and
``10**400`` is out of range like 4. Validation never raises: it returns an error code
and a message naming what is wrong, and the environment then changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

import numpy as np

from clinbench.env.portfolio.trials import DESIGN_FLAGS, TrialDesign


class ErrorCode(StrEnum):
    INVALID_ARGUMENT = "invalid_argument"
    MALFORMED_PORTFOLIO = "malformed_portfolio"
    UNKNOWN_INDICATION = "unknown_indication"
    BAD_PHASE = "bad_phase"
    OVERSIZE_PORTFOLIO = "oversize_portfolio"
    CONFLICTING_DECISIONS = "conflicting_decisions"
    DESIGN_NOT_ALLOWED = "design_not_allowed"
    NOT_EARNED = "not_earned"
    ALREADY_RUNNING = "already_running"
    INDICATION_FILED = "indication_filed"
    OVER_BUDGET = "over_budget"


@dataclass(frozen=True)
class PortfolioAction:
    """Trials to start at this decision date, or ``stop=True`` to end the program."""

    trials: Any = ()
    stop: Any = False

    def to_dict(self) -> dict[str, Any]:
        trials = self.trials if isinstance(self.trials, (list, tuple)) else ()
        return {
            "trials": [t.to_dict() if isinstance(t, TrialDesign) else t for t in trials],
            "stop": self.stop,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PortfolioAction:
        """The action of ``to_dict``'s form: well-formed entries become designs, so the
        round trip gives the same action; anything else is kept for the environment to
        refuse with its reason."""
        names = {f.name for f in fields(cls)}
        bad = sorted(set(data) - names)
        if bad:
            raise ValueError(f"unknown action field(s) {bad}; valid: {sorted(names)}")
        trials = data.get("trials", ())
        if isinstance(trials, (list, tuple)):
            data = {**data, "trials": tuple(_as_design(t) for t in trials)}
        return cls(**data)


@dataclass(frozen=True)
class Refusal:
    """Why an action cannot be played: an error code and a message naming the culprit."""

    code: ErrorCode
    message: str


def as_action(action: Any) -> PortfolioAction | Refusal:
    """The action, from itself or its dict form; a refusal for anything else."""
    if isinstance(action, PortfolioAction):
        return action
    if isinstance(action, dict):
        try:
            return PortfolioAction.from_dict(action)
        except ValueError as e:
            return Refusal(ErrorCode.INVALID_ARGUMENT, str(e))
    kind = type(action).__name__
    return Refusal(ErrorCode.INVALID_ARGUMENT, f"an action is a PortfolioAction or dict: {kind}")


def _flag(v: Any) -> bool | None:
    if isinstance(v, np.bool_):
        return bool(v)
    return v if isinstance(v, bool) else None


def _phase(v: Any) -> int | None | str:
    """The phase as an int; ``None`` for a wrong type; ``"range"`` when out of 1-3."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, np.integer):
        v = int(v)
    if not isinstance(v, int):
        return None
    return v if 1 <= v <= 3 else "range"


def parse_design(entry: Any, indications: tuple[str, ...]) -> TrialDesign | Refusal:
    """One portfolio entry as a well-typed design of a known indication."""
    bad = ErrorCode.INVALID_ARGUMENT
    if isinstance(entry, TrialDesign):
        entry = entry.to_dict()
    if not isinstance(entry, dict):
        kind = type(entry).__name__
        return Refusal(ErrorCode.MALFORMED_PORTFOLIO,
                       f"a portfolio entry is a TrialDesign or a dict, not {kind}")
    unknown = sorted(map(str, set(entry) - {"indication", "phase", *DESIGN_FLAGS}))
    missing = sorted({"indication", "phase"} - set(entry))
    if unknown or missing:
        return Refusal(ErrorCode.MALFORMED_PORTFOLIO,
                       f"portfolio entry {entry!r}: unknown key(s) {unknown}, missing {missing}")
    ind = entry["indication"]
    if not isinstance(ind, str):
        return Refusal(bad, f"indication must be a string, got {ind!r}")
    if ind not in indications:
        return Refusal(ErrorCode.UNKNOWN_INDICATION,
                       f"unknown indication {ind!r}; valid: {', '.join(indications)}")
    phase = _phase(entry["phase"])
    if phase is None:
        return Refusal(bad, f"phase must be an integer, got {entry['phase']!r:.40}")
    if phase == "range":
        return Refusal(ErrorCode.BAD_PHASE, f"phase must be 1, 2 or 3, got {entry['phase']!r:.40}")
    flags = {}
    for name in DESIGN_FLAGS:
        f = _flag(entry.get(name, False))
        if f is None:
            return Refusal(bad, f"{name} must be a bool, got {entry[name]!r:.40}")
        flags[name] = f
    return TrialDesign(ind, phase, **flags)


def _as_design(entry: Any) -> Any:
    """A well-formed dict entry as its design (the indication is checked later); any
    other entry as it is."""
    if isinstance(entry, dict) and isinstance(entry.get("indication"), str):
        d = parse_design(entry, (entry["indication"],))
        return d if isinstance(d, TrialDesign) else entry
    return entry


def parse_portfolio(
    action: PortfolioAction, indications: tuple[str, ...], cap: int
) -> tuple[TrialDesign, ...] | Refusal:
    """The designs of ``action`` checked for form (not yet against the program's state)."""
    stop = _flag(action.stop)
    if stop is None:
        return Refusal(ErrorCode.INVALID_ARGUMENT, f"stop must be a bool, got {action.stop!r:.40}")
    trials = action.trials
    if not isinstance(trials, (list, tuple)):
        kind = type(trials).__name__
        return Refusal(ErrorCode.INVALID_ARGUMENT, f"trials must be a list or tuple, not {kind}")
    if stop and trials:
        return Refusal(ErrorCode.CONFLICTING_DECISIONS, "stop=True with trials: one or the other")
    if len(trials) > cap:
        return Refusal(ErrorCode.OVERSIZE_PORTFOLIO,
                       f"{len(trials)} trials; at most {cap} per decision")
    out: list[TrialDesign] = []
    for entry in trials:
        d = parse_design(entry, indications)
        if isinstance(d, Refusal):
            return d
        out.append(d)
    if len(set(out)) != len(out):
        return Refusal(ErrorCode.MALFORMED_PORTFOLIO, "the portfolio lists a trial twice")
    pairs = [(d.indication, d.phase) for d in out]
    if len(set(pairs)) != len(pairs):
        return Refusal(ErrorCode.ALREADY_RUNNING, "two trials of the same indication and phase")
    return tuple(out)
