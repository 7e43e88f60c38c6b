"""The date-gated retrieval tools of the LLM scaffold: search, fetch, summarise.

Built from the records a program has and the decision date, the tools answer only from
records dated at or before that date: a later record is invisible to every call,
including ``get_record`` by its id (which then answers as for an unknown id). The gate
is applied when the tools are built, so no argument can reach past it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from clinbench.env.portfolio.calendar import month_label
from clinbench.env.portfolio.evidence import KINDS, Record, visible

MAX_RESULTS = 50


class EvidenceTools:
    """``search_evidence``, ``get_record`` and ``program_summary`` at one decision date."""

    def __init__(self, records: Iterable[Record], decision_month: int):
        self.decision_month = int(decision_month)
        self._records = visible(records, self.decision_month)
        self._by_id = {r.id: r for r in self._records}

    def search_evidence(
        self, query: str, kind: str | None = None, indication: str | None = None,
        limit: int = 10,
    ) -> list[dict[str, Any]]:
        """Records whose text or indication contains every word of ``query`` (case
        ignored), newest first; ``kind`` / ``indication`` filter exactly."""
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; valid: {KINDS}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError("limit must be a positive integer")
        words = [w for w in re.split(r"[^a-z0-9+.]+", query.lower()) if w]
        hits = []
        for r in reversed(self._records):
            if kind is not None and r.kind != kind:
                continue
            if indication is not None and r.indication != indication:
                continue
            hay = f"{r.text} {r.indication or ''}".lower().replace("_", " ")
            if all(w in hay for w in words):
                hits.append(r.to_dict())
            if len(hits) >= min(limit, MAX_RESULTS):
                break
        return hits

    def get_record(self, record_id: str) -> dict[str, Any] | None:
        """The record ``record_id`` if it is public at the decision date, else ``None``."""
        r = self._by_id.get(record_id) if isinstance(record_id, str) else None
        return None if r is None else r.to_dict()

    def program_summary(self) -> dict[str, Any]:
        """Counts by kind, trials registered per indication and phase, latest results."""
        registered: Counter[str] = Counter()
        latest: dict[str, dict[str, Any]] = {}
        for r in self._records:
            if r.kind == "registry" and r.fields.get("status") == "recruiting":
                registered[f"{r.indication}:P{r.fields.get('phase')}"] += 1
            if r.kind == "result" and r.indication is not None:
                latest[r.indication] = {
                    "phase": r.fields["phase"], "estimate": r.fields["estimate"],
                    "success": r.fields["success"], "date": month_label(r.month),
                }
        return {
            "decision_date": month_label(self.decision_month),
            "records": len(self._records),
            "by_kind": dict(Counter(r.kind for r in self._records)),
            "registered_trials": dict(registered),
            "latest_results": latest,
        }
