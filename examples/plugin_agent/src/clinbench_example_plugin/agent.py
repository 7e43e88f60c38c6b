"""``funnel_first``: move the most advanced patients on first, then fill the funnel.

Each day it plays the first valid macro-action of a fixed preference list (allocate a
consented patient, recontact an eligible one, screen a new arrival), and otherwise one
of the remaining valid macro-actions, drawn with its own seed (``stop`` excluded).

It sees only what the agent contract allows: the task's public spec and macro space at
construction, a seed from its own stream at ``reset``, the observation at ``act``.

Hyper-parameters:
    prefer (list of macro-action names, default allocate, recontact, screen): the order.
    explore (float, default 0.0): chance of a uniformly drawn valid macro-action instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents import Agent, AgentContext


class FunnelFirst(Agent):
    name = "funnel_first"
    description = "allocate, else recontact, else screen, else any valid macro (example plugin)"
    envs = ("recruitment",)

    def __init__(
        self,
        context: AgentContext,
        prefer: tuple[str, ...] = ("allocate_urgent", "recontact_urgent", "screen_best"),
        explore: float = 0.0,
        **config: Any,
    ):
        super().__init__(context, **config)
        unknown = [p for p in prefer if p not in self.macros.names]
        if unknown:
            raise ValueError(f"unknown macro-action(s) {unknown}; valid: {list(self.macros.names)}")
        self.order = [self.macros.names.index(p) for p in prefer]
        self.explore = float(explore)
        self.stop = self.macros.names.index("stop") if "stop" in self.macros.names else None

    def act(self, obs: Any) -> Any:
        mask = self.macros.mask(obs)
        if self.stop is not None and mask.sum() > 1:
            mask[self.stop] = False
        if self.explore and self.rng.random() < self.explore:
            valid = np.flatnonzero(mask)
            return self.macros.to_action(int(valid[self.rng.integers(valid.size)]), obs)
        for k in self.order:
            if mask[k]:
                return self.macros.to_action(k, obs)
        valid = np.flatnonzero(mask)
        return self.macros.to_action(int(valid[self.rng.integers(valid.size)]), obs)
