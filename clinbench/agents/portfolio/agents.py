"""Online agents of the portfolio task: ``random``, ``heuristic`` and ``repeat_last``.

Hyper-parameters:
    random: include_stop (bool, default False): let ``stop`` be drawn too.
    heuristic: min_estimate (float, default 0.0): a readout below this is not followed
        up even when it met its endpoint; expand_cash (float, default 0.4): open a new
        indication only while at least this share of the budget is left.
    repeat_last: none (repeats what it started last time, where still startable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.macro import (
    advance_candidates,
    catalogue_index,
    expand_candidates,
    standard_design,
)
from clinbench.env.portfolio.observation import Observation
from clinbench.env.portfolio.trials import TrialDesign

FAMILY = ("portfolio",)


class PortfolioRandom(Agent):
    name = "random"
    description = "uniform over the valid macro-actions (stop excluded by default)"
    envs = FAMILY

    def __init__(self, context: AgentContext, include_stop: bool = False, **config: Any):
        super().__init__(context, **config)
        self.include_stop = include_stop

    def act(self, obs: Observation) -> PortfolioAction:
        mask = self.macros.mask(obs)
        if not self.include_stop:
            mask[self.macros.index["stop"]] = False
        valid = np.flatnonzero(mask)
        return self.macros.to_action(int(valid[int(self.rng.integers(valid.size))]), obs)


class PortfolioHeuristic(Agent):
    """Continue what is working, expand on good readouts, stop on failures."""

    name = "heuristic"
    description = "advance on success, expand after a good readout, stop when nothing is left"
    envs = FAMILY

    def __init__(
        self, context: AgentContext, min_estimate: float = 0.0, expand_cash: float = 0.4,
        **config: Any,
    ):
        super().__init__(context, **config)
        self.min_estimate, self.expand_cash = min_estimate, expand_cash

    def act(self, obs: Observation) -> PortfolioAction:
        wanted: list[TrialDesign] = []
        if not obs.trials:  # the start: the most valuable indication's Phase I
            wanted = [standard_design(obs, i.key, 1) for i in expand_candidates(obs)[:1]]
        adv = [i for i in advance_candidates(obs)
               if i.earned == 1 or (i.last_estimate or 0.0) >= self.min_estimate]
        wanted += [standard_design(obs, i.key, i.earned + 1) for i in adv]
        good = any(i.last_success and i.last_phase >= 1 for i in obs.indications)
        if obs.trials and good and obs.cash >= self.expand_cash * obs.budget:
            wanted += [standard_design(obs, i.key, 1) for i in expand_candidates(obs)[:1]]
        chosen = self.macros.fit(obs, wanted)
        running = any(not t.read_out for t in obs.trials)
        if not chosen and obs.trials and not running and not advance_candidates(obs):
            return PortfolioAction(stop=True)  # nothing works and nothing is pending
        return PortfolioAction(trials=chosen)


class PortfolioRepeatLast(Agent):
    """The naive baseline: start again what it started last time, where still valid."""

    name = "repeat_last"
    description = "repeat the last non-empty portfolio's still-startable designs"
    envs = FAMILY

    def reset(self, seed: int | np.random.Generator | None = None) -> None:
        super().reset(seed)
        self._last: tuple[TrialDesign, ...] = ()

    def act(self, obs: Observation) -> PortfolioAction:
        if not obs.trials:
            self._last = self.macros.fit(
                obs, [standard_design(obs, i.key, 1) for i in expand_candidates(obs)[:1]])
            return PortfolioAction(trials=self._last)
        index = catalogue_index(obs.indication_keys)
        moved = [standard_design(obs, d.indication, min(3, d.phase + 1)) for d in self._last]
        keep = self.macros.fit(obs, [d for d in moved if obs.catalogue_mask[index[d]]])
        if keep:
            self._last = keep
        return PortfolioAction(trials=keep)
