"""The reference planner: the heuristic's rules with the hidden truth in hand.

It reads willingness, true eligibility and true site conversion (which no agent
sees) to choose whom to screen or recontact and where to allocate. It is the upper
reference of the normalised score and of the calibration tests, not a baseline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.heuristic import HeuristicAgent
from clinbench.env.recruitment.observation import Observation
from clinbench.env.recruitment.simulator import RecruitmentEnv


class ReferencePlanner(HeuristicAgent):
    """Oracle choices inside the heuristic's rules; needs the live environment.

    The one policy outside the agent contract (it is a reference, not an agent): it is
    handed the environment it plays and reads the hidden world from it."""

    name = "reference_planner"
    description = "heuristic rules with hidden willingness, eligibility and site rates"

    def __init__(self, env: RecruitmentEnv, min_willingness: float = 0.35, **config: Any):
        super().__init__(AgentContext.of(env), stop_margin=0.08, recontact_max_days=10, **config)
        self._env = env
        self.min_willingness = min_willingness

    def pick_screen(self, obs: Observation) -> int:
        idx = obs.available_idx
        if idx.size == 0:
            return -1
        w = self._env.world
        value = w.eligibility[idx] * w.willingness[idx] * (1.0 - 0.5 * w.dropout_risk[idx])
        return int(idx[int(np.argmax(value))])

    def pick_site(self, obs: Observation) -> int:
        w, pen = self._env.world, self.params.wait_penalty
        best, best_v = -1, -1.0
        for s, site in enumerate(obs.sites):
            if site.capacity_remaining > 0 and not site.under_audit:
                v = w.conversion[s] / (1.0 + pen * site.wait_days)
                if v > best_v:
                    best, best_v = s, v
        return best

    def pick_recontact(self, obs: Observation) -> int:
        idx = obs.recontact_idx
        if idx.size == 0:
            return -1
        will = self._env.world.willingness[idx]
        k = int(np.argmax(will))
        return int(idx[k]) if will[k] >= self.min_willingness else -1
