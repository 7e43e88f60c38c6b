"""The agent protocol and registry, shared by every environment.

An agent is built for one environment (it reads ``env.spec`` and ``env.macro_space``),
is reset with a seed or a ``numpy.random.Generator`` before each episode, and maps an
observation to an action. Learning agents also implement ``train``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from clinbench.env.base import Env


def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A Generator from a seed (or the Generator itself); never the global RNG."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(np.random.SeedSequence(seed if seed is not None else 0))


class Agent(ABC):
    """Base class of clinbench agents."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: environment families this agent can play ("*" for any)
    envs: ClassVar[tuple[str, ...]] = ("*",)
    #: whether the agent has a ``train`` step
    learning: ClassVar[bool] = False

    def __init__(self, env: Env, **config: Any):
        if "*" not in self.envs and env.spec.env not in self.envs:
            raise ValueError(
                f"agent {self.name!r} plays {list(self.envs)} environments, not {env.spec.env!r}"
            )
        self.env_spec = env.spec
        self.macros = env.macro_space
        self.rng = as_generator(0)

    def reset(self, seed: int | np.random.Generator | None = None) -> None:
        """Start an episode; all randomness comes from ``seed``."""
        self.rng = as_generator(seed)

    @abstractmethod
    def act(self, obs: Any) -> Any:
        """The action for this observation."""


@dataclass(frozen=True)
class AgentEntry:
    name: str
    factory: Callable[..., Agent]
    description: str
    learning: bool


_AGENTS: dict[str, AgentEntry] = {}
#: The six baselines of the benchmark, in table order (``grpo`` is their common parent,
#: registered for ablations but not swept by default).
BASELINES: tuple[str, ...] = ("heuristic", "random", "hcapo", "mira", "klong", "memexrl")


def register_agent(cls: type[Agent]) -> type[Agent]:
    """Class decorator: add ``cls`` to the registry under ``cls.name``."""
    _AGENTS[cls.name] = AgentEntry(cls.name, cls, cls.description, cls.learning)
    return cls


def agent_names() -> list[str]:
    """Registered agents: the baselines first, in table order, then the rest."""
    _load_builtin()
    return sorted(_AGENTS, key=lambda n: (BASELINES.index(n) if n in BASELINES else len(BASELINES), n))


def agent_entries() -> list[AgentEntry]:
    return [_AGENTS[n] for n in agent_names()]


def agent_entry(name: str) -> AgentEntry:
    """The registry entry of ``name`` (KeyError listing the valid names)."""
    _load_builtin()
    if name not in _AGENTS:
        raise KeyError(f"unknown agent {name!r}; valid: {', '.join(agent_names())}")
    return _AGENTS[name]


def make_agent(name: str, env: Env, **config: Any) -> Agent:
    """Build the agent ``name`` for ``env``; unknown names list the valid ones."""
    _load_builtin()
    if name not in _AGENTS:
        raise KeyError(f"unknown agent {name!r}; valid: {', '.join(_AGENTS)}")
    return _AGENTS[name].factory(env, **config)


def _load_builtin() -> None:
    import clinbench.agents.heuristic  # noqa: F401
    import clinbench.agents.random_agent  # noqa: F401
    import clinbench.agents.hcapo  # noqa: F401
    import clinbench.agents.mira  # noqa: F401
    import clinbench.agents.klong  # noqa: F401
    import clinbench.agents.memexrl  # noqa: F401
    import clinbench.agents.grpo  # noqa: F401
