"""Trials: their designs, costs and outcomes drawn from the latent truth.

A design is an entry of a program's catalogue: indication x phase x three attributes
(randomised, biomarker-selected, combination). Phase I is single-arm and Phase III
randomised; Phase II may be either. A trial's outcome is fixed by the program's truth
and the trial's own luck, a Generator derived from (seed, program, indication, phase,
attempt): the same trial started by any policy at any date has the same noise, so
policies differ only by what they start and when.

Outcome model (section 1 of the spec; parameters in ``params``):

- Phase I passes when the drug's toxicity (plus the combination's, plus trial noise) is
  below ``tox_limit``; its activity estimate is reported but decides nothing;
- Phase II and III estimate the effect in the trial's population with the phase's
  noise (a single-arm Phase II is optimistic and noisier) and succeed above the phase's
  threshold; after the cutoff, trials in indications reached by the new standard of
  care lose ``regime_shift`` of effect (the comparator improved);
- a successful Phase III is filed; the review approves when the true effect plus review
  noise clears ``approval_threshold``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from clinbench.env.portfolio.params import PortfolioParams
from clinbench.env.portfolio.world import FAMILY_TAG, TRIAL, Program

DESIGN_FLAGS = ("randomised", "biomarker", "combination")


@dataclass(frozen=True, order=True)
class TrialDesign:
    """One catalogue entry: what a portfolio is a set of."""

    indication: str
    phase: int
    randomised: bool = False
    biomarker: bool = False
    combination: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` (plain fields only) without its recursive copy."""
        return {"indication": self.indication, "phase": self.phase,
                "randomised": self.randomised, "biomarker": self.biomarker,
                "combination": self.combination}

    @property
    def label(self) -> str:
        flags = "".join(f[0].upper() if getattr(self, f) else "-" for f in DESIGN_FLAGS)
        return f"{self.indication}:P{self.phase}:{flags}"


@dataclass(frozen=True)
class Outcome:
    """What a trial will show (fixed at its start, revealed at its dates)."""

    success: bool
    estimate: float
    sd: float
    readout_month: int
    #: month the result becomes public (a result record), and the estimate it reports
    #: (with an extra reporting error in a ``noisy_share`` of records)
    result_month: int
    reported_estimate: float
    #: the registry entry's posting delay (months)
    registry_lag: int
    #: Phase III only: months of review after a success, and the review's verdict
    review_months: int
    approved: bool


def phase_allows(phase: int, randomised: bool) -> bool:
    """Phase I is single-arm, Phase III randomised, Phase II either."""
    return (phase == 1 and not randomised) or phase == 2 or (phase == 3 and randomised)


@lru_cache(maxsize=1024)
def catalogue_for(indications: tuple[str, ...]) -> tuple[TrialDesign, ...]:
    """Every design of the candidate ``indications``, in a fixed order (16 each); kept
    per indication tuple (the observation and the predictors ask for it every step)."""
    out = []
    for key in indications:
        for phase in (1, 2, 3):
            for randomised in (False, True):
                if not phase_allows(phase, randomised):
                    continue
                for biomarker in (False, True):
                    for combination in (False, True):
                        out.append(TrialDesign(key, phase, randomised, biomarker, combination))
    return tuple(out)


def catalogue(program: Program) -> tuple[TrialDesign, ...]:
    """``program``'s catalogue: the same size for every program, so a policy's output
    layer is fixed; entries the program can never run (biomarker-selected designs of a
    drug without a biomarker) stay in it and are always masked out."""
    return catalogue_for(tuple(ind.key for ind in program.indications))


def trial_cost(params: PortfolioParams, design: TrialDesign) -> float:
    """$M: the phase's median cost times the oncology factor and the design's factors."""
    cost = params.phase_cost[design.phase - 1] * params.oncology_cost_factor
    if design.randomised and design.phase < 3:
        cost *= params.randomised_cost
    if design.biomarker:
        cost *= params.biomarker_cost
    if design.combination:
        cost *= params.combination_cost
    return cost


def true_effect(program: Program, design: TrialDesign, start_month: int) -> float:
    """The effect a trial of ``design`` started at ``start_month`` measures."""
    p = program.params
    ind = program.indications[program.index_of[design.indication]]
    effect = ind.effect
    if program.biomarker:
        effect += p.biomarker_shift * (1.0 if design.biomarker else p.unselected_dilution)
    if design.combination:
        effect += p.combination_effect
    if ind.regime and start_month >= p.cutoff_month:
        effect -= p.regime_shift
    return effect


def tolerable(program: Program, design: TrialDesign, noise: float) -> bool:
    p = program.params
    tox = program.toxicity + (p.combination_tox if design.combination else 0.0)
    return tox + p.tox_noise_sd * noise < p.tox_limit


def draw_outcome(program: Program, design: TrialDesign, start_month: int, attempt: int) -> Outcome:
    """The outcome of the ``attempt``-th trial of this indication and phase."""
    p = program.params
    j = program.index_of[design.indication]
    rng = np.random.default_rng(
        [FAMILY_TAG, program.luck_seed, TRIAL, program.index, j, design.phase, attempt]
    )
    z = rng.standard_normal(4).tolist()
    u = rng.random(6).tolist()
    effect = true_effect(program, design, start_month)
    sd = p.estimate_sd[design.phase - 1]
    bias = 0.0
    if design.phase == 2 and not design.randomised:
        sd *= p.single_arm_sd
        bias = p.single_arm_bias
    estimate = effect + bias + sd * z[0]
    if design.phase == 1:
        success = tolerable(program, design, z[1])
    else:
        success = estimate > p.success_threshold[design.phase - 2]
    lo, hi = p.duration_months[design.phase - 1]
    readout = start_month + lo + int(u[0] * (hi - lo + 1))
    lag_lo, lag_hi = p.result_lag
    result = readout + lag_lo + int(u[1] * (lag_hi - lag_lo + 1))
    registry_lag = 1 + int(u[3] * p.late_months) if u[2] < p.late_share else 0
    r_lo, r_hi = p.review_months
    review = r_lo + int(u[4] * (r_hi - r_lo + 1))
    approved = design.phase == 3 and success and (
        effect + p.review_sd * z[2] > p.approval_threshold
    )
    return Outcome(
        success=bool(success),
        estimate=float(estimate),
        sd=float(sd),
        readout_month=readout,
        result_month=result,
        reported_estimate=float(estimate + (p.noisy_sd * z[3] if u[5] < p.noisy_share else 0.0)),
        registry_lag=registry_lag,
        review_months=review,
        approved=bool(approved),
    )
