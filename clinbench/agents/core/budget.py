"""The training budget of a learning cell, counted in environment steps.

Budgets in episodes hid a 3.5x difference in experience between agents whose episodes
differ in length (``docs/agents.md``), so every learning agent, stable-baselines3's
included, gets the same number of environment steps. Every training environment of a
cell shares one :class:`StepBudget`; it counts each step and refuses the step after
the last, so no agent takes more than its budget from the environments the cell gives
it. It cannot count an environment an agent builds for itself (say with
``clinbench.env.make``): that is outside the agent contract, not something this class
enforces.
"""

from __future__ import annotations


class BudgetSpent(RuntimeError):
    """A training environment was stepped after the cell's budget ran out."""


class StepBudget:
    """Environment steps (and episodes started) of one learning cell; ``total`` None
    counts without a cap."""

    def __init__(self, total: int | None = None):
        if total is not None and total < 0:
            raise ValueError(f"a step budget must be >= 0, got {total}")
        self.total, self.used, self.episodes = total, 0, 0

    @property
    def left(self) -> int | None:
        return None if self.total is None else self.total - self.used

    def spend(self) -> None:
        if self.total is not None and self.used >= self.total:
            raise BudgetSpent(
                f"the training budget of {self.total} environment steps is spent"
            )
        self.used += 1

    def __repr__(self) -> str:
        return f"StepBudget(total={self.total}, used={self.used}, episodes={self.episodes})"
