"""Registry of environment families and their tasks: ``make("<env>/<task>")``.

Every sub-package of :mod:`clinbench.env` is an environment family; importing it
registers its :class:`~clinbench.env.family.Family` and its tasks. The registry finds
them by listing the package, so it names none.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from clinbench.env.base import Env, EnvSpec
from clinbench.env.family import Family

_FACTORIES: dict[str, Callable[..., Env]] = {}
_SPECS: dict[str, EnvSpec] = {}
_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Register an environment family's hooks (before its tasks)."""
    _FAMILIES[family.name] = family


def family(name: str) -> Family:
    """The hooks of environment family ``name`` (``EnvSpec.env``)."""
    _load_builtin()
    if name not in _FAMILIES:
        raise KeyError(f"unknown environment family {name!r}; valid: {', '.join(_FAMILIES)}")
    return _FAMILIES[name]


def families() -> list[str]:
    """The registered family names, in registration order."""
    _load_builtin()
    return list(_FAMILIES)


def register(spec: EnvSpec, factory: Callable[..., Env]) -> None:
    """Register ``factory(**overrides) -> Env`` under ``spec.id`` (its family first)."""
    if spec.env not in _FAMILIES:
        raise KeyError(f"register the family {spec.env!r} before its task {spec.task!r}")
    _FACTORIES[spec.id] = factory
    _SPECS[spec.id] = spec


def env_ids() -> list[str]:
    """All registered ids, ``"<env>/<task>"``, in registration order."""
    _load_builtin()
    return list(_FACTORIES)


def spec(env_id: str) -> EnvSpec:
    _load_builtin()
    _check(env_id)
    return _SPECS[env_id]


def make(env_id: str, **overrides: Any) -> Env:
    """Build a fresh environment; ``overrides`` replace task parameters by name."""
    _load_builtin()
    _check(env_id)
    return _FACTORIES[env_id](**overrides)


def _check(env_id: str) -> None:
    if env_id not in _FACTORIES:
        raise KeyError(f"unknown environment {env_id!r}; valid: {', '.join(_FACTORIES)}")


@cache
def builtin_families() -> tuple[str, ...]:
    """Names of the family packages shipped in :mod:`clinbench.env`."""
    here = [str(Path(__file__).parent)]
    return tuple(m.name for m in pkgutil.iter_modules(here) if m.ispkg)


_loaded = False


def _load_builtin() -> None:
    # Importing a family package registers it (kept lazy to avoid import cycles).
    global _loaded
    if not _loaded:
        _loaded = True
        for name in builtin_families():
            importlib.import_module(f"clinbench.env.{name}")
