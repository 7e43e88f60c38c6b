"""Held-out splits: which logged episodes an offline cell of a task learns from.

Evaluation is always online on the shared evaluation worlds, which no dataset contains
(datasets are logged on training worlds), so every split holds out the worlds. On top:

``worlds``
    the task's own episodes, every behaviour agent (the default).
``task``
    the episodes of the dataset's *other* tasks (leave one task out: a cell on
    ``efficacy_safety`` of a dataset of the three trial tasks learns from
    ``effective_drug`` and ``rare_disease``; one of the three recruitment tasks
    learns from the other two, whose sites it partly lacks or adds to: the dataset
    unites their layouts by name, :mod:`clinbench.offline.layout`).
``behaviour=A[+B...]``
    the task's episodes of the named behaviour agents only (an unseen mixture: the
    same protocol, another behaviour).
``unseen=METRIC``
    the task's episodes whose episode metric ``METRIC`` is 0 (e.g. ``null_world`` of
    the trial-design family: the data has no null drug; the evaluation worlds do).
    ``METRIC`` is any 0/1 episode metric of the family.

A split selects episodes by their metadata; the agent sees only the selected arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clinbench.offline.data import LoggedEpisode

KINDS = ("worlds", "task", "behaviour", "unseen")
SYNTAX = "worlds, task, behaviour=AGENT[+AGENT...], unseen=METRIC"


class SplitError(ValueError):
    """A split the dataset or family cannot provide (exit code 2)."""


@dataclass(frozen=True)
class Split:
    kind: str
    arg: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The split as written (``behaviour=heuristic+random``)."""
        return self.kind + (f"={'+'.join(self.arg)}" if self.arg else "")

    def agent_name(self, agent: str) -> str:
        """The name of an agent's cells under this split (``bc``, ``bc@task``)."""
        return agent if self.kind == "worlds" else f"{agent}@{self.label}"


def parse(text: str) -> Split:
    kind, _, arg = text.strip().partition("=")
    if kind not in KINDS:
        raise SplitError(f"unknown split {text!r}; valid: {SYNTAX}")
    args = tuple(a for a in arg.split("+") if a) if arg else ()
    if kind in ("behaviour", "unseen") and not args:
        raise SplitError(f"split {kind!r} needs a value: {kind}=... ({SYNTAX})")
    if kind in ("worlds", "task") and args:
        raise SplitError(f"split {kind!r} takes no value ({SYNTAX})")
    if kind == "unseen" and len(args) != 1:
        raise SplitError(f"split 'unseen' names one episode metric, got {arg!r}")
    return Split(kind, args)


def check(split: Split, meta: dict, metrics: Sequence[str]) -> None:
    """Refuse a split the dataset cannot provide, naming what it has."""
    spec = meta["spec"]
    if split.kind == "task" and len(spec["tasks"]) < 2:
        raise SplitError(
            f"split 'task' needs a dataset of two or more tasks; {meta['name']!r} has "
            f"{', '.join(spec['tasks'])}"
        )
    if split.kind == "behaviour":
        unknown = [a for a in split.arg if a not in spec["agents"]]
        if unknown:
            raise SplitError(
                f"split {split.label!r}: {', '.join(unknown)} not among the dataset's "
                f"behaviour agents ({', '.join(spec['agents'])})"
            )
    if split.kind == "unseen" and split.arg[0] not in metrics:
        raise SplitError(
            f"split {split.label!r}: no episode metric {split.arg[0]!r}; valid: "
            f"{', '.join(metrics)}"
        )


def tasks(split: Split, meta: dict) -> list[str]:
    """The tasks an offline agent is evaluated on under ``split``: the dataset's tasks."""
    return list(meta["spec"]["tasks"])


def select(episodes: Sequence[LoggedEpisode], split: Split, task: str) -> list[LoggedEpisode]:
    """The episodes a cell on ``task`` learns from."""
    if split.kind == "task":
        return [e for e in episodes if e.task != task]
    own = [e for e in episodes if e.task == task]
    if split.kind == "behaviour":
        return [e for e in own if e.behaviour in split.arg]
    if split.kind == "unseen":
        return [e for e in own if not e.metrics.get(split.arg[0], 0.0)]
    return own
