"""A program's logged life: its sponsor's policy run over its decision dates.

This is the ground truth of the offline task: at each decision date the sponsor (not an
agent) chooses the portfolio; the state machine runs it; the decisions and every record
are kept. After the last decision, pending readouts and reviews are played out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clinbench.env.portfolio.calendar import decision_months
from clinbench.env.portfolio.evidence import Record
from clinbench.env.portfolio.sponsor import sponsor_portfolio
from clinbench.env.portfolio.state import ProgramState, Trial
from clinbench.env.portfolio.trials import TrialDesign
from clinbench.env.portfolio.world import FAMILY_TAG, Program, Universe, draw_program

#: Sub-stream tag of the sponsors' decision noise.
SPONSOR = 3


@dataclass(frozen=True)
class ProgramHistory:
    program: Program
    #: (decision month, portfolio started then), for every decision date
    decisions: tuple[tuple[int, tuple[TrialDesign, ...]], ...]
    trials: tuple[Trial, ...]
    records: tuple[Record, ...]
    #: value parts after everything pending was played out
    value: dict[str, float]

    @property
    def last_active_month(self) -> int:
        """The last decision date at which the program had a trial running or started one."""
        active = [
            m for m, portfolio in self.decisions
            if portfolio or any(t.start_month < m < t.outcome.readout_month for t in self.trials)
        ]
        return max(active, default=self.program.start_month)


def simulate_program(program: Program) -> ProgramHistory:
    """Run ``program`` under its sponsor's policy for the task's horizon."""
    p = program.params
    rng = np.random.default_rng([FAMILY_TAG, program.universe.seed, SPONSOR, program.index])
    state = ProgramState(program)
    decisions = []
    for month in decision_months(program.start_month, p.horizon, p.decision_months):
        state.advance(month)
        portfolio = sponsor_portfolio(state, rng)
        state.start(portfolio)
        decisions.append((month, portfolio))
    state.finish()
    return ProgramHistory(
        program=program,
        decisions=tuple(decisions),
        trials=tuple(state.trials),
        records=tuple(state.records),
        value=state.value_parts(),
    )


def simulate_universe(universe: Universe, n_programs: int) -> tuple[ProgramHistory, ...]:
    """The logged histories of programs ``0 .. n_programs - 1``."""
    return tuple(simulate_program(draw_program(universe, i)) for i in range(n_programs))
