"""Drawing one world of a task: patient pool, sites, event calendar, hidden type.

A world is fixed data (read-only numpy arrays); everything that changes during an
episode lives in the simulator. Per-patient uniforms and exponential clocks are drawn
here so that every agent playing the same seed meets the same patients with the same
luck (common random numbers), whatever order it acts in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from clinbench.env.recruitment.tasks import EVENT_TYPES, EVENTS, TaskParams

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
    # patients (length pool_size; a patient no site ever sends has home site -1)
    age: np.ndarray
    eligibility: np.ndarray  # hidden: true eligibility probability
    dropout_risk: np.ndarray  # hidden: true dropout risk
    willingness: np.ndarray  # hidden: willingness to consent
    prescreen_eligibility: np.ndarray  # visible noisy estimate
    prescreen_dropout: np.ndarray  # visible noisy estimate
    eligibility_u: np.ndarray  # hidden: uniform deciding eligibility at screening
    dropout_clock: np.ndarray  # hidden: Exp(1) cumulative hazard at which a patient drops
    home_site: np.ndarray  # hidden until arrival: the site a patient comes through
    #: per site: (arrival times on the site's arrival clock, ascending; patient indices)
    site_arrivals: tuple[tuple[np.ndarray, np.ndarray], ...]
    # sites (length n_sites)
    conversion: np.ndarray  # hidden: true conversion rate
    reported_conversion: np.ndarray  # visible: what the site claims at feasibility
    wait_days: np.ndarray  # visible: base average wait
    retention: np.ndarray  # hidden: true retention (scales dropout hazard)
    biased: np.ndarray  # hidden: bool, site worse than it reports
    arrival_rate: np.ndarray  # hidden: Gamma-drawn patients per day (0: never enrols)
    activation_day: np.ndarray  # hidden: the day the site opens (its status is visible)
    # events (days 0 .. horizon + followup_days - 1; later days only move dropout)
    calendar: dict[int, tuple[ScheduledEvent, ...]]
    dropout_multiplier: float  # hidden: world-level dropout multiplier
    #: hidden: cumulative dropout hazard multiplier at the start of each day
    #: (length horizon + followup_days + 1), from the calendar alone
    hazard_clock: np.ndarray

    visible: VisibleWorld

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(patient_id(i) for i in range(self.age.size))


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _gamma_rates(p: TaskParams, rng: np.random.Generator) -> np.ndarray:
    """Site arrival rates: Gamma with the task's mean and CV, some sites never enrolling."""
    s = p.n_sites
    if p.site_rate_cv > 0:
        shape = 1.0 / p.site_rate_cv**2
        rate = rng.gamma(shape, p.site_rate_mean / shape, s)
    else:
        rate = np.full(s, p.site_rate_mean)
    rate[rng.random(s) < p.never_enrol_prob] = 0.0
    return rate


def _site_arrivals(
    p: TaskParams, rate: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, tuple[tuple[np.ndarray, np.ndarray], ...]]:
    """Poisson arrivals per site on its own arrival clock, each a patient of the pool.

    The clock runs at most ``outreach_arrival_multiplier`` per day, so drawing up to
    ``horizon`` times that covers every arrival an episode can see. If the sites would
    send more patients than the pool holds, the latest arrivals are cut.
    """
    n, s = p.pool_size, p.n_sites
    span = p.horizon * max(1.0, p.outreach_arrival_multiplier)
    counts = rng.poisson(rate * span)
    times = [np.sort(rng.uniform(0.0, span, c)) for c in counts]
    if counts.sum() > n:
        cut = np.sort(np.concatenate(times))[n - 1]
        times = [t[t <= cut][:n] for t in times]
        counts = np.array([t.size for t in times])
        while counts.sum() > n:  # ties at the cut
            k = int(np.argmax(counts))
            times[k] = times[k][:-1]
            counts[k] -= 1
    home = np.full(n, -1, dtype=np.int64)
    who = rng.permutation(n)[: int(counts.sum())]
    out, at = [], 0
    for k in range(s):
        idx = who[at : at + counts[k]]
        at += counts[k]
        home[idx] = k
        out.append((_ro(times[k]), _ro(idx)))
    return home, tuple(out)


