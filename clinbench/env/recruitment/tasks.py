"""The three recruitment tasks and every parameter of the model.

Values were calibrated against the properties of the spec (section 8); each is
explained in ``docs/environments.md``. Changing any value changes the task, so bump
``TASK_VERSION`` and recompute the reference scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

TASK_VERSION = 1
HORIZON = 180

#: Event types and their (min, max) duration in days.
EVENT_DURATIONS: MappingProxyType[str, tuple[int, int]] = MappingProxyType(
    {
        "patient_dropout": (3, 5),  # dropout hazard x3
        "site_delay": (5, 10),  # one site's wait + 3..6 days
        "regulatory_hold": (2, 3),  # screening blocked (IRB delay)
        "site_audit": (2, 3),  # one site closed to allocation
        "consent_form_revision": (3, 5),  # consent probability x0.6
        "competitor_trial": (10, 20),  # arrivals x0.6, consent x0.85
        "patient_complaint": (3, 5),  # consent probability x0.8
        "screening_backlog": (3, 5),  # screening cost x1.5
        "capacity_cut": (7, 14),  # one site loses 30 % of its slots
        "protocol_amendment": (7, 10),  # eligibility x0.85
        "seasonal_slowdown": (14, 21),  # arrivals x0.5
    }
)
EVENT_TYPES: tuple[str, ...] = tuple(EVENT_DURATIONS)
#: Events that concern one site (the site is drawn with the event).
SITE_EVENTS = frozenset({"site_delay", "site_audit", "capacity_cut"})


def _rates(density: float, hold: float) -> dict[str, float]:
    """Daily event rates: ``density`` spread over the event types, holds set apart."""
    weights = {
        "patient_dropout": 1.0,
        "site_delay": 1.5,
        "site_audit": 0.8,
        "consent_form_revision": 0.6,
        "competitor_trial": 0.5,
        "patient_complaint": 1.0,
        "screening_backlog": 1.0,
        "capacity_cut": 0.8,
        "protocol_amendment": 0.5,
        "seasonal_slowdown": 0.3,
    }
    total = sum(weights.values())
    rates = {k: density * w / total for k, w in weights.items()}
    rates["regulatory_hold"] = hold
    return {k: rates[k] for k in EVENT_TYPES}


@dataclass(frozen=True)
class TaskParams:
    """Every number that defines a recruitment task (all overridable by name)."""

    name: str
    description: str
    pool_size: int
    n_sites: int
    budget: float
    target: int
    screen_cost: float
    recontact_cost: float
    enrol_cost: float
    strategy_cost: float
    prescreen_noise_sd: float
    #: daily dropout hazard per unit of a patient's dropout risk
    dropout_base: float
    #: per-site slots (contracted enrolments) at the start
    site_capacity: int
    #: hidden world types drawn uniformly per world
    world_types: tuple[str, ...]
    #: sites made "worse than they look" in a site_bias world (min, max)
    biased_sites: tuple[int, int]
    event_rates: dict[str, float] = field(default_factory=dict)
    horizon: int = HORIZON
    initial_fraction: float = 0.4
    #: days over which the remaining pool arrives at the base rate
    arrival_span: float = 150.0
    consent_window: int = 5
    cooloff_days: int = 3
    cooloff_decay: float = 0.85
    max_recontacts: int = 3
    #: probability a patient is lost after a failed allocation
    loss_on_failed_allocation: float = 0.5
    #: allocation success = conversion / (1 + wait_penalty * wait_days)
    wait_penalty: float = 0.03
    #: dropout hazard multiplier in a hidden ``dropout`` world
    dropout_world_multiplier: float = 2.0
    outreach_days: int = 14
    outreach_arrival_multiplier: float = 1.8
    outreach_consent_multiplier: float = 1.1
    focus_days: int = 14
    negotiate_delay: int = 7
    negotiate_slots: int = 6
    negotiate_cost_multiplier: float = 2.0
    relax_eligibility_multiplier: float = 1.25
    relax_dropout_multiplier: float = 1.6
    tighten_eligibility_multiplier: float = 0.8
    tighten_dropout_multiplier: float = 0.7
    memory_capacity: int = 16
    history_window: int = 14
    #: at most this many patients per candidate list in ``to_dict()``
    max_listed: int = 30

    def with_overrides(self, **overrides: Any) -> TaskParams:
        """A copy with some parameters replaced; unknown names are an error."""
        valid = {f.name for f in fields(self)}
        bad = sorted(set(overrides) - valid)
        if bad:
            raise TypeError(f"unknown task parameter(s) {bad}; valid: {sorted(valid)}")
        return replace(self, **overrides)


TASKS: MappingProxyType[str, TaskParams] = MappingProxyType(
    {
        "easy_bench": TaskParams(
            name="easy_bench",
            description="one site, low noise, few events: the funnel itself",
            pool_size=200,
            n_sites=1,
            budget=120_000.0,
            target=35,
            screen_cost=600.0,
            recontact_cost=100.0,
            enrol_cost=1_200.0,
            strategy_cost=200.0,
            prescreen_noise_sd=0.05,
            dropout_base=0.0015,
            site_capacity=45,
            world_types=("noise",),
            biased_sites=(0, 0),
            event_rates=_rates(density=0.03, hold=0.0),
        ),
        "medium_bench": TaskParams(
            name="medium_bench",
            description="three sites, one worse than it looks; noisier pre-screens",
            pool_size=350,
            n_sites=3,
            budget=150_000.0,
            target=40,
            screen_cost=800.0,
            recontact_cost=150.0,
            enrol_cost=1_400.0,
            strategy_cost=300.0,
            prescreen_noise_sd=0.12,
            dropout_base=0.003,
            site_capacity=20,
            world_types=("site_bias",),
            biased_sites=(1, 1),
            event_rates=_rates(density=0.06, hold=0.004),
        ),
        "hard_bench": TaskParams(
            name="hard_bench",
            description="five sites, budget-bound, high dropout, regulatory holds",
            pool_size=500,
            n_sites=5,
            budget=100_000.0,
            target=40,
            screen_cost=900.0,
            recontact_cost=200.0,
            enrol_cost=1_500.0,
            strategy_cost=400.0,
            prescreen_noise_sd=0.20,
            dropout_base=0.005,
            site_capacity=12,
            world_types=("dropout", "site_bias"),
            biased_sites=(1, 2),
            event_rates=_rates(density=0.10, hold=0.012),
        ),
    }
)
