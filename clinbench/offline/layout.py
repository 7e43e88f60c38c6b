"""One observation layout for a dataset of several tasks: their names, united.

The tasks of one family may differ in their macro features and macro-actions (the
recruitment tasks do, by their sites: ``site_G_wait`` exists on hard_bench only). A
dataset stores every episode in the union of its tasks' names: the names of the task
with the most features first, in its order, then any other task's extra names in
theirs. A feature a task lacks is stored as 0, a macro-action it lacks as never valid.
For tasks that share one layout (the trial-design tasks) the union is that layout and
nothing is moved.

A cell learns in the layout of the tasks its split selects (easy and medium: medium's
names), not the whole dataset's, so no input is a column its episodes never filled. It
plays its task through a :class:`Projection` of that layout onto the task's, by the
same names: a feature of the task the data lacks is not an input (the agent never saw
it), a macro-action the data lacks is never chosen. This is what lets a cell learn from
easy and medium and be evaluated on hard (the ``task`` split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from clinbench.offline.data import LoggedEpisode


@dataclass(frozen=True)
class Layout:
    """Macro feature names and macro-action names, in array order."""

    feature_names: tuple[str, ...]
    macro_names: tuple[str, ...]

    @classmethod
    def of(cls, macro_space) -> Layout:
        return cls(tuple(macro_space.feature_names), tuple(macro_space.names))


def union(layouts: Sequence[Layout]) -> Layout:
    """The dataset layout of tasks with these layouts (see the module docstring)."""
    ordered = sorted(layouts, key=lambda lay: -len(lay.feature_names))  # stable

    def united(names: list[tuple[str, ...]]) -> tuple[str, ...]:
        out: dict[str, None] = {}
        for group in names:
            out.update(dict.fromkeys(group))
        return tuple(out)

    return Layout(
        united([lay.feature_names for lay in ordered]),
        united([lay.macro_names for lay in ordered]),
    )


def _positions(names: tuple[str, ...], within: tuple[str, ...]) -> np.ndarray:
    """For each of ``names``, its index in ``within`` (-1 where absent)."""
    at = {n: i for i, n in enumerate(within)}
    return np.array([at.get(n, -1) for n in names], dtype=np.int64)


def _take(values: np.ndarray, idx: np.ndarray, fill) -> np.ndarray:
    """``values[..., idx]`` with ``fill`` where ``idx`` is -1."""
    out = np.full((*values.shape[:-1], idx.size), fill, dtype=values.dtype)
    ok = idx >= 0
    out[..., ok] = values[..., idx[ok]]
    return out


def relayout(episode: LoggedEpisode, source: Layout, target: Layout) -> LoggedEpisode:
    """``episode``'s arrays, stored in layout ``source``, in layout ``target`` by name:
    a task's episode in its dataset's layout, or a dataset's episode in the layout of
    the tasks a split selects. Names ``source`` lacks are 0 (features) or never valid
    (macro-actions); every logged action must exist in ``target``."""
    if source == target:
        return episode
    features = _positions(target.feature_names, source.feature_names)
    macros = _positions(target.macro_names, source.macro_names)
    actions = _positions(source.macro_names, target.macro_names)[episode.actions]
    if (actions < 0).any():
        raise ValueError("an episode's logged macro-action is not in the target layout")
    return replace(
        episode,
        observations=_take(episode.observations, features, 0.0),
        action_masks=_take(episode.action_masks, macros, False),
        actions=actions,
    )


class Projection:
    """From a task's features, mask and macro indices to a dataset layout and back."""

    def __init__(self, data: Layout, task: Layout):
        shared_macros = set(data.macro_names) & set(task.macro_names)
        if not (set(data.feature_names) & set(task.feature_names)) or not shared_macros:
            raise ValueError(
                "the dataset's macro features and actions share no name with the task's: "
                "it was logged on another environment family"
            )
        self.identity = data == task
        self._features = _positions(data.feature_names, task.feature_names)
        self._macros = _positions(data.macro_names, task.macro_names)

    def features(self, x: np.ndarray) -> np.ndarray:
        """The task's feature vector in the data's layout (0 for features it lacks)."""
        return x if self.identity else _take(x, self._features, 0.0)

    def mask(self, mask: np.ndarray) -> np.ndarray:
        """The task's mask in the data's layout (macro-actions it lacks never valid)."""
        return mask if self.identity else _take(mask, self._macros, False)

    def action(self, k: int) -> int:
        """The task's index of the data's macro-action ``k`` (valid under ``mask``)."""
        return k if self.identity else int(self._macros[k])
