"""Tools (function schemas) and action parsing, generated from a family's action type.

Every family's action is a dataclass with ``from_dict`` (the environment's own parser).
When it has an enum field ``action_type`` there is one tool per action type, whose
arguments are the other fields; otherwise one tool takes all the fields. The JSON
schemas come from the dataclass's type hints (pydantic), so they follow the code.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import typing
from functools import cache
from typing import Any

from clinbench.env.base import MacroSpace

TYPE_FIELD = "action_type"


def action_class(macros: MacroSpace) -> type:
    """The action dataclass of a task, from its macro space's ``MacroSpace[Obs, Action]``."""
    for base in getattr(type(macros), "__orig_bases__", ()):
        if typing.get_origin(base) is MacroSpace:
            return typing.get_args(base)[1]
    raise TypeError(f"{type(macros).__name__} does not declare MacroSpace[Observation, Action]")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@cache
def tool_specs(cls: type) -> tuple[dict[str, Any], ...]:
    """OpenAI-style tool definitions (``{"type": "function", "function": {...}}``)."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls)]
    kind = hints.get(TYPE_FIELD)
    args = [f for f in fields if f.name != TYPE_FIELD]
    properties = {}
    for f in args:
        properties[f.name] = _field_schema(hints[f.name])
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        names = [str(v.value) for v in kind]
    else:
        names = [_snake(cls.__name__)]
    doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    return tuple(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"{name}: {doc}" if kind is not None else doc,
                "parameters": {"type": "object", "properties": properties},
            },
        }
        for name in names
    )


def _field_schema(hint: Any) -> dict[str, Any]:
    """A field's JSON schema; ``X | None`` as ``X`` (every argument is optional anyway)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if type(None) in typing.get_args(hint) and len(args) == 1:
        hint = args[0]
    import pydantic  # with the llm extra (openai depends on it), not a core dependency

    schema = pydantic.TypeAdapter(hint).json_schema()
    for key in ("title", "default"):
        schema.pop(key, None)
    return schema


def tool_names(cls: type) -> list[str]:
    return [t["function"]["name"] for t in tool_specs(cls)]


def action_from_call(cls: type, name: str, arguments: Any) -> Any:
    """The action a tool call names (``ValueError`` with the reason if it names none)."""
    names = tool_names(cls)
    if name not in names:
        raise ValueError(f"unknown tool {name!r}; the tools are {names}")
    if not isinstance(arguments, dict):
        raise ValueError("the arguments must be a JSON object")  # noqa: TRY004 - a bad reply
    data = dict(arguments)
    if TYPE_FIELD in typing.get_type_hints(cls):
        data.pop(TYPE_FIELD, None)
        data[TYPE_FIELD] = name
    return parse_action(cls, data)


def parse_action(cls: type, data: Any) -> Any:
    """``cls.from_dict(data)``, every failure a ``ValueError``."""
    if not isinstance(data, dict):
        raise ValueError("an action is a JSON object of its fields")  # noqa: TRY004 - a bad reply
    try:
        return cls.from_dict(data)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"not a valid action: {e}") from None
