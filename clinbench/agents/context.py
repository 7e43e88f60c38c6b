"""What a fair agent may know of the task it plays: the agent contract's one input.

An agent is built from an :class:`AgentContext` (the task's public :class:`EnvSpec` and
its :class:`MacroSpace`) plus its own hyper-parameters. It never receives the
environment object it is scored on, a world seed, or anything that reaches hidden
state: the context holds the public task parameters and the macro-action recipe only.

In-process isolation is a contract against accidents, not a security boundary: code
running in the same interpreter can always find other objects (frames, ``gc``). Run
untrusted agents against a served environment instead (``docs/agents.md``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from clinbench.env.base import Env, EnvSpec, MacroSpace


@dataclass(frozen=True)
class AgentContext:
    """The public spec and macro space of one task (never the environment itself)."""

    spec: EnvSpec
    macro_space: MacroSpace

    @classmethod
    def of(cls, env: Env) -> AgentContext:
        """The context of ``env``'s task: deep copies of its spec and macro space, so an
        agent that changes them (a task parameter's dict, say) changes only its own copy,
        never the environment it is scored on or the task registry."""
        spec, macro_space = copy.deepcopy((env.spec, env.macro_space))
        return cls(spec, macro_space)

    @classmethod
    def for_task(cls, env_id: str, **overrides: Any) -> AgentContext:
        """The context of a registered task, built from a throw-away environment."""
        from clinbench.env.registry import make

        return cls.of(make(env_id, **overrides))
