"""Train / test splits of offline episodes: held-out drug, sponsor, class and time.

Each split is a pure function of the episodes (and a seed for which groups are held
out): every episode of a held-out drug, sponsor or class is in the test set and none
in the training set; the temporal split puts every decision date before the cutoff in
training and every later one in test, so nothing trained on can have seen a record
dated after the cutoff (the paper's contamination-clean holdout). One program develops
one drug, so the drug split holds out whole programs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from clinbench.env.portfolio.offline import OfflineEpisode

#: Sub-stream tag of the held-out groups' draw.
SPLIT_TAG = 0x5911
SPLITS = ("drug", "sponsor", "class", "temporal")
_GROUP: dict[str, Callable[[OfflineEpisode], str]] = {
    "drug": lambda e: e.drug_id,
    "sponsor": lambda e: e.sponsor_id,
    "class": lambda e: e.drug_class,
}


@dataclass(frozen=True)
class Split:
    name: str
    train: tuple[OfflineEpisode, ...]
    test: tuple[OfflineEpisode, ...]
    #: the held-out groups (drug, sponsor or class ids; empty for the temporal split)
    held_out: frozenset[str]


def held_out_groups(groups: Sequence[str], fraction: float, seed: int) -> frozenset[str]:
    """``fraction`` of the distinct ``groups`` (at least one, never all), drawn by ``seed``."""
    distinct = sorted(set(groups))
    if len(distinct) < 2:
        raise ValueError(f"a group split needs at least 2 groups, got {len(distinct)}")
    k = min(len(distinct) - 1, max(1, round(fraction * len(distinct))))
    order = np.random.default_rng([SPLIT_TAG, seed]).permutation(len(distinct))
    return frozenset(distinct[i] for i in order[:k].tolist())


def group_split(
    episodes: Sequence[OfflineEpisode], by: str, fraction: float = 0.2, seed: int = 0
) -> Split:
    """Hold out ``fraction`` of the drugs, sponsors or classes (``by``)."""
    if by not in _GROUP:
        raise ValueError(f"unknown group {by!r}; valid: {sorted(_GROUP)}")
    key = _GROUP[by]
    out = held_out_groups([key(e) for e in episodes], fraction, seed)
    train = tuple(e for e in episodes if key(e) not in out)
    test = tuple(e for e in episodes if key(e) in out)
    return Split(by, train, test, out)


def temporal_split(episodes: Sequence[OfflineEpisode], cutoff_month: int) -> Split:
    """Decision dates before ``cutoff_month`` train; the rest test."""
    train = tuple(e for e in episodes if e.month < cutoff_month)
    test = tuple(e for e in episodes if e.month >= cutoff_month)
    return Split("temporal", train, test, frozenset())


def make_split(
    episodes: Sequence[OfflineEpisode], name: str, cutoff_month: int, seed: int = 0,
    fraction: float = 0.2,
) -> Split:
    """The split ``name`` (one of ``SPLITS``)."""
    if name == "temporal":
        return temporal_split(episodes, cutoff_month)
    if name not in SPLITS:
        raise ValueError(f"unknown split {name!r}; valid: {SPLITS}")
    return group_split(episodes, name, fraction, seed)
