"""The portfolio reference planner: expected-value development with the truth in hand.

It reads the hidden program (true effects, toxicity, the regime change), which no agent
sees, and at each decision starts, best first, every next trial whose expected
discounted value is positive: the approval's value times the chance of passing every
remaining phase and the review under the outcome model, minus the expected costs, for
the best design (biomarker selection, combination or not). Trial luck it cannot see. It
is the upper reference of the normalised score, not a baseline, and is not registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scipy.special import ndtr

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.calendar import discount
from clinbench.env.portfolio.observation import IndicationView, Observation
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


def path_value(program: Program, key: str, phase: int, month: int, biomarker: bool,
               combination: bool) -> tuple[float, TrialDesign]:
    """Expected discounted value of developing ``key`` from ``phase`` with one design."""
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
    review = float(ndtr((true_effect(program, first, month) - p.approval_threshold) / p.review_sd))
    t += sum(p.review_months) // 2
    value += reach * review * ind.value * discount(t - program.start_month, p.discount_rate)
    return value, first


class PortfolioReferencePlanner(Agent):
    """Expected-value choices from the hidden program, handed in as ``world()``."""

    name = "reference_planner"
    description = "positive expected-value trials, read from the hidden program"
    envs = ("portfolio",)

    def __init__(self, context: AgentContext, world: Callable[[], Program], **config: Any):
        super().__init__(context, **config)
        self._hidden = world

    def best_next(self, obs: Observation, i: IndicationView) -> tuple[float, TrialDesign] | None:
        program = self._hidden()
        phase = i.earned + 1
        if i.filed or phase > 3 or phase in i.tried:
            return None
        options = [
            path_value(program, i.key, phase, obs.month, bm, combo)
            for bm in ((False, True) if program.biomarker else (False,))
            for combo in (False, True)
        ]
        return max(options, key=lambda o: o[0])

    def act(self, obs: Observation) -> PortfolioAction:
        ranked = []
        for i in obs.indications:
            best = self.best_next(obs, i)
            if best is not None and best[0] > 0:
                ranked.append(best)
        ranked.sort(key=lambda o: -o[0])
        return PortfolioAction(trials=self.macros.fit(obs, [d for _, d in ranked]))
