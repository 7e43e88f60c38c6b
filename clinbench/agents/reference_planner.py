"""The reference planner: the heuristic's rules with the hidden truth in hand.

It reads willingness, true eligibility and true site conversion (which no agent
sees) to choose whom to screen or recontact and where to allocate. It is the upper
reference of the normalised score and of the calibration tests, not a baseline, and
is not registered as an agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.heuristic import HeuristicAgent
from clinbench.env.recruitment.macro import is_open
from clinbench.env.recruitment.observation import Observation
from clinbench.env.recruitment.world import World


class ReferencePlanner(HeuristicAgent):
    """Oracle choices inside the heuristic's rules.

    The one policy outside the agent contract (it is a reference, not an agent): the
    hidden world of the episode is handed to it explicitly, as ``world()`` (for example
    ``lambda: env.world``), through this constructor and never through the agent API."""

    name = "reference_planner"
    description = "heuristic rules with hidden willingness, eligibility and site rates"

    def __init__(
        self,
        context: AgentContext,
        world: Callable[[], World],
        min_willingness: float = 0.35,
        **config: Any,
    ):
        super().__init__(context, stop_margin=0.08, **config)
        self._hidden = world
        self.min_willingness = min_willingness

    def pick_screen(self, obs: Observation) -> int:
        idx = obs.available_idx
        if idx.size == 0:
            return -1
        w = self._hidden()
        value = w.eligibility[idx] * w.willingness[idx] * (1.0 - 0.5 * w.dropout_risk[idx])
        return int(idx[int(np.argmax(value))])

    def pick_site(self, obs: Observation, patient: int) -> int:
        w, p = self._hidden(), self.params
        home = int(w.home_site[patient]) if patient >= 0 else -1
        best, best_v = -1, -1.0
        for s, site in enumerate(obs.sites):
            if is_open(site):
                v = w.conversion[s] / (1.0 + p.wait_penalty * site.wait_days)
                v *= 1.0 if s == home else p.other_site_conversion
                if v > best_v:
                    best, best_v = s, v
        return best

    def pick_recontact(self, obs: Observation) -> int:
        idx = obs.recontact_idx
        if idx.size == 0:
            return -1
        will = self._hidden().willingness[idx]
        k = int(np.argmax(will))
        return int(idx[k]) if will[k] >= self.min_willingness else -1
