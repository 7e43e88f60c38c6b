"""Ridge and (multinomial) logistic regression helpers on top of scipy.

Used as critics (mira), hindsight action models (hcapo) and similar. L2-penalised
maximum likelihood with analytic gradients, solved by L-BFGS (warm-started from the
last fit, at most ``max_iter`` iterations); deterministic (no RNG).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize
from scipy.special import expit, log_softmax


def _with_bias(x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.ones((x.shape[0], 1))])


@dataclass
class Ridge:
    """y ~ x w + b minimising ||y - xw - b||^2 + alpha ||w||^2 (bias not penalised)."""

    alpha: float = 1.0
    coef: np.ndarray | None = None

    def fit(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Ridge:
        xb = _with_bias(x)
        w = np.ones(len(y)) if weight is None else weight
        penalty = self.alpha * np.eye(xb.shape[1])
        penalty[-1, -1] = 0.0
        a = xb.T @ (xb * w[:, None]) + penalty
        self.coef = linalg.solve(a + 1e-9 * np.eye(a.shape[0]), xb.T @ (w * y), assume_a="pos")
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.coef is None:
            return np.zeros(x.shape[0])
        return _with_bias(x) @ self.coef


@dataclass
class Logistic:
    """P(y=1 | x) = sigmoid(x w + b), L2 penalty ``alpha`` on w."""

    alpha: float = 1.0
    max_iter: int = 200
    coef: np.ndarray | None = None

    def loss_and_grad(
        self, theta: np.ndarray, xb: np.ndarray, y: np.ndarray
    ) -> tuple[float, np.ndarray]:
        z = xb @ theta
        # -log-likelihood: sum log(1 + e^z) - y z, computed stably
        nll = np.sum(np.logaddexp(0.0, z) - y * z)
        w = theta.copy()
        w[-1] = 0.0
        grad = xb.T @ (expit(z) - y) + self.alpha * w
        return float(nll + 0.5 * self.alpha * w @ w), grad

    def fit(self, x: np.ndarray, y: np.ndarray) -> Logistic:
        xb = _with_bias(x)
        theta0 = np.zeros(xb.shape[1]) if self.coef is None else self.coef
        res = _lbfgs(self.loss_and_grad, theta0, (xb, y.astype(float)), self.max_iter)
        self.coef = res.x
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        if self.coef is None:
            return np.full(x.shape[0], 0.5)
        return expit(_with_bias(x) @ self.coef)


@dataclass
class MultinomialLogistic:
    """P(a | x) = softmax(x W + b) over ``n_classes``, L2 penalty ``alpha`` on W."""

    n_classes: int
    alpha: float = 1.0
    max_iter: int = 200
    coef: np.ndarray | None = None  # (features + 1, classes)

    def loss_and_grad(
        self, theta: np.ndarray, xb: np.ndarray, y: np.ndarray
    ) -> tuple[float, np.ndarray]:
        w = theta.reshape(xb.shape[1], self.n_classes)
        logp = log_softmax(xb @ w, axis=1)
        nll = -logp[np.arange(y.size), y].sum()
        g = np.exp(logp)
        g[np.arange(y.size), y] -= 1.0
        pen = w.copy()
        pen[-1] = 0.0
        grad = xb.T @ g + self.alpha * pen
        return float(nll + 0.5 * self.alpha * np.sum(pen * pen)), grad.ravel()

    def fit(self, x: np.ndarray, y: np.ndarray) -> MultinomialLogistic:
        xb = _with_bias(x)
        theta0 = np.zeros(xb.shape[1] * self.n_classes) if self.coef is None else self.coef.ravel()
        res = _lbfgs(self.loss_and_grad, theta0, (xb, y.astype(int)), self.max_iter)
        self.coef = res.x.reshape(xb.shape[1], self.n_classes)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        if self.coef is None:
            return np.full((x.shape[0], self.n_classes), 1.0 / self.n_classes)
        return np.exp(log_softmax(_with_bias(x) @ self.coef, axis=1))


def _lbfgs(fun, theta0: np.ndarray, args: tuple, max_iter: int):
    """Minimise ``fun(theta, *args) -> (loss, grad)`` with L-BFGS-B."""
    return optimize.minimize(
        fun, theta0, args=args, jac=True, method="L-BFGS-B", options={"maxiter": max_iter}
    )
