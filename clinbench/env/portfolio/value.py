"""The outcome model's expected values, read from a program's hidden truth.

Used by the score (the risk adjustment of Phase III trials and the per-program scale)
and by the reference planner; no agent sees these numbers. A trial's chance of success
and a filing's chance of approval are the model's own (``trials.draw_outcome``), so
the expectation of the risk-adjusted value equals that of the realised value for any
policy.
"""

from __future__ import annotations

from scipy.special import ndtr

from clinbench.env.portfolio.calendar import discount
from clinbench.env.portfolio.trials import TrialDesign, trial_cost, true_effect
from clinbench.env.portfolio.world import Program


def pass_probability(program: Program, d: TrialDesign, month: int) -> float:
    """P(the trial of design ``d`` started at ``month`` succeeds), from the truth."""
    p = program.params
    if d.phase == 1:
        tox = program.toxicity + (p.combination_tox if d.combination else 0.0)
        return float(ndtr((p.tox_limit - tox) / p.tox_noise_sd))
    effect = true_effect(program, d, month)
    sd = p.estimate_sd[d.phase - 1]
    bias = 0.0
    if d.phase == 2 and not d.randomised:
        sd, bias = sd * p.single_arm_sd, p.single_arm_bias
    return float(ndtr((effect + bias - p.success_threshold[d.phase - 2]) / sd))


def approval_probability(program: Program, d: TrialDesign, month: int) -> float:
    """P(a filing from a successful Phase III of ``d`` started at ``month`` is approved)
    (the review's noise is independent of the trial's)."""
    p = program.params
    return float(ndtr((true_effect(program, d, month) - p.approval_threshold) / p.review_sd))


def path_value(
    program: Program, key: str, phase: int, month: int, biomarker: bool, combination: bool
) -> tuple[float, TrialDesign]:
    """Expected discounted value of developing ``key`` from ``phase`` with one design
    (each phase started half a decision period after the previous readout, at the
    phases' mean durations), and that path's first design."""
    p = program.params
    ind = program.indications[program.index_of[key]]
    value, reach, t = 0.0, 1.0, month
    first = None
    for ph in range(phase, 4):
        d = TrialDesign(key, ph, randomised=ph == 3, biomarker=biomarker, combination=combination)
        first = first or d
        value -= reach * trial_cost(p, d) * discount(t - program.start_month, p.discount_rate)
        reach *= pass_probability(program, d, t)
        lo, hi = p.duration_months[ph - 1]
        t += (lo + hi) // 2 + p.decision_months // 2
    review = approval_probability(program, first, month)
    t += sum(p.review_months) // 2
    value += reach * review * ind.value * discount(t - program.start_month, p.discount_rate)
    return value, first


def best_path_value(
    program: Program, key: str, phase: int, month: int
) -> tuple[float, TrialDesign]:
    """The best design's :func:`path_value` (biomarker selection, combination or not)."""
    options = [
        path_value(program, key, phase, month, bm, combo)
        for bm in ((False, True) if program.biomarker else (False,))
        for combo in (False, True)
    ]
    return max(options, key=lambda o: o[0])


def expected_value(program: Program) -> float:
    """What a developer who knew the truth would expect at the start ($M): the sum over
    candidate indications of the best path's expected value from Phase I, where
    positive (0 for a program not worth developing)."""
    return sum(
        max(0.0, best_path_value(program, ind.key, 1, program.start_month)[0])
        for ind in program.indications
    )
