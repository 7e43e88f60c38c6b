"""What every offline agent shares: fitting from an :class:`OfflineData`, acting greedily.

An offline agent (``offline = True``) learns from logged transitions only. The
protocol (:mod:`clinbench.offline.protocol`) hands it the dataset's arrays through
:meth:`OfflineAgent.fit` and never an environment or a factory of them; ``fit``
refuses anything but an :class:`OfflineData`. It acts like the online learners: a
masked softmax policy (``agents/core/policy.py``) over standardised macro features,
greedy at evaluation. Features are rounded to float32 when acting, as they are stored.
The networks are sized by the layout the data come in and act on the task through a
:class:`~clinbench.offline.layout.Projection` by name: the identity, unless the data
come from tasks with other sites (:mod:`clinbench.offline.layout`).

Shared hyper-parameters (each method's YAML in ``conf/agent/``):
    hidden (64): hidden units of every network (0: linear).
    lr (0.003): Adam step size.
    steps (2000): gradient steps of each network.
    batch_size (256): transitions per gradient step.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam
from clinbench.agents.core.policy import Forward, SoftmaxPolicy, grad_log_prob
from clinbench.agents.core.standardise import Standardiser
from clinbench.offline.data import OfflineData
from clinbench.offline.layout import Layout, Projection


class NotFittedError(RuntimeError):
    """An offline agent asked to act before it was fitted on a dataset."""


class OfflineAgent(Agent):
    """Base of the offline agents: ``fit(data, rng)`` once, then act."""

    offline: ClassVar[bool] = True
    learning = False  # never trained through environments

    def __init__(
        self,
        context: AgentContext,
        hidden: int = 64,
        lr: float = 0.003,
        steps: int = 2000,
        batch_size: int = 256,
        **config: Any,
    ):
        super().__init__(context, **config)
        if hidden < 0 or steps < 0 or batch_size < 1 or lr <= 0:
            raise ValueError(
                f"agent {self.name!r}: hidden and steps must be >= 0, batch_size >= 1, lr > 0"
            )
        self.hidden, self.lr, self.steps, self.batch_size = hidden, lr, steps, batch_size
        n_in, n_out = self.macros.n_features, self.macros.n
        self.policy = SoftmaxPolicy(n_in, n_out, np.random.default_rng(0), hidden)
        self.std = Standardiser(n_in)
        self.n_in, self.n_out = n_in, n_out
        self.projection = Projection(Layout.of(self.macros), Layout.of(self.macros))
        self.fitted = False

    # ---- fitting ------------------------------------------------------------------
    def fit(self, data: OfflineData, rng: np.random.Generator) -> None:
        """Learn from ``data`` alone (the protocol's only call before evaluation)."""
        if not isinstance(data, OfflineData):
            raise TypeError(
                f"offline agent {self.name!r} learns from an OfflineData, not a "
                f"{type(data).__name__}: offline agents never get an environment"
            )
        try:
            self.projection = Projection(
                Layout(data.feature_names, data.macro_names), Layout.of(self.macros)
            )
        except ValueError as exc:
            raise ValueError(f"{self.env_spec.env}/{self.env_spec.task}: {exc}") from None
        self.n_in, self.n_out = len(data.feature_names), len(data.macro_names)
        self.std = Standardiser(self.n_in)
        self.std.update(data.observations)
        # One stream for the policy, one for everything else: a method whose extra
        # networks collapse (iql at temperature 0) draws the policy exactly as bc.
        self.policy_rng, self.value_rng = rng.spawn(2)
        with threadpool_limits(limits=1, user_api="blas"):
            self.learn(data, self.std(data.observations), self.std(data.next_observations), rng)
        self.fitted = True

    def learn(
        self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng: np.random.Generator
    ) -> None:
        """The method: fit ``self.policy`` (and anything else) from standardised inputs."""
        raise NotImplementedError

    def network(self, n_out: int, rng: np.random.Generator) -> SoftmaxPolicy:
        """A fresh network of the agent's shape (the policy's MLP, used as a regressor)."""
        return SoftmaxPolicy(self.n_in, n_out, rng, self.hidden)

    def fit_policy(
        self,
        x: np.ndarray,
        masks: np.ndarray,
        actions: np.ndarray,
        weights: np.ndarray | None = None,
    ) -> None:
        """Weighted cross-entropy of the logged actions, minibatch Adam: behavioural
        cloning when ``weights`` is None or all equal (then exactly bc's numbers), its
        weighted variants else."""
        rng = self.policy_rng
        if weights is not None and np.all(weights == weights[0]):
            weights = None
        self.policy = self.network(self.n_out, rng)
        optimizer = Adam(self.policy.params, lr=self.lr)
        for _ in range(self.steps):
            i = rng.integers(0, actions.size, self.batch_size)
            fwd = self.policy.forward(x[i], masks[i])
            g = grad_log_prob(fwd, actions[i])
            if weights is None:
                g /= i.size
            else:
                w = weights[i]
                g *= (w / w.sum())[:, None]
            optimizer.step(self.policy.params, self.policy.backward(fwd, g))

    # ---- acting -------------------------------------------------------------------
    def act(self, obs: Any) -> Any:
        if not self.fitted:
            raise NotFittedError(
                f"offline agent {self.name!r} has not been fitted: it learns from a dataset "
                f"(clinbench sweep --agents {self.name} --dataset NAME)"
            )
        proj = self.projection
        f = proj.features(self.macros.features(obs)).astype(np.float32).astype(np.float64)
        a, _ = self.policy.choose(self.std(f), proj.mask(self.macros.mask(obs)), None)
        return self.macros.to_action(proj.action(a), obs)


def regression_step(net: SoftmaxPolicy, x: np.ndarray, g_out: np.ndarray) -> dict[str, np.ndarray]:
    """Parameter gradients of a network used as a regressor, given dLoss/doutput."""
    out, hidden = net.logits(x)
    fwd = Forward(x=x, hidden=hidden, probs=out, logp=out, mask=np.ones(out.shape, dtype=bool))
    return net.backward(fwd, g_out)


def predict(net: SoftmaxPolicy, x: np.ndarray) -> np.ndarray:
    """A network's raw outputs (``W2 tanh(W1 x + b1) + b2``)."""
    return net.logits(x)[0]
