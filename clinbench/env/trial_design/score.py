"""The score of a dose-finding trial (spec section 5): decision quality first.

Every term is gated by a correct decision, so doing nothing, stopping at once, running
out of looks, a futility stop without evidence and any false claim all score exactly 0:

- a success claim for an arm that is truly effective (effect over control >= mcid in
  the nominal population) and safe (AE rate <= threshold) scores
  ``quality * efficiency`` with ``quality = effect(arm) / best effect`` among such arms;
- a futility stop scores ``efficiency`` when no arm is effective and safe and the
  evidence supports it (every active dose arm's predictive probability below
  ``futility_pp``, or no dose arm left);
- ``efficiency = 1 - cost_weight * cost share - time_weight * time share``;
- patients put on truly unsafe arms cost ``unsafe_penalty`` per planned sample, and the
  score never goes below 0.
"""

from __future__ import annotations

import numpy as np

from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.tasks import DOSE_ARMS, TaskParams
from clinbench.env.trial_design.world import World


def ruled_out(obs: Observation, params: TaskParams) -> list[bool]:
    """Per dose arm (dropped ones included): efficacy ruled out (predictive probability
    of success below ``futility_pp``) or safety ruled out (more likely above the AE
    threshold than not, with at least ``safety_min_n`` patients). A futility stop is
    credited only when every dose arm is ruled out, so dropping arms without data buys
    nothing."""
    return [
        obs.predictive_probability[j] < params.futility_pp
        or (obs.n[j + 1] >= params.safety_min_n and obs.prob_toxic[j + 1] > 0.5)
        for j in range(len(DOSE_ARMS))
    ]


def efficiency(params: TaskParams, cost_used: float, weeks: float) -> float:
    """1 for a free, instant trial; ``1 - cost_weight - time_weight`` for one that used
    the whole budget and duration."""
    cost = min(1.0, max(0.0, cost_used / params.budget))
    time = min(1.0, max(0.0, weeks / params.max_weeks))
    return 1.0 - params.cost_weight * cost - params.time_weight * time


def score_parts(
    world: World,
    decision: str | None,
    arm: str | None,
    evidence: bool,
    cost_used: float,
    weeks: float,
    n_unsafe: int,
) -> dict[str, float]:
    """E (correct decision, 0/1), quality, efficiency, exposure penalty and the score.

    ``decision`` is ``"success"``, ``"futility"`` or ``None`` (no decision yet or none
    taken); ``arm`` the claimed arm; ``evidence`` whether the futility bound held.
    """
    p = world.params
    good = world.good_arms
    correct, quality = 0.0, 0.0
    if decision == "success" and arm is not None:
        j = DOSE_ARMS.index(arm)
        if good[j]:
            correct = 1.0
            quality = float(world.effect[j] / np.max(world.effect[good]))
    elif decision == "futility" and evidence and not good.any():
        correct, quality = 1.0, 1.0
    eff = efficiency(p, cost_used, weeks)
    penalty = p.unsafe_penalty * n_unsafe / max(p.planned_patients, 1)
    score = max(0.0, quality * eff - penalty) if correct else 0.0
    return {
        "correct": correct,
        "quality": quality,
        "efficiency": eff,
        "unsafe_exposure": penalty,
        "score": score,
    }
