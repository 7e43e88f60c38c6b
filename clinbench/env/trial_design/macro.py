"""Macro-actions and features of the dose-finding trial, for learning agents and Gymnasium.

Ten macro-actions cover what a trial statistician does at a look; each fills in the
concrete ``TrialAction`` from the observation. Cohort sizes are shares of the planned
sample (an eighth, a quarter, a half), cut to what the budget, the duration and the
100-patient cap allow. A macro is masked out when its action would be refused.
"""

from __future__ import annotations

import math

import numpy as np

from clinbench.env.base import MacroSpace
from clinbench.env.trial_design.actions import MAX_COHORT, TrialAction
from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS, TaskParams

MACROS: tuple[tuple[str, str], ...] = (
    ("cohort_small", "enrol an eighth of the planned sample, equal allocation"),
    ("cohort_medium", "enrol a quarter of the planned sample, equal allocation"),
    ("cohort_large", "enrol half of the planned sample, equal allocation"),
    ("shift_to_best", "a quarter: a third to control, two thirds to the most promising dose"),
    ("drop_worst", "drop the least promising dose, then a quarter, equal allocation"),
    ("drop_unsafe", "drop the dose most likely unsafe, then a quarter, equal allocation"),
    ("tighten", "strictness +0.25 (more effect, dearer, slower), then a quarter"),
    ("relax", "strictness -0.25, then a quarter"),
    ("claim_best", "claim success for the crossing dose with the largest z"),
    ("stop_futility", "stop for futility"),
)
_SHARES = {"cohort_small": 1 / 8, "cohort_large": 1 / 2}
STEP_STRICTNESS = 0.25


