"""Registry of environment tasks: ``make("recruitment/easy_bench")``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clinbench.env.base import Env, EnvSpec

_FACTORIES: dict[str, Callable[..., Env]] = {}
_SPECS: dict[str, EnvSpec] = {}


def register(spec: EnvSpec, factory: Callable[..., Env]) -> None:
    """Register ``factory(**overrides) -> Env`` under ``spec.id``."""
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


def _load_builtin() -> None:
    # Importing the package registers its tasks (kept lazy to avoid import cycles).
    import clinbench.env.recruitment  # noqa: F401
