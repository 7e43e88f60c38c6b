"""One world of a dose-finding task: its scenario, true curves and the patients' luck.

A world is drawn from its seed alone: the scenario (effective, null, unsafe_high or
weak, in the task's mix), the jittered dose-response and AE curves, and every random
number its patients will need. Each patient is a pair of uniforms per arm, used in
enrolment order, and each look has one uniform for its cohort's response level (shared
by the arms, so a null world stays null cohort by cohort). The same seed gives every
agent the same patients in the same order: agents differ only by what they do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from clinbench.env.trial_design.tasks import ARMS, TaskParams

#: The ufunc behind ``np.clip`` (same values).
_clip = np._core.umath.clip

SCENARIOS = ("effective", "null", "unsafe_high", "weak")
#: Mixed into every world seed so this family's streams differ from other families'.
_FAMILY_TAG = 0x7D1A


@dataclass(frozen=True, eq=False)
class World:
    """The hidden truth of one trial and the random numbers of its patients."""

    scenario: str
    emax: float
    ed50: float
    ae_slope: float
    #: true response rate of each arm in the nominal population (s = 0.5)
    response_nominal: np.ndarray
    #: true AE rate of each arm (independent of strictness)
    ae_rate: np.ndarray
    #: per arm, the uniforms of its patients' response and adverse event, in order
    u_response: np.ndarray
    u_ae: np.ndarray
    #: per look, the quantile of its cohort's response level
    u_cohort: np.ndarray
    params: TaskParams
    #: the dose-response curve's shape at each arm (0 for control)
    hill_curve: np.ndarray

    def response_rate(self, strictness: float) -> np.ndarray:
        """True response rate of each arm in the population enrolled at ``strictness``."""
        rates = self.params.base + self.emax * (0.5 + strictness) * self.hill_curve
        return _clip(rates, 0.0, 1.0)  # np.clip's values, without its per-call cost

    @cached_property
    def ae_list(self) -> list[float]:
        return self.ae_rate.tolist()

    @cached_property
    def unsafe_list(self) -> list[bool]:
        return self.unsafe_arms.tolist()

    @property
    def effect(self) -> np.ndarray:
        """True effect over control of each dose arm in the nominal population."""
        return self.response_nominal[1:] - self.response_nominal[0]

    @property
    def good_arms(self) -> np.ndarray:
        """Dose arms that are effective (effect >= mcid) and safe (AE <= threshold)."""
        p = self.params
        return (self.effect >= p.mcid - 1e-12) & (self.ae_rate[1:] <= p.ae_threshold)

    @property
    def unsafe_arms(self) -> np.ndarray:
        """Arms (control included, never unsafe by construction) above the AE threshold."""
        return self.ae_rate > self.params.ae_threshold


def max_patients(params: TaskParams) -> int:
    """The most patients one arm can ever receive (the budget at the cheapest patient)."""
    return int(params.budget / params.cost_base) + 1


def draw_world(params: TaskParams, seed: int, luck_seed: int | None = None) -> World:
    """The world of ``seed``; ``luck_seed`` (``fixed_world``) keeps the truth of
    ``seed`` and draws the patients from ``luck_seed`` instead."""
    rng = np.random.default_rng([_FAMILY_TAG, seed])
    u_scenario = float(rng.random())
    cum, total = 0.0, sum(params.scenario_mix)
    scenario = SCENARIOS[-1]
    for name, share in zip(SCENARIOS, params.scenario_mix, strict=True):
        cum += share / total
        if u_scenario < cum:
            scenario = name
            break
    g = rng.normal(0.0, 1.0, 3).tolist()
    emax = params.emax * math.exp(g[0] * params.emax_jitter)
    ed50 = params.ed50 * math.exp(g[1] * params.ed50_jitter)
    ae_slope = params.ae_slope * math.exp(g[2] * params.ae_jitter)
    if scenario == "null":
        emax = 0.0
    elif scenario == "weak":
        emax *= params.weak_factor
    elif scenario == "unsafe_high":
        ae_slope *= params.unsafe_factor
    h = params.hill
    shape = [0.0] + [d**h / (ed50**h + d**h) for d in params.doses]
    curve = np.array(shape)
    response = np.array([min(1.0, params.base + emax * c) for c in shape])
    ae = np.array([min(1.0, params.ae0 + (ae_slope * (d / 60.0) ** 2 if d else 0.0))
                   for d in (0.0, *params.doses)])
    luck = rng if luck_seed is None else np.random.default_rng([_FAMILY_TAG, seed, luck_seed])
    n = max_patients(params)
    u = luck.random((2, len(ARMS), n))
    u_cohort = luck.random(params.max_looks + 1)
    for a in (u, u_cohort, response, ae, curve):
        a.flags.writeable = False
    return World(
        scenario=scenario,
        emax=emax,
        ed50=ed50,
        ae_slope=ae_slope,
        response_nominal=response,
        ae_rate=ae,
        u_response=u[0],
        u_ae=u[1],
        u_cohort=u_cohort,
        params=params,
        hill_curve=curve,
    )
