"""What an environment family tells the generic layers about itself.

The sweep, episode records, env checker, report, charts and CLI know no environment by
name. Each family registers one :class:`Family` next to its tasks; the generic layers
look it up by ``EnvSpec.env`` and read from it the observation fields the checker
enforces, the per-episode metrics the records keep, the main parameters ``clinbench
tasks`` shows, where its reference scores and domain charts live, and the labels of
its time axis and progress measure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Metric:
    """A per-episode number the environment reports in its final ``info``.

    ``rate`` metrics are 0/1 per episode (a proportion over episodes, shown with exact
    binomial intervals); ``mean`` metrics are any real number.
    """

    name: str
    label: str
    kind: str = "mean"

    def __post_init__(self) -> None:
        if self.kind not in ("mean", "rate"):
            raise ValueError(f"metric {self.name!r}: kind must be 'mean' or 'rate'")


@dataclass(frozen=True)
class OperatingCharacteristic:
    """A property of a design over many trials: ``metric`` averaged over the episodes
    where ``among`` is 1 (all episodes when ``among`` is empty). A ``rate`` metric gives
    a proportion (shown with its exact binomial interval); a ``mean`` metric a mean."""

    name: str
    label: str
    metric: str
    among: str = ""
    #: measured per trained policy on the null worlds (``Family.null_world_overrides``)
    #: where a cell played them, e.g. the type-I error
    on_null_worlds: bool = False


@dataclass(frozen=True)
class Family:
    """An environment family's hooks (see the module docstring)."""

    #: ``EnvSpec.env`` of its tasks, e.g. the ``<env>`` of ``make("<env>/<task>")``
    name: str
    #: version of its tasks; cell files record it, references belong to one version
    task_version: int
    #: field names every ``obs.to_dict()`` holds (``clinbench.env.checker``)
    observation_fields: tuple[str, ...] = ()
    #: numbers read from the final ``info`` of each episode into the cell records
    episode_metrics: tuple[Metric, ...] = ()
    #: what the report's operating-characteristics section shows (none: no section)
    operating_characteristics: tuple[OperatingCharacteristic, ...] = ()
    #: labels of ``info["score_parts"]`` keys worth showing (``clinbench run``)
    score_part_labels: Mapping[str, str] = field(default_factory=dict)
    #: ``obs.summary()`` keys shown as columns of ``clinbench run`` (key -> header)
    step_columns: Mapping[str, str] = field(default_factory=dict)
    #: action types that only pass time (hidden from ``clinbench run``'s default view)
    noop_actions: frozenset[str] = frozenset()
    #: free-text action fields, left out of the one-line action summary
    text_fields: frozenset[str] = frozenset()
    #: the task parameters ``clinbench tasks`` shows (derived ones included)
    main_params: tuple[str, ...] = ()
    param_labels: Mapping[str, str] = field(default_factory=dict)
    #: derived parameters: name -> function of the task's parameter dict
    derived_params: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    #: unit of ``obs.summary()["time"]`` and label of ``obs.summary()["progress"]``
    time_unit: str = "step"
    progress_label: str = "progress"
    #: module holding ``REFERENCE_SCORES`` (task -> {"random", "reference_planner"}) and
    #: ``TASK_VERSION``; empty when the family has none yet
    references: str = ""
    #: module holding ``CHARTS``: chart name -> ``figure(ChartData, width)`` (its
    #: domain charts); empty when it has none
    charts: str = ""
    #: evaluation episodes per cell when the protocol leaves them to the family
    #: (``protocol.eval_episodes: null``): measured by ``experiments/sample_sizes.py`` so
    #: that every non-learning agent's per-task mean has a 95 % half-width under 0.02
    evaluation_episodes: int = 10
    #: validation episodes behind each learning-curve point when the protocol leaves
    #: them to the family (``protocol.curve_episodes: null``): the protocol evaluates
    #: the trained checkpoint that scores best on them, so they should tell policies
    #: apart at a cost the default sweep can carry (the learners' per-episode score
    #: spread against the cost of an episode)
    curve_episodes: int = 5
    #: environment steps of training per learning cell when the protocol leaves it to
    #: the family (``protocol.train_steps: null``)
    training_steps: int = 0
    #: task-parameter overrides under which every world is a null world (no effect):
    #: each cell plays ``protocol.null_episodes`` of them, so each trained policy's
    #: type-I error rests on enough worlds to show a rate under its bound
    null_world_overrides: Mapping[str, Any] = field(default_factory=dict)

    def metric(self, name: str) -> Metric:
        for m in self.episode_metrics:
            if m.name == name:
                return m
        raise KeyError(f"{self.name} has no episode metric {name!r}")
