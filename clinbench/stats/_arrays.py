"""Input checks and random-generator plumbing shared by the statistics modules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

#: Bootstrap replicates drawn per block; bounds memory at ``chunk * runs`` integers.
DEFAULT_CHUNK = 10_000


def as_sample(x: Any, name: str = "x", min_n: int = 1) -> np.ndarray:
    """``x`` as a finite 1-d float array with at least ``min_n`` values."""
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of scores, got shape {a.shape}")
    if a.size < min_n:
        raise ValueError(f"{name} needs at least {min_n} values, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


#: Spread, relative to the magnitude of the inputs, below which values count as equal.
#: The one tolerance for "equal" in every statistic (t-tests, effect sizes, P(X > Y),
#: Wilcoxon, ranks, equivalence): two constants 1e-13 apart are equal everywhere or
#: nowhere, never p = 1 in one table and P(X > Y) = 0.4 in the next.
ROUNDING = 1e-12


def magnitude(*arrays: np.ndarray) -> float:
    """The largest absolute value of the arrays: what their rounding noise is relative to."""
    return max((float(np.max(np.abs(a))) for a in arrays if np.size(a)), default=0.0)


def is_constant(a: np.ndarray, scale: float | None = None) -> bool:
    """All values equal up to rounding: ``max - min <= ROUNDING * scale``.

    ``scale`` is the magnitude of the numbers ``a`` was computed from (default: of ``a``).
    Float spread can be pure rounding noise: ``var([0.7 + 0.2] * 5) ~ 1e-32``, and the
    differences ``x - y`` of scores shifted by a constant are equal only to the last bit;
    a t statistic of such noise is about 1e15 and means nothing.
    """
    if scale is None:
        scale = magnitude(a)
    return bool(np.ptp(a) <= ROUNDING * scale) if a.size else True


def snap_zero(d: np.ndarray, scale: float) -> np.ndarray:
    """Differences within rounding of zero set to exactly zero (ties of a rank test)."""
    return np.where(np.abs(d) <= ROUNDING * scale, 0.0, d)


def snap_ties(values: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Each row's values that lie within rounding of their neighbour (in sorted order)
    set to the smallest of their run, so a rank statistic sees them as ties."""
    a = np.array(values, dtype=float)
    out = a.reshape(-1, a.shape[-1]).copy() if a.ndim else a.reshape(1, 1).copy()
    for row in out:
        order = np.argsort(row, kind="stable")
        tol = ROUNDING * (magnitude(row) if scale is None else scale)
        sorted_values = row[order]
        gaps = np.diff(sorted_values) > tol
        run = np.concatenate([[0], np.cumsum(gaps)])
        starts = sorted_values[np.searchsorted(run, run)]  # first value of each run
        row[order] = starts
    return out.reshape(a.shape)


def check_confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return float(confidence)


def check_reps(reps: int) -> int:
    if int(reps) != reps or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps}")
    return int(reps)


def as_generator(rng: Any) -> np.random.Generator:
    """A ``Generator`` unchanged, or a new one seeded from an int / ``SeedSequence``.

    ``None`` is refused: it would seed from OS entropy and the report could not be
    reproduced from its recorded bootstrap seed.
    """
    if rng is None:
        raise TypeError("pass a numpy.random.Generator or an integer seed, not None")
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def chunks(reps: int, chunk: int = DEFAULT_CHUNK) -> Iterator[int]:
    """Block sizes that sum to ``reps``; the draw order of every bootstrap follows them."""
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    done = 0
    while done < reps:
        size = min(chunk, reps - done)
        yield size
        done += size
