"""``random``: uniform over the valid macro-actions; the floor every table needs.

Hyper-parameters:
    include_stop (bool, default False): let ``stop`` be drawn too. Off by default, since
        a freely sampled stop ends most episodes within days and says nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import register_agent


@register_agent
class RandomAgent(Agent):
    name = "random"
    description = "uniform over the valid macro-actions (stop excluded by default)"

    def __init__(self, context: AgentContext, include_stop: bool = False, **config: Any):
        super().__init__(context, **config)
        self.include_stop = include_stop
        self._stop = self.macros.n - 1 if self.macros.names[-1] == "stop" else None

    def act(self, obs: Any) -> Any:
        mask = self.macros.mask(obs)
        if not self.include_stop and self._stop is not None:
            mask[self._stop] = False
        valid = np.flatnonzero(mask)
        if valid.size == 0:  # only stop is valid
            valid = np.array([self.macros.n - 1])
        k = int(valid[int(self.rng.integers(valid.size))])
        return self.macros.to_action(k, obs)
