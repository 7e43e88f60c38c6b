"""The three recruitment tasks and every parameter of the model.

Values were calibrated against the properties of the spec (section 8); each is
explained in ``docs/environments.md``. Changing any value changes the task, so bump
``TASK_VERSION`` and recompute the reference scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from clinbench.env.base import override_params

TASK_VERSION = 2
HORIZON = 180


@dataclass(frozen=True)
class EventKind:
    """One event type: how long it lasts, its share of the task's event density, and
    what it does while active. Every number of an event lives here and only here."""

    duration: tuple[int, int]  # (min, max) days
    #: share of the task's event density; ``None``: drawn at its own rate (holds)
    weight: float | None
    consent: float = 1.0  # consent probability multiplier
    arrival: float = 1.0  # arrival rate multiplier
    eligibility: float = 1.0  # eligibility multiplier
    screen_cost: float = 1.0  # screening cost multiplier
    dropout: float = 1.0  # dropout hazard multiplier
    hold: bool = False  # screening blocked
    #: the event concerns one site (drawn with the event)
    site: bool = False
    extra_wait: tuple[int, int] = (0, 0)  # (min, max) days added to the site's wait
    capacity_cut: float = 0.0  # share of the site's slots closed (rounded up)
    closes_site: bool = False  # no allocation at the site


#: Every event type (the order is part of the task: worlds draw them in this order).
EVENTS: MappingProxyType[str, EventKind] = MappingProxyType(
    {
        "patient_dropout": EventKind((3, 5), 1.0, dropout=3.0),
        "site_delay": EventKind((5, 10), 1.5, site=True, extra_wait=(3, 6)),
        "regulatory_hold": EventKind((2, 3), None, hold=True),  # IRB delay
        "site_audit": EventKind((2, 3), 0.8, site=True, closes_site=True),
        "consent_form_revision": EventKind((3, 5), 0.6, consent=0.6),
        "competitor_trial": EventKind((10, 20), 0.5, arrival=0.6, consent=0.85),
        "patient_complaint": EventKind((3, 5), 1.0, consent=0.8),
        "screening_backlog": EventKind((3, 5), 1.0, screen_cost=1.5),
        "capacity_cut": EventKind((7, 14), 0.8, site=True, capacity_cut=0.3),
        "protocol_amendment": EventKind((7, 10), 0.5, eligibility=0.85),
        "seasonal_slowdown": EventKind((14, 21), 0.3, arrival=0.5),
    }
)
EVENT_TYPES: tuple[str, ...] = tuple(EVENTS)
EVENT_DURATIONS: MappingProxyType[str, tuple[int, int]] = MappingProxyType(
    {k: e.duration for k, e in EVENTS.items()}
)
#: Events that concern one site (the site is drawn with the event).
SITE_EVENTS = frozenset(k for k, e in EVENTS.items() if e.site)
#: World types a task may draw from.
WORLD_TYPES = ("noise", "site_bias", "dropout")


def _rates(density: float, hold: float) -> dict[str, float]:
    """Daily event rates: ``density`` spread over the event types by weight, holds apart."""
    total = sum(e.weight for e in EVENTS.values() if e.weight is not None)
    return {k: hold if e.weight is None else density * e.weight / total for k, e in EVENTS.items()}


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
    #: mean and coefficient of variation of the Gamma-distributed site arrival rates
    #: (patients per day on the arrival clock; Anisimov & Fedorov 2007)
    site_rate_mean: float = 0.3
    site_rate_cv: float = 0.5
    #: sites open on days drawn uniformly from 0..activation_span (the first on day 0)
    activation_span: int = 30
    #: probability that a site never enrols anyone (no arrivals of its own)
    never_enrol_prob: float = 0.0
    #: conversion multiplier when a patient is allocated outside their home site
    other_site_conversion: float = 0.7
    #: days each enrolled patient is followed; E counts those who complete it
    followup_days: int = 60
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
    #: relax / tighten criteria are protocol amendments: this many strategy fees, an
    #: approval delay drawn from (min, max) days, at most ``max_amendments`` per episode
    amendment_cost_multiplier: float = 10.0
    amendment_delay: tuple[int, int] = (14, 30)
    max_amendments: int = 2
    relax_eligibility_multiplier: float = 1.10
    relax_dropout_multiplier: float = 3.0
    tighten_eligibility_multiplier: float = 0.8
    tighten_dropout_multiplier: float = 0.7
    memory_capacity: int = 16
    history_window: int = 14
    #: at most this many patients per candidate list in ``to_dict()``
    max_listed: int = 30

    def with_overrides(self, **overrides: Any) -> TaskParams:
        """A copy with some parameters replaced; unknown names are a ``TypeError``, values
        out of range (``validation.PARAM_RANGES``) a ``ValueError``."""
        from clinbench.env.recruitment.validation import check_params

        return override_params(self, overrides, check_params)


TASKS: MappingProxyType[str, TaskParams] = MappingProxyType(
    {
        "easy_bench": TaskParams(
            name="easy_bench",
            description="four similar sites, low noise, few events: the funnel itself",
            pool_size=400,
            n_sites=4,
            budget=120_000.0,
            target=35,
            screen_cost=600.0,
            recontact_cost=100.0,
            enrol_cost=1_200.0,
            strategy_cost=200.0,
            prescreen_noise_sd=0.05,
            dropout_base=0.0015,
            site_capacity=15,
            world_types=("noise",),
            biased_sites=(0, 0),
            event_rates=_rates(density=0.03, hold=0.0),
            site_rate_mean=0.30,
            site_rate_cv=0.3,
            activation_span=14,
            never_enrol_prob=0.0,
        ),
        "medium_bench": TaskParams(
            name="medium_bench",
            description="six uneven sites, one worse than it reports; noisier pre-screens",
            pool_size=600,
            n_sites=6,
            budget=150_000.0,
            target=40,
            screen_cost=800.0,
            recontact_cost=150.0,
            enrol_cost=1_400.0,
            strategy_cost=300.0,
            prescreen_noise_sd=0.12,
            dropout_base=0.003,
            site_capacity=10,
            world_types=("site_bias",),
            biased_sites=(1, 1),
            event_rates=_rates(density=0.06, hold=0.004),
            site_rate_mean=0.30,
            site_rate_cv=0.5,
            activation_span=30,
            never_enrol_prob=0.1,
        ),
        "hard_bench": TaskParams(
            name="hard_bench",
            description="ten very uneven sites, tight budget, high dropout, regulatory holds",
            pool_size=800,
            n_sites=10,
            budget=130_000.0,
            target=34,
            screen_cost=900.0,
            recontact_cost=200.0,
            enrol_cost=1_500.0,
            strategy_cost=400.0,
            prescreen_noise_sd=0.30,
            dropout_base=0.005,
            site_capacity=6,
            world_types=("dropout", "site_bias"),
            biased_sites=(1, 2),
            event_rates=_rates(density=0.10, hold=0.012),
            site_rate_mean=0.40,
            site_rate_cv=0.8,
            activation_span=45,
            never_enrol_prob=0.15,
        ),
    }
)
