"""What the trial statistician sees at a look: the data and the DMC's statistics.

Per-arm arrays are in ``ARMS`` order (control, low, mid, high); per-dose-arm arrays in
``DOSE_ARMS`` order. Nothing here is hidden state: the true curves and the scenario
stay in the world.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from clinbench.env.base import FromFields
from clinbench.env.trial_design import statistics as st
from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS


@dataclass(frozen=True, eq=False)
class Observation(FromFields):
    """The trial at one look (immutable; ``to_dict`` is strict JSON)."""

    task_id: str
    look: int
    max_looks: int
    weeks: float
    max_weeks: float
    budget_remaining: float
    initial_budget: float
    strictness: float
    cost_per_patient: float
    enrol_per_week: float
    planned_per_arm: int
    active: tuple[bool, ...]
    n: tuple[int, ...]
    responders: tuple[int, ...]
    adverse_events: tuple[int, ...]
    #: per dose arm vs control: Mantel-Haenszel z stratified by cohort (> 0: better)
    z: tuple[float, ...]
    information_fraction: tuple[float, ...]
    #: efficacy boundary at this look (``inf``: nothing to spend at this look)
    boundary: tuple[float, ...]
    crossed: tuple[bool, ...]
    predictive_probability: tuple[float, ...]
    #: per arm: P(AE rate > threshold | data)
    prob_toxic: tuple[float, ...]
    ae_threshold: float
    alpha_per_arm: float
    #: no further cohort fits the budget or the duration: the next action must decide
    final_analysis: bool
    last_error: str | None

    def to_dict(self) -> dict[str, Any]:
        arm = dict(zip(ARMS, range(len(ARMS)), strict=True))
        return {
            "task_id": self.task_id,
            "look": self.look,
            "max_looks": self.max_looks,
            "weeks": self.weeks,
            "max_weeks": self.max_weeks,
            "budget_remaining": self.budget_remaining,
            "initial_budget": self.initial_budget,
            "inclusion_criteria_strictness": self.strictness,
            "cost_per_patient": self.cost_per_patient,
            "enrol_per_week": self.enrol_per_week,
            "planned_per_arm": self.planned_per_arm,
            "ae_threshold": self.ae_threshold,
            "alpha_per_arm": self.alpha_per_arm,
            "final_analysis": self.final_analysis,
            "last_error": self.last_error,
            "arms": {
                a: {
                    "active": self.active[i],
                    "n": self.n[i],
                    "responders": self.responders[i],
                    "adverse_events": self.adverse_events[i],
                    "prob_toxic": self.prob_toxic[i],
                }
                for a, i in arm.items()
            },
            "comparisons": {
                a: {
                    "z": self.z[j],
                    "information_fraction": self.information_fraction[j],
                    "boundary": _finite(self.boundary[j]),
                    "crossed": self.crossed[j],
                    "prob_better": self.prob_better[j],
                    "predictive_probability": self.predictive_probability[j],
                }
                for j, a in enumerate(DOSE_ARMS)
            },
        }

    def summary(self) -> dict[str, float]:
        """Time (the look), progress (patients enrolled) and the budget, for logs."""
        return {
            "time": self.look,
            "progress": sum(self.n),
            "patients": sum(self.n),
            "weeks": self.weeks,
            "budget_remaining": self.budget_remaining,
            "arms_active": sum(self.active[1:]),
            "max_z": max(self.z),
            "information": max(self.information_fraction),
        }

    @cached_property
    def prob_better(self) -> tuple[float, ...]:
        """Per dose arm: P(response rate > control's | data), Beta(1, 1) priors (closed
        form; computed when first asked for, as most policies never read it)."""
        n, x = self.n, self.responders
        better = st.prob_better(x[1:], n[1:], x[0], n[0])
        return tuple(np.atleast_1d(better).tolist())

    @property
    def active_doses(self) -> tuple[str, ...]:
        return tuple(a for a, on in zip(DOSE_ARMS, self.active[1:], strict=True) if on)

    @property
    def crossing_arms(self) -> tuple[str, ...]:
        return tuple(a for a, c in zip(DOSE_ARMS, self.crossed, strict=True) if c)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
