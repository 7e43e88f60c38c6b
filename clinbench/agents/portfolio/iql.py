"""Implicit Q-learning on the prediction task (``iql``), in its one-step form.

IQL ("Offline Reinforcement Learning with Implicit Q-Learning", arXiv 2110.06169) fits
a state value as an upper expectile of the action values and extracts the policy by
advantage-weighted regression, ``exp(beta (Q - V))``. A prediction episode is one
decision whose outcome is its program's realised net value, so ``Q(s, a)`` of the logged
portfolio is that return (standardised over the training episodes, a Monte-Carlo
estimate, not a learned critic), ``V(s)`` a linear expectile regression of it on state
features (the mean and maximum over the valid catalogue entries of
:func:`~clinbench.agents.portfolio.imitation.entry_features`), and the policy the
logistic imitation policy weighted by the clipped exponentiated advantage.

Hyper-parameters are the constants below (IQL's defaults where they apply; not searched).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize

from clinbench.agents.portfolio.imitation import ImitationPolicy, standardised
from clinbench.env.portfolio.offline import OfflineEpisode

#: the expectile of V (IQL's 0.7)
TAU = 0.7
#: inverse temperature of the advantage weights (IQL's 3.0 on its locomotion tasks)
BETA = 3.0
#: the weights' ceiling (IQL's 100)
MAX_WEIGHT = 100.0
#: ridge penalty of the value regression
L2 = 1e-3


def state_features(episode: OfflineEpisode, features: np.ndarray) -> np.ndarray:
    """Mean and maximum of the entry features over the valid catalogue entries."""
    x = features[episode.mask]
    return np.concatenate([x.mean(axis=0), x.max(axis=0)])


def expectile_regression(x: np.ndarray, y: np.ndarray, tau: float = TAU, l2: float = L2):
    """Linear fit (intercept first) minimising the asymmetric squared loss
    ``|tau - 1(y < f)| (y - f)^2``."""
    xb = np.hstack([np.ones((x.shape[0], 1)), x])

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        r = y - xb @ beta
        w = np.where(r < 0, 1 - tau, tau)
        pen = beta.copy()
        pen[0] = 0.0
        return (w * r * r).mean() + 0.5 * l2 * pen @ pen, -2 * xb.T @ (w * r) / len(y) + l2 * pen

    res = minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B")
    if not res.success:
        raise RuntimeError(f"the expectile fit did not converge: {res.message}")
    return res.x


def advantage_weights(
    episodes: Sequence[OfflineEpisode], features: Sequence[np.ndarray], returns: np.ndarray
) -> np.ndarray:
    """``min(exp(BETA (Q - V(s))), MAX_WEIGHT)`` per episode."""
    q = standardised(returns)
    x = np.array([state_features(e, f) for e, f in zip(episodes, features, strict=True)])
    coef = expectile_regression(x, q)
    v = coef[0] + x @ coef[1:]
    return np.minimum(np.exp(BETA * (q - v)), MAX_WEIGHT)


def fit_iql(
    episodes: Sequence[OfflineEpisode], features: Sequence[np.ndarray], returns: np.ndarray
) -> ImitationPolicy:
    """The advantage-weighted imitation policy."""
    return ImitationPolicy.fit(episodes, advantage_weights(episodes, features, returns), features)