def _hazard_clock(
    p: TaskParams, calendar: dict[int, list[ScheduledEvent]], world_mult: float
) -> np.ndarray:
    """Cumulative dropout multiplier at the start of each day, from the calendar.

    An event of day ``d`` is in force on days ``d+1 .. d+duration``; on a day the
    multiplier is the world's, times each active event's dropout factor, times
    ``1 + 0.5 * uncertainty`` (uncertainty 0.25 per active event, at most 1).
    """
    days = p.horizon + p.followup_days
    active = np.zeros(days + 1)
    log_factor = np.zeros(days + 1)
    for d, events in calendar.items():
        for ev in events:
            lo, hi = d + 1, min(days, d + 1 + ev.duration)
            if lo >= days:
                continue
            active[lo] += 1
            active[hi] -= 1
            f = EVENTS[ev.kind].dropout
            if f != 1.0:
                log_factor[lo] += math.log(f)
                log_factor[hi] -= math.log(f)
    n_active = np.cumsum(active)[:days]
    factor = np.exp(np.cumsum(log_factor)[:days])
    inc = world_mult * factor * (1.0 + 0.5 * np.minimum(1.0, 0.25 * n_active))
    return np.concatenate(([0.0], np.cumsum(inc)))


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

    rate = _gamma_rates(p, rng)
    activation = rng.integers(0, p.activation_span + 1, s)
    activation -= activation.min()
    home, arrivals = _site_arrivals(p, rate, rng)

    # Reports are drawn alike for every site; a biased site's true rate is far below.
    reported = np.round(rng.uniform(0.6, 0.9, s), 3)
    conversion = np.clip(reported + rng.normal(0.0, 0.03, s), 0.0, 1.0)
    biased = np.zeros(s, dtype=bool)
    if world_type == "site_bias" and p.biased_sites[1] > 0:
        k = int(rng.integers(p.biased_sites[0], p.biased_sites[1] + 1))
        chosen = rng.choice(s, size=min(k, s), replace=False)
        biased[chosen] = True
        conversion[chosen] = reported[chosen] - rng.uniform(0.35, 0.45, chosen.size)
    wait_days = rng.integers(2, 9, s).astype(float)
    retention = rng.uniform(0.8, 0.95, s)
    dropout_multiplier = p.dropout_world_multiplier if world_type == "dropout" else 1.0

    calendar: dict[int, list[ScheduledEvent]] = {}
    days = p.horizon + p.followup_days
    for kind in EVENT_TYPES:
        rate_k = p.event_rates.get(kind, 0.0)
        if rate_k <= 0.0:
            continue
        ev = EVENTS[kind]
        on = np.flatnonzero(rng.random(days) < rate_k)
        durations = rng.integers(ev.duration[0], ev.duration[1] + 1, on.size)
        sites = rng.integers(0, s, on.size)
        extra = rng.integers(ev.extra_wait[0], ev.extra_wait[1] + 1, on.size)
        for d, dur, site, mag in zip(on, durations, sites, extra, strict=True):
            calendar.setdefault(int(d), []).append(
                ScheduledEvent(
                    day=int(d),
                    kind=kind,
                    duration=int(dur),
                    site=int(site) if ev.site else -1,
                    magnitude=float(mag),
                )
            )

    age, pre_elig, pre_drop = _ro(age), _ro(pre_elig), _ro(pre_drop)
    reported = _ro(reported)
    # The agent's view holds copies: making one writeable again cannot alter the world.
    visible = VisibleWorld(*(_ro(a.copy()) for a in (age, pre_elig, pre_drop, reported)))
    return World(
        visible=visible,
        world_type=world_type,
        age=age,
        eligibility=_ro(eligibility),
        dropout_risk=_ro(dropout_risk),
        willingness=_ro(willingness),
        prescreen_eligibility=pre_elig,
        prescreen_dropout=pre_drop,
        eligibility_u=_ro(eligibility_u),
        dropout_clock=_ro(dropout_clock),
        home_site=_ro(home),
        site_arrivals=arrivals,
        conversion=_ro(conversion),
        reported_conversion=reported,
        wait_days=_ro(wait_days),
        retention=_ro(retention),
        biased=_ro(biased),
        arrival_rate=_ro(rate),
        activation_day=_ro(activation),
        calendar={d: tuple(v) for d, v in calendar.items()},
        dropout_multiplier=float(dropout_multiplier),
        hazard_clock=_ro(_hazard_clock(p, calendar, float(dropout_multiplier))),
    )