class TrialMacros(MacroSpace[Observation, TrialAction]):
    """The ten macro-actions and the 31 features of a dose-finding task."""

    def __init__(self, params: TaskParams):
        self.params = params
        self.names = tuple(n for n, _ in MACROS)
        self.descriptions = tuple(d for _, d in MACROS)
        self.index = {n: k for k, n in enumerate(self.names)}
        per_dose = ("active", "z", "information", "crossed", "margin", "prob_better",
                    "predictive", "prob_toxic")
        self.feature_names = (
            "look", "weeks", "budget", "strictness", "final_analysis",
            *(f"{a}_{f}" for a in DOSE_ARMS for f in per_dose),
            "control_n", "control_prob_toxic",
        )

    # ------------------------------------------------------------------ helpers
    def cohort_size(self, obs: Observation, share: float, strictness: float) -> int:
        """``share`` of the planned sample, cut to the budget, duration and cap."""
        p = self.params
        want = max(1, round(share * p.planned_patients))
        cpp = p.cost_base + p.cost_strictness * strictness
        by_budget = math.floor((obs.budget_remaining - p.look_cost) / cpp + 1e-9)
        rate = p.enrol_rate * (1.5 - strictness)
        by_time = math.floor((obs.max_weeks - obs.weeks - p.look_weeks) * rate + 1e-9)
        return max(0, min(want, by_budget, by_time, MAX_COHORT))

    @staticmethod
    def best_dose(obs: Observation) -> int:
        """Index (in ``DOSE_ARMS``) of the active dose most likely better than control."""
        pb = [v if on else -1.0 for v, on in zip(obs.prob_better, obs.active[1:], strict=True)]
        return int(np.argmax(pb))

    @staticmethod
    def worst_dose(obs: Observation) -> int:
        pb = [v if on else 2.0 for v, on in zip(obs.prob_better, obs.active[1:], strict=True)]
        return int(np.argmin(pb))

    @staticmethod
    def most_toxic_dose(obs: Observation) -> int:
        pt = [v if on else -1.0 for v, on in zip(obs.prob_toxic[1:], obs.active[1:], strict=True)]
        return int(np.argmax(pt))

    @staticmethod
    def claim_arm(obs: Observation) -> str | None:
        """The crossing dose with the largest z, or ``None``."""
        best = None
        for j, a in enumerate(DOSE_ARMS):
            if obs.crossed[j] and (best is None or obs.z[j] > obs.z[best]):
                best = j
        return None if best is None else DOSE_ARMS[best]

    def _strictness(self, name: str, obs: Observation) -> float:
        s = obs.strictness
        if name == "tighten":
            return min(1.0, s + STEP_STRICTNESS)
        if name == "relax":
            return max(0.0, s - STEP_STRICTNESS)
        return s

    def index_of(self, action: TrialAction) -> int:
        """The macro-action a concrete action corresponds to (for imitation labels):
        decisions to their macros, a drop to ``drop_unsafe`` (the classical design
        drops for safety), a strictness change to ``tighten`` / ``relax`` (above or
        below the nominal 0.5), an explicit allocation to ``shift_to_best``, and a plain
        cohort to the macro of the nearest planned share."""
        if action.stop_for_success:
            return self.index["claim_best"]
        if action.stop_for_futility:
            return self.index["stop_futility"]
        if action.drop_arm is not None:
            return self.index["drop_unsafe"]
        s = action.inclusion_criteria_strictness
        if s is not None and s != 0.5:
            return self.index["tighten" if s > 0.5 else "relax"]
        if action.allocation_control is not None:
            return self.index["shift_to_best"]
        share = action.n_next_cohort / max(self.params.planned_patients, 1)
        shares = {"cohort_small": 1 / 8, "cohort_medium": 1 / 4, "cohort_large": 1 / 2}
        return self.index[min(shares, key=lambda k: abs(math.log(max(share, 1e-9) / shares[k])))]

    # ------------------------------------------------------------------ MacroSpace
    def mask(self, obs: Observation) -> np.ndarray:
        m = np.zeros(len(self.names), dtype=bool)
        m[self.index["stop_futility"]] = True
        m[self.index["claim_best"]] = any(obs.crossed)
        if obs.final_analysis:
            return m
        doses = sum(obs.active[1:])
        for k, name in enumerate(self.names[:8]):
            if name in ("drop_worst", "drop_unsafe") and doses < 2:
                continue
            if name == "tighten" and obs.strictness >= 1.0:
                continue
            if name == "relax" and obs.strictness <= 0.0:
                continue
            share = _SHARES.get(name, 1 / 4)
            m[k] = self.cohort_size(obs, share, self._strictness(name, obs)) > 0
        return m

    def to_action(self, k: int, obs: Observation) -> TrialAction:
        name = self.names[k]
        if name == "stop_futility":
            return TrialAction(stop_for_futility=True)
        if name == "claim_best":
            return TrialAction(stop_for_success=True, success_arm=self.claim_arm(obs))
        s = self._strictness(name, obs)
        n = self.cohort_size(obs, _SHARES.get(name, 1 / 4), s)
        strictness = s if name in ("tighten", "relax") else None
        if name == "shift_to_best":
            alloc = [0.0] * len(ARMS)
            alloc[0], alloc[1 + self.best_dose(obs)] = 1 / 3, 2 / 3
            return TrialAction(
                n_next_cohort=n,
                allocation_control=alloc[0],
                allocation_low=alloc[1],
                allocation_mid=alloc[2],
                allocation_high=alloc[3],
            )
        drop = None
        if name == "drop_worst":
            drop = DOSE_ARMS[self.worst_dose(obs)]
        elif name == "drop_unsafe":
            drop = DOSE_ARMS[self.most_toxic_dose(obs)]
        return TrialAction(n_next_cohort=n, drop_arm=drop, inclusion_criteria_strictness=strictness)

    def features(self, obs: Observation, dtype: type | None = None) -> np.ndarray:
        p = self.params
        row = [
            obs.look / obs.max_looks,
            obs.weeks / obs.max_weeks,
            obs.budget_remaining / obs.initial_budget,
            obs.strictness,
            float(obs.final_analysis),
        ]
        for j in range(len(DOSE_ARMS)):
            z, b = obs.z[j], obs.boundary[j]
            margin = (z - b) / 4.0 + 0.5 if math.isfinite(b) else 0.0
            row += [
                float(obs.active[j + 1]),
                (z + 3.0) / 8.0,
                obs.information_fraction[j],
                float(obs.crossed[j]),
                margin,
                obs.prob_better[j],
                obs.predictive_probability[j],
                obs.prob_toxic[j + 1],
            ]
        row += [obs.n[0] / max(p.planned_per_arm, 1), obs.prob_toxic[0]]
        out = np.clip(np.asarray(row, dtype=np.float64), 0.0, 1.0)
        return out if dtype is None else out.astype(dtype)
