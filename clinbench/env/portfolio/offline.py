"""The offline prediction task: (program, decision date) episodes from logged histories.

An episode is one decision date of one program while it is active (from its first
decision to the last at which a trial ran or started). Its input is the evidence public
at that date (records dated at or before it) and the program's catalogue; its label is
the portfolio the sponsor started at that date, i.e. the trials registered over the
next six months. The catalogue mask excludes only what the drug can never run
(biomarker-selected designs without a biomarker); which phases are earned is for the
predictor to infer from the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from clinbench.env.portfolio.evidence import Record, visible
from clinbench.env.portfolio.history import ProgramHistory, simulate_universe
from clinbench.env.portfolio.params import PortfolioParams
from clinbench.env.portfolio.trials import TrialDesign, catalogue
from clinbench.env.portfolio.world import draw_universe


@dataclass(frozen=True, eq=False)
class OfflineEpisode:
    program_id: str
    drug_id: str
    sponsor_id: str
    drug_class: str
    month: int
    #: the program's catalogue and the entries the drug can ever run
    catalogue: tuple[TrialDesign, ...]
    mask: np.ndarray
    #: public records at ``month``
    evidence: tuple[Record, ...]
    #: the logged portfolio (what the sponsor started at ``month``)
    label: tuple[TrialDesign, ...]


def catalogue_mask(entries: Sequence[TrialDesign], biomarker: bool) -> np.ndarray:
    m = np.array([biomarker or not d.biomarker for d in entries], dtype=bool)
    m.flags.writeable = False
    return m


def program_episodes(history: ProgramHistory) -> tuple[OfflineEpisode, ...]:
    """The episodes of one program's active life."""
    prog = history.program
    entries = catalogue(prog)
    mask = catalogue_mask(entries, prog.biomarker)
    last = history.last_active_month
    return tuple(
        OfflineEpisode(
            program_id=prog.id,
            drug_id=prog.drug_id,
            sponsor_id=prog.sponsor.id,
            drug_class=prog.drug_class,
            month=month,
            catalogue=entries,
            mask=mask,
            evidence=visible(history.records, month),
            label=portfolio,
        )
        for month, portfolio in history.decisions
        if month <= last
    )


@dataclass(frozen=True, eq=False)
class OfflineDataset:
    params: PortfolioParams
    seed: int
    histories: tuple[ProgramHistory, ...]
    episodes: tuple[OfflineEpisode, ...]

    @property
    def n_records(self) -> int:
        return sum(len(h.records) for h in self.histories)


def build_dataset(params: PortfolioParams, seed: int, n_programs: int) -> OfflineDataset:
    """``n_programs`` logged programs of the universe of ``seed`` and their episodes."""
    histories = simulate_universe(draw_universe(params, seed), n_programs)
    episodes = tuple(e for h in histories for e in program_episodes(h))
    return OfflineDataset(params, seed, histories, episodes)
