"""Dated evidence records: what the public (and an agent) can know, and from when.

Kinds: ``registry`` (a trial's start with its design, its completion), ``result`` (a
readout's estimate and 95 % interval), ``regulatory`` (designations, filings, approvals,
refusals, a new standard of care), ``sponsor`` (yearly pipeline updates: priorities and
cash) and ``epidemiology`` (patients per indication). Every record carries the month it
became public; a record is visible at a date only from that month on
(:func:`visible`). Registry entries can be posted late and results carry a reporting
delay, and some results a reporting error, as real ones do (``params``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clinbench.env.portfolio.calendar import month_label

KINDS = ("registry", "result", "regulatory", "sponsor", "epidemiology")


@dataclass(frozen=True)
class Record:
    """One public record (immutable; ``fields`` is read-only)."""

    id: str
    month: int
    kind: str
    program: str
    indication: str | None
    fields: Mapping[str, Any]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "date": month_label(self.month),
            "month": self.month,
            "kind": self.kind,
            "program": self.program,
            "indication": self.indication,
            "fields": json.loads(json.dumps(dict(self.fields))),
            "text": self.text,
        }


def make_record(
    rid: str, month: int, kind: str, program: str, indication: str | None,
    fields: dict[str, Any], text: str,
) -> Record:
    if kind not in KINDS:
        raise ValueError(f"unknown record kind {kind!r}; valid: {KINDS}")
    return Record(rid, int(month), kind, program, indication, MappingProxyType(dict(fields)), text)


def visible(records: Iterable[Record], month: int) -> tuple[Record, ...]:
    """The records public at ``month`` (dated at or before it), oldest first."""
    return tuple(sorted((r for r in records if r.month <= month), key=lambda r: (r.month, r.id)))
