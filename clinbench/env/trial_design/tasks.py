"""The three dose-finding tasks and every parameter of the model.

Nominal dose-response and adverse-event curves are those of the ClinicalTrialEnv
reference tasks (spec section 1); budgets, durations, enrolment rates, scenario mixes
and the score's weights are this environment's, explained in ``docs/environments.md``.
Changing any value changes the task: bump ``TASK_VERSION`` and recompute the
reference scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clinbench.env.base import override_params

#: 2: the type-I error remedies (the final analysis spends alpha on the information
#: reached; a crossing needs the stratified exact test too), docs/environments.md II.4.1
TASK_VERSION = 2
#: Arm names, control first (the order of every per-arm array).
ARMS = ("control", "low", "mid", "high")
DOSE_ARMS = ARMS[1:]


@dataclass(frozen=True)
class TaskParams:
    """Every number that defines a dose-finding task (all overridable by name)."""

    name: str
    description: str
    #: doses of the low, mid and high arm (mg)
    doses: tuple[float, float, float]
    #: response p(d) = base + emax * m(s) * d^hill / (ed50^hill + d^hill), m(s) = 0.5 + s
    base: float
    emax: float
    ed50: float
    hill: float
    #: adverse events ae(d) = ae0 + ae_slope * (d / 60)^2
    ae0: float
    ae_slope: float
    #: an arm with a true AE rate above this is unsafe
    ae_threshold: float
    #: minimal clinically important difference over control (nominal population, s = 0.5)
    mcid: float
    #: budget in cost units; a patient costs ``cost_base + cost_strictness * s``
    budget: float
    #: maximum duration (weeks)
    max_weeks: float
    #: maximum number of looks (steps)
    max_looks: int = 12
    cost_base: float = 0.5
    cost_strictness: float = 1.0
    #: fixed cost and duration of one interim analysis (a look with a cohort)
    look_cost: float = 2.0
    look_weeks: float = 1.0
    #: patients enrolled per week: ``enrol_rate * (1.5 - s)``
    enrol_rate: float = 10.0
    #: scenario probabilities (effective, null, unsafe_high, weak); they sum to 1
    scenario_mix: tuple[float, float, float, float] = (0.6, 0.3, 0.1, 0.0)
    #: log-normal jitter sd of emax, ed50 and ae_slope per world
    emax_jitter: float = 0.15
    ed50_jitter: float = 0.20
    ae_jitter: float = 0.20
    #: unsafe_high scenario: the AE slope is multiplied by this
    unsafe_factor: float = 2.5
    #: weak scenario: emax is multiplied by this
    weak_factor: float = 0.4
    #: cohort response heterogeneity: Beta concentration ``kappa0 * (1 + kappa_strictness * s)``
    kappa0: float = 30.0
    kappa_strictness: float = 3.0
    #: one-sided familywise alpha of the efficacy claims (Bonferroni over the dose arms)
    alpha: float = 0.025
    #: Bayesian safety monitoring: stop when P(AE rate > threshold | data) > safety_prob
    #: for an active dose arm with at least safety_min_n patients
    safety_prob: float = 0.95
    safety_min_n: int = 10
    #: a futility stop earns credit only if every active dose arm's predictive
    #: probability of success is below this (or no dose arm is left)
    futility_pp: float = 0.10
    #: score: efficiency = 1 - cost_weight * cost share - time_weight * time share
    cost_weight: float = 0.3
    time_weight: float = 0.2
    #: score lost per planned-sample share of patients put on truly unsafe arms
    unsafe_penalty: float = 0.5

    @property
    def horizon(self) -> int:
        """The most steps an episode takes (what ``params.horizon`` means in every
        family: agents that budget in environment steps read it)."""
        return self.max_looks

    @property
    def planned_patients(self) -> int:
        """Patients the budget pays at nominal strictness (s = 0.5), after 4 looks."""
        per_patient = self.cost_base + 0.5 * self.cost_strictness
        return int((self.budget - 4 * self.look_cost) / per_patient)

    @property
    def planned_per_arm(self) -> int:
        return self.planned_patients // len(ARMS)

    def with_overrides(self, **overrides: Any) -> TaskParams:
        """A copy with some parameters replaced; unknown names are a ``TypeError``,
        values out of range (``validation.PARAM_RANGES``) a ``ValueError``."""
        from clinbench.env.trial_design.validation import check_params

        return override_params(self, overrides, check_params)


TASKS: MappingProxyType[str, TaskParams] = MappingProxyType(
    {
        "effective_drug": TaskParams(
            name="effective_drug",
            description="a clearly effective drug, safe at every dose in most worlds",
            doses=(10.0, 30.0, 60.0),
            base=0.10,
            emax=0.45,
            ed50=30.0,
            hill=1.5,
            ae0=0.05,
            ae_slope=0.15,
            ae_threshold=0.30,
            mcid=0.12,
            budget=200.0,
            max_weeks=40.0,
            scenario_mix=(0.6, 0.3, 0.1, 0.0),
        ),
        "efficacy_safety": TaskParams(
            name="efficacy_safety",
            description="the high dose is effective but unsafe: find the best safe dose",
            doses=(10.0, 25.0, 50.0),
            base=0.10,
            emax=0.50,
            ed50=20.0,
            hill=2.0,
            ae0=0.05,
            ae_slope=0.35,
            ae_threshold=0.25,
            mcid=0.12,
            budget=250.0,
            max_weeks=45.0,
            scenario_mix=(0.7, 0.3, 0.0, 0.0),
        ),
        "rare_disease": TaskParams(
            name="rare_disease",
            description="weak effects, a small budget and slow enrolment",
            doses=(15.0, 30.0, 45.0),
            base=0.12,
            emax=0.20,
            ed50=25.0,
            hill=1.2,
            ae0=0.04,
            ae_slope=0.10,
            ae_threshold=0.30,
            mcid=0.08,
            budget=150.0,
            max_weeks=60.0,
            enrol_rate=4.0,
            scenario_mix=(0.7, 0.3, 0.0, 0.0),
        ),
    }
)
