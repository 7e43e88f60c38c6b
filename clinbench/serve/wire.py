"""Exact JSON encoding of native observations and ``info`` dicts, for served environments.

A served environment sends, besides the plain ``to_dict()`` rendering, the native
observation itself so that a remote client hands agents the very object an in-process
agent would get (same fields, same numbers, bit for bit): floats as JSON numbers (Python
writes the shortest repr, which reads back exactly), non-finite floats, tuples, named
tuples, read-only mappings, enums, dataclasses, numpy scalars and arrays (base64 of their
bytes) as tagged objects.

:class:`ObservationEncoder` and :class:`ObservationDecoder` are per session: a field
whose encoding equals the previous observation's is sent as ``{"$same": 1}`` and the
decoder reuses its previous value (per-world constants, such as the pre-screen arrays,
cross the wire once per episode); an integer array of which few entries changed is sent
as those entries (``$delta``: flat indices and values).

Decoding builds only named tuples and dataclasses defined under ``clinbench.env``
(checked by name before any import), so a frame cannot make the client build anything
else.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import math
from types import MappingProxyType
from typing import Any

import numpy as np

#: Module prefix of the classes a frame may name.
ALLOWED_PREFIX = "clinbench.env."
SAME = {"$same": 1}
_ARRAY = "<an array>"  # what the encoder remembers of a field sent as an array


class WireError(ValueError):
    """A frame that does not decode (malformed, or naming a class it may not)."""


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def encode(x: Any, memo: Memo | None = None) -> Any:
    """``x`` as JSON data that :func:`decode` turns back into an equal value.

    ``memo`` reuses the encoding of immutable containers (tuples, frozen dataclasses)
    seen in the previous observation: the simulators hand out the same objects for what
    did not change (a site's view, an event), so most of an observation is looked up.
    """
    t = type(x)
    if memo is not None and (isinstance(x, tuple) or _frozen_dataclass(t)):
        hit = memo.old.get(id(x))
        if hit is not None and hit[0] is x:
            memo.new[id(x)] = hit
            return hit[1]
        enc = _encode(x, memo)
        memo.new[id(x)] = (x, enc)
        return enc
    return _encode(x, memo)


def _frozen_dataclass(t: type) -> bool:
    params = getattr(t, "__dataclass_params__", None)
    return params is not None and params.frozen


class Memo:
    """Encodings of the previous observation's containers (and of this one's, next)."""

    def __init__(self) -> None:
        self.old: dict[int, tuple[Any, Any]] = {}
        self.new: dict[int, tuple[Any, Any]] = {}

    def turn(self) -> None:
        self.old, self.new = self.new, {}


def _encode(x: Any, memo: Memo | None) -> Any:
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if math.isfinite(x) else {"$f": repr(x)}
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"cannot send an array of dtype {x.dtype}")
        data = base64.b64encode(np.ascontiguousarray(x).tobytes()).decode("ascii")
        return {"$nd": data, "dtype": x.dtype.str, "shape": list(x.shape)}
    if isinstance(x, np.generic):
        item = x.item()
        if type(item) not in (bool, int, float) or x.dtype.kind not in "biuf":
            raise TypeError(f"cannot send a {t.__name__}")
        if type(item) is float and not math.isfinite(item):
            return {"$np": x.dtype.str, "v": repr(item)}  # inf, -inf, nan
        return {"$np": x.dtype.str, "v": item}
    if isinstance(x, tuple):
        values = _plain(x) or [encode(v, memo) for v in x]
        if hasattr(t, "_fields"):
            return {"$nt": _path(t), "v": values}
        return {"$t": values}
    if t is list:
        return _plain(x) or [encode(v, memo) for v in x]
    if t is dict:
        if not all(type(k) is str for k in x):
            raise TypeError("only dicts with string keys can be sent")
        return {"$d": {k: encode(v, memo) for k, v in x.items()}}
    if t is MappingProxyType:  # a read-only mapping comes back read-only
        if not all(type(k) is str for k in x):
            raise TypeError("only mappings with string keys can be sent")
        return {"$mp": {k: encode(v, memo) for k, v in x.items()}}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        values = {f.name: encode(getattr(x, f.name), memo) for f in _fields(t)}
        return {"$dc": _path(t), "v": values}
    if isinstance(x, enum.Enum):
        return {"$en": _path(t), "v": encode(x.value, memo)}
    raise TypeError(f"cannot send a {t.__name__}")


_SCALARS = frozenset({str, int, bool, type(None)})


def _plain(items: tuple | list) -> list | None:
    """The items as they are, if they are all JSON scalars that encode as themselves
    (the common flat record: one pass, no recursion); else None."""
    scalars = _SCALARS
    for v in items:
        t = type(v)
        if t not in scalars and not (t is float and math.isfinite(v)):
            return None
    return list(items) if items else None


def decode(x: Any) -> Any:
    """The value :func:`encode` encoded (``WireError`` on anything malformed)."""
    try:
        return _decode(x)
    except RecursionError:
        raise WireError("nested too deeply") from None


def _decode(x: Any) -> Any:
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) is list:
        return [_decode(v) for v in x]
    if type(x) is not dict or len(x) not in (1, 2, 3):
        raise WireError(f"not an encoded value: {str(x)[:80]}")
    try:
        if "$f" in x:
            value = float(x["$f"])
            if math.isfinite(value):
                raise WireError("'$f' is for non-finite floats")
            return value
        if "$nd" in x:
            dtype = np.dtype(x["dtype"])
            if dtype.kind not in "biuf":
                raise WireError(f"arrays of dtype {dtype} are not sent")
            raw = base64.b64decode(x["$nd"], validate=True)
            return _read_only(np.frombuffer(raw, dtype=dtype).reshape(x["shape"]).copy())
        if "$np" in x:
            dtype = np.dtype(x["$np"])
            v = x["v"]
            if type(v) is str and v in ("inf", "-inf", "nan") and dtype.kind == "f":
                v = float(v)
            if dtype.kind not in "biuf" or type(v) not in (bool, int, float):
                raise WireError(f"'$np' holds a scalar of a numeric dtype, not {x!r:.80}")
            with np.errstate(over="raise"):
                return dtype.type(v)
        if "$t" in x:
            return tuple(_decode(v) for v in _list(x["$t"]))
        if "$d" in x:
            items = x["$d"]
            if type(items) is not dict:
                raise WireError("'$d' holds an object")
            return {k: _decode(v) for k, v in items.items()}
        if "$mp" in x:
            items = x["$mp"]
            if type(items) is not dict:
                raise WireError("'$mp' holds an object")
            return MappingProxyType({k: _decode(v) for k, v in items.items()})
        if "$nt" in x:
            cls = _class(x["$nt"])
            if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
                raise WireError(f"{x['$nt']} is not a named tuple")
            return cls(*(_decode(v) for v in _list(x["v"])))
        if "$en" in x:
            cls = _class(x["$en"])
            if not issubclass(cls, enum.Enum):
                raise WireError(f"{x['$en']} is not an enum")
            return cls(_decode(x["v"]))
        if "$dc" in x:
            cls = _class(x["$dc"])
            if not dataclasses.is_dataclass(cls):
                raise WireError(f"{x['$dc']} is not a dataclass")
            values = x["v"]
            names = [f.name for f in _fields(cls)]
            if type(values) is not dict or sorted(values) != sorted(names):
                raise WireError(f"fields of {x['$dc']} must be exactly {names}")
            return _build(cls, {k: _decode(values[k]) for k in names})
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as e:
        raise WireError(f"malformed value ({type(e).__name__}: {e})"[:200]) from None
    raise WireError(f"unknown tag in {sorted(x)}")


def _read_only(a: np.ndarray) -> np.ndarray:
    """Decoded arrays are read-only, as the simulators hand them out (and the decoder
    builds later changes on them)."""
    a.setflags(write=False)
    return a


def _list(v: Any) -> list:
    if type(v) is not list:
        raise WireError("expected a list")
    return v


def _fields(cls: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(cls)


def _class(path: Any) -> type:
    """The class ``module:qualname``, only under :data:`ALLOWED_PREFIX`."""
    if type(path) is not str or ":" not in path:
        raise WireError(f"bad class path {path!r}")
    module, _, name = path.partition(":")
    parts = (*module.split("."), *name.split("."))
    if not module.startswith(ALLOWED_PREFIX) or not all(
        p.isidentifier() and not p.startswith("_") for p in parts
    ):
        raise WireError(f"class {path!r} may not be sent")
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise WireError(f"no class {path!r}") from None
    if not isinstance(obj, type) or _path(obj) != path:  # defined there, not reached through it
        raise WireError(f"{path!r} is not a class of {module}")
    return obj


def _build(cls: type, values: dict[str, Any]) -> Any:
    """An instance with exactly these field values, as the simulator builds it
    (frozen dataclasses without running ``__init__`` / ``__post_init__``)."""
    obj = object.__new__(cls)
    if hasattr(obj, "__dict__"):
        obj.__dict__.update(values)
    else:  # slots
        for k, v in values.items():
            object.__setattr__(obj, k, v)
    return obj


class ObservationEncoder:
    """Encodes one session's observations, each field sent only when it changed.

    Observations are immutable, so a field holding the very object of the previous
    observation (the simulator hands out the same tuple until it changes) is unchanged
    without encoding it again; arrays, which numpy lets anyone write to, are always
    encoded and compared.
    """

    def __init__(self) -> None:
        self._last: dict[str, Any] = {}
        self._objects: dict[str, Any] = {}
        self._type: type | None = None
        self._memo = Memo()

    def reset(self) -> None:
        self._last, self._objects, self._type, self._memo = {}, {}, None, Memo()

    def __call__(self, obs: Any) -> dict[str, Any]:
        cls = type(obs)
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"observations must be dataclasses, not {cls.__name__}")
        if cls is not self._type:
            self.reset()
            self._type = cls
        out: dict[str, Any] = {}
        objects = self._objects
        for f in _fields(cls):
            value = getattr(obs, f.name)
            if f.name in objects and objects[f.name] is value and type(value) is not np.ndarray:
                out[f.name] = SAME
                continue
            if type(value) is np.ndarray:  # compared with a copy of what was sent
                last = objects.get(f.name)
                objects[f.name] = value.copy()
                self._last[f.name] = _ARRAY
                changed = type(last) is np.ndarray
                out[f.name] = _array_change(last, value) if changed else encode(value)
                continue
            objects[f.name] = value  # kept alive, so its identity is not reused
            enc = encode(value, self._memo)
            # Compared as JSON text, which tells -0.0 from 0.0 and 1 from 1.0 and True.
            text = json.dumps(enc, separators=(",", ":"), allow_nan=False)
            if self._last.get(f.name) == text:
                out[f.name] = SAME
            else:
                out[f.name] = enc
                self._last[f.name] = text
        self._memo.turn()
        return {"type": _path(cls), "fields": out}


def _array_change(last: np.ndarray, value: np.ndarray) -> Any:
    """``value`` as a change of ``last``: unchanged, the entries that changed (when few
    did), or the whole array."""
    if last.shape != value.shape or last.dtype != value.dtype or value.dtype.kind not in "biu":
        return encode(value)
    changed = np.flatnonzero(last.ravel() != value.ravel())
    if changed.size == 0:
        return SAME
    if changed.size * 4 > value.size:
        return encode(value)
    return {
        "$delta": base64.b64encode(changed.astype("<i4").tobytes()).decode("ascii"),
        "v": encode(value.ravel()[changed]),
    }


def _apply_change(last: Any, change: dict[str, Any]) -> np.ndarray:
    if type(last) is not np.ndarray:
        raise WireError("an array change needs the array it changes")
    try:
        idx = np.frombuffer(base64.b64decode(change["$delta"], validate=True), dtype="<i4")
        values = decode(change["v"])
        out = last.copy()
        out.ravel()[idx] = values  # ravel of a fresh C-contiguous copy is a view
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as e:
        raise WireError(f"malformed array change ({e})") from None
    return _read_only(out)


class ObservationDecoder:
    """Decodes what an :class:`ObservationEncoder` sent, reusing unchanged fields."""

    def __init__(self) -> None:
        self._last: dict[str, Any] = {}
        self._type: type | None = None

    def reset(self) -> None:
        self._last, self._type = {}, None

    def __call__(self, frame: Any) -> Any:
        if type(frame) is not dict or set(frame) != {"type", "fields"}:
            raise WireError("a native observation has 'type' and 'fields'")
        cls = _class(frame["type"])
        if not dataclasses.is_dataclass(cls):
            raise WireError(f"{frame['type']} is not a dataclass")
        if cls is not self._type:
            self.reset()
            self._type = cls
        sent = frame["fields"]
        names = [f.name for f in _fields(cls)]
        if type(sent) is not dict or sorted(sent) != sorted(names):
            raise WireError(f"fields of {frame['type']} must be exactly {names}")
        values = {}
        for name in names:
            enc = sent[name]
            if enc == SAME:
                if name not in self._last:
                    raise WireError(f"field {name!r} sent as unchanged before it was sent")
                values[name] = self._last[name]
            elif type(enc) is dict and "$delta" in enc:
                values[name] = self._last[name] = _apply_change(self._last.get(name), enc)
            else:
                values[name] = self._last[name] = decode(enc)
        return _build(cls, values)
