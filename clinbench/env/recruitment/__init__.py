"""The patient-recruitment simulator and its three registered tasks."""

from __future__ import annotations

from typing import Any

from clinbench.env.base import EnvSpec
from clinbench.env.recruitment.actions import ACTION_TYPES, PHASES, Action, ActionType, ErrorCode
from clinbench.env.recruitment.family import FAMILY
from clinbench.env.recruitment.observation import Observation
from clinbench.env.recruitment.simulator import RecruitmentEnv
from clinbench.env.recruitment.tasks import TASK_VERSION, TASKS, TaskParams
from clinbench.env.registry import register, register_family

__all__ = [
    "ACTION_TYPES",
    "PHASES",
    "TASKS",
    "TASK_VERSION",
    "Action",
    "ActionType",
    "ErrorCode",
    "Observation",
    "RecruitmentEnv",
    "TaskParams",
]


def _factory(task: str):
    def make(**overrides: Any) -> RecruitmentEnv:
        return RecruitmentEnv(TASKS[task].with_overrides(**overrides))

    return make


register_family(FAMILY)
for _name, _params in TASKS.items():
    register(
        EnvSpec("recruitment", _name, TASK_VERSION, _params, _params.description),
        _factory(_name),
    )
