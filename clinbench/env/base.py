"""Environment-agnostic interfaces shared by every clinbench environment.

Agents, the sweep and the Gymnasium adapter only talk to these types, so an environment
family plugs in by implementing them and registering its hooks
(:class:`clinbench.env.family.Family`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

ObsT = TypeVar("ObsT", bound="Observation")
ActT = TypeVar("ActT")


class Observation(Protocol):
    """What every observation offers: plain JSON data, and a few numbers for logs.

    ``summary()`` holds the time index (``"time"``, an integer in the unit its family
    declares: days, looks, ...), the environment's main progress measure (``"progress"``)
    and any other scalars worth tracking per step; episode logs, trajectory charts and
    milestone checkers read it instead of env-specific fields.
    """

    def to_dict(self) -> dict[str, Any]: ...

    def summary(self) -> dict[str, float]: ...


def reset_arguments(seed: Any, options: dict[str, Any] | None) -> tuple[int | None, bool]:
    """``reset``'s seed (a non-negative integer, or None) and its ``fixed_world`` option,
    checked the same way in every family (``ValueError`` on anything else)."""
    options = dict(options or {})
    fixed = bool(options.pop("fixed_world", False))
    if options:
        raise ValueError(f"unknown reset option(s) {sorted(options)}; valid: ['fixed_world']")
    if seed is None:
        return None, fixed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed), fixed


def coerce_action(action: Any, cls: type[ActT]) -> ActT:
    """``action`` if it is a ``cls``, else ``cls.from_dict`` of a plain dict with its
    keys; anything else is a ``TypeError``."""
    if isinstance(action, cls):
        return action
    if isinstance(action, dict):
        return cls.from_dict(action)
    raise TypeError(f"an action is a {cls.__name__} or a dict, not {type(action).__name__}")


class FromFields:
    """Mixin of the frozen observation dataclasses: :meth:`from_fields` builds one
    without the frozen ``__init__``'s per-field ``object.__setattr__`` (a simulator
    builds one every step). The fields must be exactly the dataclass's."""

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> Any:
        obs = object.__new__(cls)
        obs.__dict__.update(fields)
        return obs


@dataclass(frozen=True)
class EnvSpec:
    """Identity of a task: environment family, task name, version and parameters.

    Every family's ``params`` has ``horizon``, the most steps an episode takes."""

    env: str
    task: str
    version: int
    params: Any
    description: str = ""

    @property
    def id(self) -> str:
        return f"{self.env}/{self.task}"


P = TypeVar("P")


def override_params(params: P, overrides: dict[str, Any], check: Callable[[P], None]) -> P:
    """A copy of the dataclass ``params`` with some fields replaced.

    An unknown name is a ``TypeError`` listing the valid ones; ``check`` (the family's
    range validation) raises ``ValueError`` on a value out of range.
    """
    valid = {f.name for f in fields(params)}
    bad = sorted(set(overrides) - valid)
    if bad:
        raise TypeError(f"unknown task parameter(s) {bad}; valid: {sorted(valid)}")
    new = replace(params, **overrides)
    check(new)
    return new


class MacroSpace(ABC, Generic[ObsT, ActT]):
    """A fixed, documented list of macro-actions with a validity mask and features.

    Learning agents and the Gymnasium adapter choose an index ``k``; the macro-action
    fills in the concrete arguments from the observation.
    """

    names: tuple[str, ...]
    descriptions: tuple[str, ...]
    feature_names: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @abstractmethod
    def mask(self, obs: ObsT) -> np.ndarray:
        """Boolean array of length ``n``: True where the macro-action is valid now."""

    @abstractmethod
    def features(self, obs: ObsT) -> np.ndarray:
        """Float feature vector of length ``n_features`` (roughly in [0, 1])."""

    @abstractmethod
    def to_action(self, k: int, obs: ObsT) -> ActT:
        """The concrete action for macro-action ``k`` in state ``obs``."""


class Env(ABC, Generic[ObsT, ActT]):
    """Gymnasium-shaped episodic environment with typed observations and actions."""

    spec: EnvSpec
    macro_space: MacroSpace[ObsT, ActT]

    @abstractmethod
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsT, dict[str, Any]]: ...

    @abstractmethod
    def step(
        self, action: ActT | dict[str, Any]
    ) -> tuple[ObsT, float, bool, bool, dict[str, Any]]: ...
