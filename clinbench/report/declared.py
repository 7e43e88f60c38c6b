"""The comparisons a report tests, declared before the data (``report:`` in the config).

Which pairs share a Holm family decides what is significant, so the families are fixed
by the configuration the sweep saved, never chosen after seeing the scores:

- ``primary``: the confirmatory comparisons of each environment family. ``null`` (the
  default): every pair of agents in the family's aggregate. Otherwise a list of
  ``"a vs b"`` entries, where ``*`` stands for every other agent of the family's
  aggregate (``"* vs heuristic"``: each agent against the heuristic), or a mapping from
  family name to such a list.
- ``equivalence_margin``: the margin of the equivalence tests behind "level with", in
  normalised score (on a task: that times the task's reference range).
- ``cross_family``: whether to show an aggregate across families (it is tested for a
  family x pair interaction and labelled exploratory where one is found).

Per-task (exploratory) families always hold every pair of agents that both have cells
on the task.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from clinbench.report.results import ResultsError

#: The equivalence margin when the config declares none, in normalised score.
DEFAULT_MARGIN = 0.05
#: What ``primary: null`` means, as the JSON records it.
ALL_PAIRS = "every pair of agents in the family's aggregate"


@dataclass(frozen=True)
class Declaration:
    """The report's declared families (see the module docstring)."""

    primary: Any = None
    cross_family: bool = False
    margin: float = DEFAULT_MARGIN


def _entries(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(e, str) for e in value):
        raise ResultsError(f"{where} must be a list of 'a vs b' comparisons, got {value!r}")
    for e in value:
        if len(split(e)) != 2:
            raise ResultsError(f"{where}: {e!r} is not of the form 'a vs b'")
    return tuple(value)


def split(entry: str) -> list[str]:
    """``"a vs b"`` -> ``["a", "b"]``."""
    return [part.strip() for part in entry.split(" vs ")]


def declaration(report_config: dict[str, Any] | None) -> Declaration:
    """The declaration of a results folder's saved ``report:`` config (defaults where
    it says nothing, as for folders from before families were declared)."""
    rc = report_config or {}
    primary = rc.get("primary")
    if isinstance(primary, dict):
        primary = {str(k): _entries(v, f"report.primary.{k}") for k, v in primary.items()}
    elif primary is not None:
        primary = _entries(primary, "report.primary")
    margin = rc.get("equivalence_margin", DEFAULT_MARGIN)
    if (
        isinstance(margin, bool)
        or not isinstance(margin, (int, float))
        or not math.isfinite(margin)
        or margin <= 0
    ):
        raise ResultsError(f"report.equivalence_margin must be a positive number, got {margin!r}")
    cross = rc.get("cross_family", False)
    if not isinstance(cross, bool):
        raise ResultsError(f"report.cross_family must be true or false, got {cross!r}")
    return Declaration(primary=primary, cross_family=cross, margin=float(margin))


def members(decl: Declaration, env: str, agents: list[str]) -> tuple[list[tuple[str, str]], Any]:
    """The confirmatory pairs of family ``env`` over its aggregate's ``agents`` (in
    report order, each pair once), and the declaration they came from."""
    entries = decl.primary.get(env) if isinstance(decl.primary, dict) else decl.primary
    if entries is None:
        return list(itertools.combinations(agents, 2)), ALL_PAIRS
    wanted = set()
    for entry in entries:
        a, b = split(entry)
        left = [x for x in agents if x != b] if a == "*" else [a]
        right = [x for x in agents if x != a] if b == "*" else [b]
        for x in left:
            for y in right:
                if x != y and x in agents and y in agents:
                    wanted.add(frozenset((x, y)))
    return [p for p in itertools.combinations(agents, 2) if frozenset(p) in wanted], list(entries)
