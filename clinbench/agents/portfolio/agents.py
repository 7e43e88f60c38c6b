"""Online agents of the portfolio task: ``heuristic`` and ``repeat_last`` (registered by
``registration``; ``random`` is the generic agent).

Hyper-parameters:
    random: include_stop (bool, default False): let ``stop`` be drawn too.
    heuristic: min_value (float, default 600): develop only indications whose approval
        is worth at least this ($M, public); phase3_estimate (float, default 0.0): the
        Phase II estimate a Phase III needs (a single-arm Phase II is optimistic);
        expand_cash (float, default 0.4): open a new indication only while at least this
        share of the budget is left.
    repeat_last: none (repeats what it started last time, where still startable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.random_agent import RandomAgent
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


#: ``random`` is the generic one: uniform over the valid macro-actions, ``stop`` (this
#: family's last macro too) excluded unless ``include_stop``.
PortfolioRandom = RandomAgent


class PortfolioHeuristic(Agent):
    """Continue what is working, expand on good readouts, stop on failures: a
    development team's rules of thumb, reading only its own readouts and the public
    values of the indications."""

    name = "heuristic"
    description = (
        "Phase I in the most valuable indication; Phase II after a tolerable Phase I, "
        "Phase III after a strong Phase II; expand after a strong Phase II; stop when "
        "nothing is left"
    )
    envs = FAMILY

    def __init__(
        self, context: AgentContext, min_value: float = 600.0, phase3_estimate: float = 0.0,
        expand_cash: float = 0.4, **config: Any,
    ):
        super().__init__(context, **config)
        self.min_value, self.phase3_estimate = min_value, phase3_estimate
        self.expand_cash = expand_cash

    def _worth(self, i: Any) -> bool:
        return i.value >= self.min_value

    def act(self, obs: Observation) -> PortfolioAction:
        wanted: list[TrialDesign] = []
        fresh = [i for i in expand_candidates(obs) if self._worth(i)]
        if not obs.trials:  # the start: the most valuable indication's Phase I
            wanted = [standard_design(obs, i.key, 1) for i in fresh[:1]]
        strong = False
        for i in advance_candidates(obs):
            if i.earned == 1 and self._worth(i):
                wanted.append(standard_design(obs, i.key, 2))
            elif i.earned == 2 and (i.last_estimate or 0.0) >= self.phase3_estimate:
                wanted.append(standard_design(obs, i.key, 3))
                strong = True
        if obs.trials and strong and obs.cash >= self.expand_cash * obs.budget:
            wanted += [standard_design(obs, i.key, 1) for i in fresh[:1]]
        chosen = self.macros.fit(obs, wanted)
        running = any(not t.read_out for t in obs.trials)
        if not chosen and not running and (obs.trials or not fresh):
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
