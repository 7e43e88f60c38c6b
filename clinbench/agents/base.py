"""The agent protocol, shared by every environment (the contract of ``docs/agents.md``).

An agent is built from an :class:`AgentContext` (the task's public spec and macro
space) and its hyper-parameters, never from the environment it is scored on. It is
reset before each episode with a seed from its own stream (never a world seed) and
maps an observation to an action. Learning agents also implement ``train``
(:mod:`clinbench.agents.learner`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from clinbench.agents.context import AgentContext


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

    def __init__(self, context: AgentContext, **config: Any):
        if not isinstance(context, AgentContext):
            raise TypeError(
                f"agent {self.name!r} is built from an AgentContext (the task's public spec and "
                f"macro space), not a {type(context).__name__}; use AgentContext.of(env)"
            )
        if config:
            raise TypeError(f"agent {self.name!r} has no parameter(s) {sorted(config)}")
        if "*" not in self.envs and context.spec.env not in self.envs:
            raise ValueError(
                f"agent {self.name!r} plays {list(self.envs)} environments, "
                f"not {context.spec.env!r}"
            )
        self.env_spec = context.spec
        self.macros = context.macro_space
        self.rng = as_generator(0)

    def reset(self, seed: int | np.random.Generator | None = None) -> None:
        """Start an episode; all randomness comes from ``seed`` (the agent's own stream)."""
        self.rng = as_generator(seed)

    @abstractmethod
    def act(self, obs: Any) -> Any:
        """The action for this observation: a native action or its dict form (to play a
        macro-action ``k``, return ``self.macros.to_action(k, obs)``)."""
