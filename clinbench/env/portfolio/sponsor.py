"""Sponsor behaviour policies: the logged decisions the offline task imitates.

Each sponsor has a style (``STYLES``) that sets how readily it advances an indication
on a readout, how much it expands into new indications, which designs it prefers and
whether it heeds a new standard of care. Every policy is near-rational on what the
sponsor can see (its own readouts as they happen, the public records) and noisy: each
step of the plan is taken with a probability, so the same evidence does not always give
the same portfolio. A policy never reads the latent truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from clinbench.env.portfolio.evidence import Record
from clinbench.env.portfolio.state import ProgramState
from clinbench.env.portfolio.trials import TrialDesign, trial_cost


@dataclass(frozen=True)
class Style:
    #: probability of advancing an indication after a successful readout
    go: float
    #: extra margin over the Phase II threshold asked before a Phase III (scaled by
    #: 1 - risk appetite)
    margin: float
    #: per decision, probability of opening one more indication (Phase I)
    expand: float
    #: Phase I starts at the program's first decision
    leads: int
    #: design preferences: combination, randomised Phase II, biomarker selection (when
    #: the drug has a biomarker)
    combination: float
    randomised: float
    biomarker: float
    #: probability of skipping an indication a new standard of care reached
    heed_regime: float


STYLE_TABLE = MappingProxyType(
    {
        "aggressive": Style(0.97, -0.1, 0.5, 2, 0.35, 0.3, 0.8, 0.0),
        "conservative": Style(0.9, 0.15, 0.2, 1, 0.1, 0.7, 0.8, 0.8),
        "precision": Style(0.95, 0.0, 0.3, 1, 0.15, 0.5, 0.98, 0.4),
        "fast_follower": Style(0.93, 0.0, 0.35, 2, 0.3, 0.4, 0.8, 0.8),
    }
)
#: A Phase I activity estimate below this halves the chance of a Phase II.
PHASE1_ACTIVITY_FLOOR = -1.0


def regime_seen(
    state: ProgramState, records: tuple[Record, ...] | None = None
) -> frozenset[str]:
    """Indications where a new standard of care is public by now (``records``: the
    state's visible records, where the caller has them already)."""
    return frozenset(
        r.indication for r in (state.visible_records() if records is None else records)
        if r.kind == "regulatory" and r.fields.get("event") == "new_standard"
    )


def last_readouts(state: ProgramState) -> dict[tuple[str, int], tuple[bool, float]]:
    """Per (indication, phase): the latest read-out trial's success and estimate."""
    out: dict[tuple[str, int], tuple[bool, float]] = {}
    for t in sorted(state.trials, key=lambda t: t.outcome.readout_month):
        if t.read_out(state.month):
            out[(t.design.indication, t.design.phase)] = (t.outcome.success, t.outcome.estimate)
    return out


def choose_design(
    state: ProgramState, indication: str, phase: int, style: Style, rng: np.random.Generator
) -> TrialDesign:
    u = rng.random(3)
    biomarker = bool(state.program.biomarker and u[0] < style.biomarker)
    combination = bool(u[1] < style.combination)
    randomised = phase == 3 or (phase == 2 and bool(u[2] < style.randomised))
    return TrialDesign(indication, phase, randomised, biomarker, combination)


def sponsor_portfolio(state: ProgramState, rng: np.random.Generator) -> tuple[TrialDesign, ...]:
    """The portfolio the program's sponsor starts at ``state.month``."""
    program, p = state.program, state.program.params
    style = STYLE_TABLE[program.sponsor.style]
    risk = program.sponsor.risk_appetite
    seen = regime_seen(state)
    reads = last_readouts(state)
    wanted: list[tuple[float, str, int]] = []  # (priority, indication, phase)
    tried = {t.design.indication for t in state.trials}
    now = state.standing()
    for ind in program.indications:
        key = ind.key
        if key in seen and rng.random() < style.heed_regime:
            continue
        earned = now.earned.get(key, 0)
        if earned == 0 or earned >= 3 or key in now.filed:
            continue
        nxt = earned + 1
        if nxt in now.running.get(key, ()) or any(
            t.design.indication == key and t.design.phase == nxt for t in state.trials
        ):
            continue  # one attempt per phase: a failure ends the indication
        ok, est = reads[(key, earned)]
        go = style.go
        if earned == 1 and est < PHASE1_ACTIVITY_FLOOR:
            go *= 0.5
        if earned == 2 and est < p.success_threshold[0] + style.margin * (1.0 - risk):
            go *= 0.3
        if ok and rng.random() < go:
            wanted.append((ind.value * (1.0 + est), key, nxt))
    untried = [ind for ind in program.indications if ind.key not in tried]
    if not state.trials:
        n_new = style.leads
    else:
        tolerable = any(t.design.phase == 1 and t.read_out(state.month) and t.outcome.success
                        for t in state.trials)
        n_new = int(tolerable and rng.random() < style.expand)
    if untried and n_new:
        noise = rng.lognormal(0.0, 0.5, len(untried))
        ranked = sorted(zip(untried, noise.tolist(), strict=True),
                        key=lambda x: -x[0].value * x[1])
        for ind, _ in ranked:
            if n_new == 0:
                break
            if ind.key in seen and rng.random() < style.heed_regime:
                continue
            wanted.append((0.0, ind.key, 1))
            n_new -= 1
    wanted.sort(key=lambda w: -w[0])
    out: list[TrialDesign] = []
    cash = state.cash
    now = state.standing()
    for _, key, phase in wanted:
        if len(out) >= p.portfolio_cap:
            break
        d = choose_design(state, key, phase, style, rng)
        cost = trial_cost(p, d)
        if cost <= cash and state.design_error(d, now) is None:
            out.append(d)
            cash -= cost
    return tuple(out)
