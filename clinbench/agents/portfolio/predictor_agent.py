"""An offline predictor played online: what agreeing with sponsors is worth.

At each decision date the online observation is read as an offline episode (its public
records, the program's catalogue and what the drug can ever run); the predictor's
portfolio, minus the entries not startable now, is played. Nothing else of the
observation is read, so the online value measures the predictor, not extra information.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.observation import Observation
from clinbench.env.portfolio.offline import OfflineEpisode, catalogue_mask
from clinbench.env.portfolio.trials import TrialDesign, catalogue_for

Predictor = Callable[[OfflineEpisode], tuple[TrialDesign, ...]]


def as_episode(obs: Observation) -> OfflineEpisode:
    """The offline episode of a decision date (no label: it is what is being chosen)."""
    entries = catalogue_for(obs.indication_keys)
    return OfflineEpisode(
        program_id=obs.program_id, drug_id="", sponsor_id="", drug_class=obs.drug_class,
        month=obs.month, catalogue=entries, mask=catalogue_mask(entries, obs.biomarker),
        evidence=obs.records, label=(),
    )


class PredictorAgent(Agent):
    """Plays ``predictor`` (unregistered: built by the study that trained it)."""

    name = "predictor"
    description = "an offline portfolio predictor, played online"
    envs = ("portfolio",)

    def __init__(self, context: AgentContext, predictor: Predictor, **config: Any):
        super().__init__(context, **config)
        self._predict = predictor

    def act(self, obs: Observation) -> PortfolioAction:
        episode = as_episode(obs)
        startable = {d for d, ok in zip(episode.catalogue, obs.catalogue_mask, strict=True) if ok}
        return PortfolioAction(trials=tuple(d for d in self._predict(episode) if d in startable))
