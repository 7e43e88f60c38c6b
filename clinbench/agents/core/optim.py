"""Adam (Kingma & Ba, arXiv 1412.6980) over a dict of numpy arrays, for ascent."""

from __future__ import annotations

import numpy as np


class Adam:
    """Maximises: ``step(params, grads)`` moves params along the gradient."""

    def __init__(
        self, params: dict[str, np.ndarray], lr: float = 0.01, betas=(0.9, 0.999), eps=1e-8
    ):
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        c1, c2 = 1.0 - self.b1**self.t, 1.0 - self.b2**self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1.0 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1.0 - self.b2) * g * g
            params[k] += self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)


def minibatches(n: int, size: int, steps: int, rng: np.random.Generator):
    """Row indices of ``steps`` minibatches of ``size`` rows out of ``n``: shuffled
    passes, each row once per pass (a pass's last batch may be smaller).

    ``size`` 0, or at least ``n``: every row at every step (yields None, the caller's
    whole arrays) and nothing is drawn from ``rng``, so full-batch training keeps its
    numbers and its stream.
    """
    if size <= 0 or size >= n:
        for _ in range(steps):
            yield None
        return
    done = 0
    while done < steps:
        order = rng.permutation(n)
        for start in range(0, n, size):
            if done == steps:
                return
            yield order[start : start + size]
            done += 1
