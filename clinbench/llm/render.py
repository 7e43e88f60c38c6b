"""The compact text of an observation that an LLM agent is prompted with.

The plain ``to_dict()`` JSON of a recruitment day is about 8 kB (some 2,000 tokens);
:func:`compact` keeps every field a decision needs and drops what costs tokens and says
nothing: empty values, defaults of ``None``, white space, and digits beyond four
significant ones. ``benchmarks/llm_prompt_size.py`` measures both.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Significant digits kept of a float.
DIGITS = 4


def _squeeze(x: Any) -> Any:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            v = _squeeze(v)
            if v is None or v == [] or v == {}:
                continue
            out[k] = v
        return out
    if isinstance(x, (list, tuple)):
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
