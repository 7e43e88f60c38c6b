"""Learned-reward training on the prediction task (``learned_reward``).

The paper's learned-reward method trains a reward model on outcomes and the policy
against it. Here the reward model is a ridge regression of an episode's standardised
return (its program's realised net value) on the features of the decision taken: the
mean :func:`~clinbench.agents.portfolio.imitation.entry_features` of the logged
portfolio's entries (zeros and an "empty" flag for an empty one) beside the state's
features; the policy is the imitation policy weighted by ``exp(clip(z, -CLIP, CLIP) /
TEMPERATURE)`` of the standardised *predicted* reward, so the noise of a single
program's luck is smoothed by what similar decisions earned.

Hyper-parameters (not searched): ``RIDGE`` below; ``CLIP`` and ``TEMPERATURE`` are
rwbc's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clinbench.agents.portfolio.imitation import (
    CLIP,
    TEMPERATURE,
    ImitationPolicy,
    standardised,
)
from clinbench.agents.portfolio.iql import state_features
from clinbench.env.portfolio.offline import OfflineEpisode

#: ridge penalty of the reward model (on standardised returns, unit-scale features)
RIDGE = 1.0


def decision_features(episode: OfflineEpisode, features: np.ndarray) -> np.ndarray:
    """The logged portfolio's mean entry features and an empty flag, then the state's."""
    index = {d: k for k, d in enumerate(episode.catalogue)}
    rows = [index[d] for d in episode.label]
    chosen = features[rows].mean(axis=0) if rows else np.zeros(features.shape[1])
    return np.concatenate([chosen, [not rows], state_features(episode, features)])


def reward_model(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Ridge regression coefficients (intercept first, not penalised)."""
    xb = np.hstack([np.ones((x.shape[0], 1)), x])
    penalty = ridge * np.eye(xb.shape[1])
    penalty[0, 0] = 0.0
    return np.linalg.solve(xb.T @ xb + penalty, xb.T @ y)


def reward_weights(
    episodes: Sequence[OfflineEpisode], features: Sequence[np.ndarray], returns: np.ndarray
) -> np.ndarray:
    """``exp(clip(z, -CLIP, CLIP) / TEMPERATURE)`` of the standardised predicted rewards."""
    x = np.array([decision_features(e, f) for e, f in zip(episodes, features, strict=True)])
    coef = reward_model(x, standardised(returns))
    predicted = standardised(coef[0] + x @ coef[1:])
    return np.exp(np.clip(predicted, -CLIP, CLIP) / TEMPERATURE)


def fit_learned_reward(
    episodes: Sequence[OfflineEpisode], features: Sequence[np.ndarray], returns: np.ndarray
) -> ImitationPolicy:
    return ImitationPolicy.fit(episodes, reward_weights(episodes, features, returns), features)
