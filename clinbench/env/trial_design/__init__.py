"""The adaptive Phase II dose-finding environment (``trial_design``) and its three tasks."""

from __future__ import annotations

from typing import Any

from clinbench.env.base import EnvSpec
from clinbench.env.registry import register, register_family
from clinbench.env.trial_design.actions import ErrorCode, TrialAction
from clinbench.env.trial_design.family import FAMILY
from clinbench.env.trial_design.observation import Observation
from clinbench.env.trial_design.simulator import TrialDesignEnv
from clinbench.env.trial_design.tasks import ARMS, DOSE_ARMS, TASK_VERSION, TASKS, TaskParams

__all__ = [
    "ARMS",
    "DOSE_ARMS",
    "TASKS",
    "TASK_VERSION",
    "ErrorCode",
    "Observation",
    "TaskParams",
    "TrialAction",
    "TrialDesignEnv",
]


def _factory(task: str):
    def make(**overrides: Any) -> TrialDesignEnv:
        params = TASKS[task].with_overrides(**overrides)
        return TrialDesignEnv(
            params, EnvSpec("trial_design", task, TASK_VERSION, params, params.description)
        )

    return make


register_family(FAMILY)
for _name, _params in TASKS.items():
    register(
        EnvSpec("trial_design", _name, TASK_VERSION, _params, _params.description),
        _factory(_name),
    )
