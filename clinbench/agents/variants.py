"""One agent name, one class per environment family: building the name builds the class
of the context's family with the hyper-parameters that class takes.

It runs in every cell of a shared name (``heuristic``: one class per family), so it is
cell code (``clinbench.sweep.cells``); the registry, which only names agents, is not.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext


class FamilyVariants(Agent):
    """One agent name, one class per environment family: building it builds the class of
    the context's family, with the hyper-parameters that class takes (the others belong
    to other families' variants)."""

    variants: ClassVar[dict[str, type[Agent]]] = {}

    def __new__(cls, context: AgentContext, **config: Any) -> Agent:  # type: ignore[misc]
        if not isinstance(context, AgentContext):
            raise TypeError(f"agent {cls.name!r} is built from an AgentContext")
        klass = cls.variants.get(context.spec.env)
        if klass is None:
            raise ValueError(
                f"agent {cls.name!r} plays {list(cls.variants)} environments, "
                f"not {context.spec.env!r}"
            )
        known = set(parameters(klass))
        unknown = sorted(set(config) - set(parameters(cls)))
        if unknown:
            raise TypeError(f"agent {cls.name!r} has no parameter(s) {unknown}")
        return klass(context, **{k: v for k, v in config.items() if k in known})

    def act(self, obs: Any) -> Any:  # pragma: no cover - instances are the variants'
        raise NotImplementedError


def family_variants(name: str, variants: dict[str, type[Agent]]) -> type[Agent]:
    classes = list(dict.fromkeys(variants.values()))
    return type(
        f"{name.title()}Variants",
        (FamilyVariants,),
        {
            "name": name,
            "description": "; ".join(f"{'/'.join(c.envs)}: {c.description}" for c in classes),
            "envs": tuple(variants),
            "learning": any(c.learning for c in classes),
            "variants": dict(variants),
            "__module__": classes[0].__module__,
        },
    )


def parameters(cls: type[Agent]) -> dict[str, Any]:
    """The hyper-parameters ``cls`` accepts and their defaults, from the constructors
    along its class hierarchy (the union of its variants' for a shared name)."""
    if issubclass(cls, FamilyVariants):  # the union of its variants' (first default wins)
        out: dict[str, Any] = {}
        for klass in cls.variants.values():
            for k, v in parameters(klass).items():
                out.setdefault(k, v)
        return out
    out = {}
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__ and klass is not object:
            params = list(inspect.signature(klass.__init__).parameters.values())[
                2:
            ]  # self, context
            for p in params:
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    out.setdefault(p.name, p.default)
    return out
