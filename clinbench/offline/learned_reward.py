"""``learned_reward``: fit a model of the return of (state, action), act greedily under it.

The "learned reward" arm of "Learning Clinical-Trial Strategy: Offline Policy Training
for Decision Agents" (arXiv 2608.03606): a regression of the outcome on the logged
decision, then the decision the model rates best (Monte Carlo Q-estimation of the
behaviour policy's value, and one step of greedy improvement on it). The model is the
policy's network with one output per macro-action, fitted by squared error on the
logged action's output; acting takes the valid macro-action of highest predicted
return. Actions the data rarely shows are extrapolated, the known weakness of acting
greedily on a model fitted offline.

Hyper-parameters (``conf/agent/learned_reward.yaml``; the shared ones in
``clinbench/offline/base.py``):
    target ("return_to_go"): the regression target, the return from the decision on;
        "reward" (ablation) fits the immediate reward only, a myopic model that cannot
        see an outcome arriving at the episode's end.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam
from clinbench.offline.base import OfflineAgent, predict, regression_step
from clinbench.offline.data import OfflineData

TARGETS = ("return_to_go", "reward")


class LearnedRewardAgent(OfflineAgent):
    name = "learned_reward"
    description = "a model of the return of (state, action), acted on greedily (offline)"

    def __init__(self, context: AgentContext, target: str = "return_to_go", **config: Any):
        super().__init__(context, **config)
        if target not in TARGETS:
            raise ValueError(f"learned_reward target {target!r}; valid: {', '.join(TARGETS)}")
        self.target = target

    def learn(
        self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng: np.random.Generator
    ) -> None:
        y = data.returns_to_go if self.target == "return_to_go" else data.rewards
        self.policy = fit_action_values(self, x, data.actions, y, self.policy_rng)


def fit_action_values(
    agent: OfflineAgent, x: np.ndarray, actions: np.ndarray, y: np.ndarray, rng
) -> Any:
    """Minibatch Adam on the squared error of the logged action's output; the network
    (a :class:`SoftmaxPolicy` used as a regressor) then ranks actions by its outputs."""
    net = agent.network(agent.n_out, rng)
    optimizer = Adam(net.params, lr=agent.lr)
    for _ in range(agent.steps):
        i = rng.integers(0, actions.size, agent.batch_size)
        rows = np.arange(i.size)
        err = y[i] - predict(net, x[i])[rows, actions[i]]
        g = np.zeros((i.size, agent.n_out))
        g[rows, actions[i]] = err * (2.0 / i.size)  # ascent on -MSE
        optimizer.step(net.params, regression_step(net, x[i], g))
    return net
