"""Drawing one world of a task: patient pool, sites, event calendar, hidden type.

A world is fixed data (read-only numpy arrays); everything that changes during an
episode lives in the simulator. Per-patient uniforms and exponential clocks are drawn
here so that every agent playing the same seed meets the same patients with the same
luck (common random numbers), whatever order it acts in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clinbench.env.recruitment.tasks import EVENT_DURATIONS, EVENT_TYPES, SITE_EVENTS, TaskParams

SITE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PATIENT_ID_OFFSET = 1000


def patient_id(index: int) -> str:
    return f"P-{index + PATIENT_ID_OFFSET}"


def site_id(index: int) -> str:
    return f"site_{SITE_LETTERS[index]}"


@dataclass(frozen=True)
class ScheduledEvent:
    """An event of the calendar: fires at the end of ``day`` (seen from ``day + 1``)."""

    day: int
    kind: str
    duration: int
    site: int  # -1 when the event concerns no site
    magnitude: float  # extra wait days for site_delay; unused otherwise


@dataclass(frozen=True)
class VisibleWorld:
    """The part of a world an agent may see (all an observation refers to)."""

    age: np.ndarray
    prescreen_eligibility: np.ndarray  # noisy estimate of eligibility
    prescreen_dropout: np.ndarray  # noisy estimate of dropout risk
    reported_conversion: np.ndarray  # what each site claims at feasibility


@dataclass(frozen=True)
class World:
    """Everything drawn for one world, hidden truth included. Arrays are read-only."""

    world_type: str
    # patients (length pool_size)
    age: np.ndarray
    eligibility: np.ndarray  # hidden: true eligibility probability
    dropout_risk: np.ndarray  # hidden: true dropout risk
    willingness: np.ndarray  # hidden: willingness to consent
    prescreen_eligibility: np.ndarray  # visible noisy estimate
    prescreen_dropout: np.ndarray  # visible noisy estimate
    eligibility_u: np.ndarray  # hidden: uniform deciding eligibility at screening
    dropout_clock: np.ndarray  # hidden: Exp(1) cumulative hazard at which a patient drops
    arrival_day0: np.ndarray  # bool: present on day 0
    arrival_order: np.ndarray  # indices of later arrivals, in arrival order
    arrival_time: np.ndarray  # their arrival times on the arrival clock (ascending)
    # sites (length n_sites)
    conversion: np.ndarray  # hidden: true conversion rate
    reported_conversion: np.ndarray  # visible: what the site claims at feasibility
    wait_days: np.ndarray  # visible: base average wait
    retention: np.ndarray  # hidden: true retention (scales dropout hazard)
    biased: np.ndarray  # hidden: bool, site worse than it looks
    # events
    calendar: dict[int, tuple[ScheduledEvent, ...]]
    dropout_multiplier: float  # hidden: world-level dropout multiplier

    visible: VisibleWorld

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(patient_id(i) for i in range(self.age.size))


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def draw_world(p: TaskParams, rng: np.random.Generator) -> World:
    """Draw one world of task ``p`` from ``rng`` (the world child of the seed)."""
    n, s = p.pool_size, p.n_sites
    world_type = str(p.world_types[int(rng.integers(len(p.world_types)))])

    eligibility = np.clip(rng.uniform(0.3, 0.95, n) + rng.normal(0.0, 0.05, n), 0.05, 0.99)
    dropout_risk = np.clip(rng.uniform(0.05, 0.55, n) + rng.normal(0.0, 0.05, n), 0.01, 0.9)
    willingness = np.clip(rng.uniform(0.2, 0.9, n), 0.05, 0.95)
    age = rng.integers(18, 81, n)
    sd = p.prescreen_noise_sd
    pre_elig = np.round(np.clip(eligibility + rng.normal(0.0, sd, n), 0.0, 1.0), 3)
    pre_drop = np.round(np.clip(dropout_risk + rng.normal(0.0, sd, n), 0.0, 1.0), 3)
    eligibility_u = rng.random(n)
    dropout_clock = rng.exponential(1.0, n)

    present = np.zeros(n, dtype=bool)
    n0 = int(round(p.initial_fraction * n))
    perm = rng.permutation(n)
    present[perm[:n0]] = True
    later = perm[n0:]
    rate = max(later.size, 1) / p.arrival_span
    arrival_time = np.cumsum(rng.exponential(1.0 / rate, later.size))

    conversion = rng.uniform(0.6, 0.9, s)
    reported = np.clip(conversion + rng.normal(0.0, 0.03, s), 0.0, 1.0)
    biased = np.zeros(s, dtype=bool)
    if world_type == "site_bias" and p.biased_sites[1] > 0:
        k = int(rng.integers(p.biased_sites[0], p.biased_sites[1] + 1))
        chosen = rng.choice(s, size=min(k, s), replace=False)
        biased[chosen] = True
        reported[chosen] = rng.uniform(0.8, 0.9, chosen.size)
        conversion[chosen] = reported[chosen] - rng.uniform(0.4, 0.5, chosen.size)
    wait_days = rng.integers(2, 9, s).astype(float)
    retention = rng.uniform(0.8, 0.95, s)
    dropout_multiplier = p.dropout_world_multiplier if world_type == "dropout" else 1.0

    calendar: dict[int, list[ScheduledEvent]] = {}
    for kind in EVENT_TYPES:
        rate_k = p.event_rates.get(kind, 0.0)
        if rate_k <= 0.0:
            continue
        days = np.flatnonzero(rng.random(p.horizon) < rate_k)
        lo, hi = EVENT_DURATIONS[kind]
        durations = rng.integers(lo, hi + 1, days.size)
        sites = rng.integers(0, s, days.size)
        extra = rng.integers(3, 7, days.size)
        for d, dur, site, mag in zip(days, durations, sites, extra, strict=True):
            calendar.setdefault(int(d), []).append(
                ScheduledEvent(
                    day=int(d),
                    kind=kind,
                    duration=int(dur),
                    site=int(site) if kind in SITE_EVENTS else -1,
                    magnitude=float(mag),
                )
            )

    age, pre_elig, pre_drop = _ro(age), _ro(pre_elig), _ro(pre_drop)
    reported = _ro(np.round(reported, 3))
    return World(
        visible=VisibleWorld(age, pre_elig, pre_drop, reported),
        world_type=world_type,
        age=age,
        eligibility=_ro(eligibility),
        dropout_risk=_ro(dropout_risk),
        willingness=_ro(willingness),
        prescreen_eligibility=pre_elig,
        prescreen_dropout=pre_drop,
        eligibility_u=_ro(eligibility_u),
        dropout_clock=_ro(dropout_clock),
        arrival_day0=_ro(present),
        arrival_order=_ro(later),
        arrival_time=_ro(arrival_time),
        conversion=_ro(conversion),
        reported_conversion=reported,
        wait_days=_ro(wait_days),
        retention=_ro(retention),
        biased=_ro(biased),
        calendar={d: tuple(v) for d, v in calendar.items()},
        dropout_multiplier=float(dropout_multiplier),
    )
