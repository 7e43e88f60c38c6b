"""The compact text of an observation that an LLM agent is prompted with.

The plain ``to_dict()`` JSON of a recruitment day is 1,400 to 1,850 tokens (estimated);
:func:`compact` keeps every value and drops what costs tokens and says nothing: keys
repeated in every record of a list (patients, sites: one header, then rows), empty
values and ``None``, white space, and digits beyond four significant ones.
``benchmarks/llm_prompt_size.py`` measures both.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Significant digits kept of a float.
DIGITS = 4


def _table(rows: list[dict[str, Any]] | dict[str, dict[str, Any]]) -> Any:
    """Records with the same keys as one header and rows of values (keys said once)."""
    records = list(rows.values()) if isinstance(rows, dict) else rows
    columns = list(records[0])
    body = [[_squeeze(r[c]) for c in columns] for r in records]
    if isinstance(rows, dict):
        return {"columns": ["key", *columns], "rows": [[k, *b] for k, b in zip(rows, body)]}
    return {"columns": columns, "rows": body}


def _records(x: Any) -> bool:
    """Two or more dicts of the same keys (a list of them, or a dict of them)."""
    values = list(x.values()) if isinstance(x, dict) else x
    return (
        len(values) > 1
        and all(isinstance(v, dict) and v for v in values)
        and all(v.keys() == values[0].keys() for v in values)
    )


def _squeeze(x: Any) -> Any:
    if isinstance(x, dict):
        if _records(x):
            return _table(x)
        out = {}
        for k, v in x.items():
            v = _squeeze(v)
            if v is None or v == [] or v == {}:
                continue
            out[k] = v
        return out
    if isinstance(x, (list, tuple)):
        if _records(x):
            return _table(list(x))
        return [_squeeze(v) for v in x]
    if isinstance(x, float):
        if not math.isfinite(x):
            return None
        return float(f"{x:.{DIGITS}g}")
    return x


def compact(observation: dict[str, Any]) -> str:
    """``observation`` (a ``to_dict()``) as short JSON text."""
    return json.dumps(_squeeze(observation), separators=(",", ":"), ensure_ascii=False)


def estimated_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters per token for JSON text."""
    return math.ceil(len(text) / 4)
