"""``iql``: Implicit Q-Learning, for the discrete macro-actions.

Kostrikov, Nair and Levine, "Offline Reinforcement Learning with Implicit Q-Learning"
(arXiv 2110.06169). Three networks learn from the logged transitions only, never
querying an action the data does not show:
    V(s) by expectile regression on the target Q of the logged action,
        L = |tau - 1(u < 0)| u^2 with u = Q'(s, a) - V(s);
    Q(s, a) by TD, target r + gamma (1 - terminal) V(s');
    the target Q' as a Polyak average of Q.
Then the policy is extracted by advantage-weighted regression: the logged action is
cloned with weight ``exp(temperature * A / sd(A))``, A = Q'(s, a) - V(s), capped at
100 (the advantage is divided by its standard deviation over the dataset, so the
temperature does not depend on the reward's scale). Q and V are fitted first and the
policy after them, the two-stage form of the paper's simultaneous updates.

Hyper-parameters (``conf/agent/iql.yaml``; the shared ones in ``clinbench/offline/base.py``):
    expectile (0.8): tau; 0.5 makes V the mean of Q under the data, the behaviour
        policy's value (ablation: one-step, SARSA-like advantages); towards 1, V
        approaches the best logged action's value.
    temperature (3.0): inverse temperature of policy extraction; 0 is exactly ``bc``.
    discount (0.99): gamma of the TD target.
    polyak (0.005): step of the target network's average.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam
from clinbench.offline.base import OfflineAgent, predict, regression_step
from clinbench.offline.data import OfflineData

MAX_WEIGHT = 100.0


def expectile_loss_grad(u: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """The expectile loss |tau - 1(u < 0)| u^2 of each residual and its derivative in u."""
    w = np.where(u < 0, 1.0 - tau, tau)
    return w * u * u, 2.0 * w * u


def advantage_weights(adv: np.ndarray, temperature: float) -> np.ndarray:
    """``min(exp(temperature * A / sd(A)), 100)`` (all 1 at temperature 0)."""
    sd = adv.std()
    scaled = adv / sd if sd > 1e-12 else np.zeros_like(adv)
    return np.minimum(np.exp(temperature * scaled), MAX_WEIGHT)


class IQLAgent(OfflineAgent):
    name = "iql"
    description = "Implicit Q-Learning: expectile V, TD Q, advantage-weighted policy (offline)"

    def __init__(
        self,
        context: AgentContext,
        expectile: float = 0.8,
        temperature: float = 3.0,
        discount: float = 0.99,
        polyak: float = 0.005,
        **config: Any,
    ):
        super().__init__(context, **config)
        if not 0.0 < expectile < 1.0 or temperature < 0 or not 0.0 <= discount <= 1.0:
            raise ValueError("iql needs 0 < expectile < 1, temperature >= 0, 0 <= discount <= 1")
        if not 0.0 < polyak <= 1.0:
            raise ValueError("iql needs 0 < polyak <= 1")
        self.expectile, self.temperature = expectile, temperature
        self.discount, self.polyak = discount, polyak

    def learn(
        self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng: np.random.Generator
    ) -> None:
        q_target, v = self.fit_values(data, x, x_next, self.value_rng)
        rows = np.arange(data.actions.size)
        adv = predict(q_target, x)[rows, data.actions] - predict(v, x)[:, 0]
        self.fit_policy(x, data.masks, data.actions, advantage_weights(adv, self.temperature))

    def fit_values(self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng):
        """(target Q, V) after ``steps`` minibatch updates of V, Q and the average."""
        n, a_all = self.n_out, data.actions
        q, v = self.network(n, rng), self.network(1, rng)
        q_target = q.copy()
        opt_q, opt_v = Adam(q.params, lr=self.lr), Adam(v.params, lr=self.lr)
        not_done = 1.0 - data.terminals
        for _ in range(self.steps):
            i = rng.integers(0, a_all.size, self.batch_size)
            rows, a, xi = np.arange(i.size), a_all[i], x[i]
            # V: expectile of the target Q of the logged action
            u = predict(q_target, xi)[rows, a] - predict(v, xi)[:, 0]
            _, du = expectile_loss_grad(u, self.expectile)
            opt_v.step(v.params, regression_step(v, xi, (du / i.size)[:, None]))
            # Q: TD towards r + gamma V(s')
            y = data.rewards[i] + self.discount * not_done[i] * predict(v, x_next[i])[:, 0]
            g = np.zeros((i.size, n))
            g[rows, a] = (y - predict(q, xi)[rows, a]) * (2.0 / i.size)
            opt_q.step(q.params, regression_step(q, xi, g))
            for k, p in q.params.items():
                q_target.params[k] += self.polyak * (p - q_target.params[k])
        return q_target, v
