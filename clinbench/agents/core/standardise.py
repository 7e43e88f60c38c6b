"""Running feature standardisation (Welford / Chan parallel update)."""

from __future__ import annotations

import numpy as np


class Standardiser:
    """Tracks mean and variance of feature rows; maps x to (x - mean) / sd.

    ``min_sd`` keeps near-constant features from being blown up. Frozen statistics
    are used at evaluation; ``update`` is called only during training.
    """

    def __init__(self, n_features: int, min_sd: float = 0.05):
        self.count = 0.0
        self.mean = np.zeros(n_features)
        self.m2 = np.zeros(n_features)
        self.min_sd = min_sd

    def update(self, rows: np.ndarray) -> None:
        rows = np.atleast_2d(rows)
        n = rows.shape[0]
        if n == 0:
            return
        batch_mean = rows.mean(axis=0)
        batch_m2 = ((rows - batch_mean) ** 2).sum(axis=0)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + batch_m2 + delta**2 * (self.count * n / total)
        self.count = total

    @property
    def sd(self) -> np.ndarray:
        var = self.m2 / self.count if self.count > 1 else np.ones_like(self.m2)
        return np.maximum(np.sqrt(var), self.min_sd)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.sd
