"""Family-wise error control over a declared family of comparisons: Holm's step-down."""

from __future__ import annotations

from typing import Any

import numpy as np


def holm(pvalues: Any) -> np.ndarray:
    """Holm-adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted, ``p̃_(i) = min(1, max_{j<=i} (m - j + 1) p_(j))``.
    Rejecting ``p̃ <= alpha`` is Holm's step-down procedure and controls the family-wise
    error rate under any dependence. This is the Bonferroni-based method, not Holm-Šidák.
    Reference: Holm, "A Simple Sequentially Rejective Multiple Test Procedure",
    Scandinavian Journal of Statistics 6 (1979).
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-d, got shape {p.shape}")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("pvalues must be finite and lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def holm_reject(pvalues: Any, alpha: float = 0.05) -> np.ndarray:
    """Which hypotheses Holm's procedure rejects at family-wise level ``alpha``."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return holm(pvalues) <= alpha
