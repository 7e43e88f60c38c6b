"""Registering the portfolio family and its online tasks (the package's ``__init__``
imports this module)."""

from __future__ import annotations

import importlib
from typing import Any

from clinbench.env.base import EnvSpec
from clinbench.env.portfolio.family import FAMILY
from clinbench.env.portfolio.params import TASK_VERSION, TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.registry import register, register_family
from clinbench.logged import register_logged
from clinbench.studies import register_study


def _factory(task: str):
    def make(**overrides: Any) -> PortfolioEnv:
        params = TASKS[task].with_overrides(**overrides)
        return PortfolioEnv(
            params, EnvSpec("portfolio", task, TASK_VERSION, params, params.description)
        )

    return make


# The registry loads family packages alphabetically; the families shipped before this
# one register first, so their tasks keep the first ids (``env_ids()[0]`` and the CLI's
# defaults).
for _earlier in ("recruitment", "trial_design"):
    importlib.import_module(f"clinbench.env.{_earlier}")

register_family(FAMILY)
register_logged("portfolio", "clinbench.env.portfolio.logged:build_logged")
register_study("portfolio", "clinbench.agents.portfolio.study:STUDY")
for _name, _params in TASKS.items():
    register(
        EnvSpec("portfolio", _name, TASK_VERSION, _params, _params.description),
        _factory(_name),
    )
