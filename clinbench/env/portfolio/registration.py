"""Registering the portfolio family and its online tasks (importing this module does it).

Kept out of the package's ``__init__`` until the shared tests know the family (frozen
Gymnasium digests, the CLI's and the server's per-family expectations): the registry's
package scan imports only ``__init__``, so nothing registers the family by accident.
Switching it on is one line in ``__init__``: ``from clinbench.env.portfolio import
registration``.
"""

from __future__ import annotations

import importlib
from typing import Any

from clinbench.env.base import EnvSpec
from clinbench.env.portfolio.family import FAMILY
from clinbench.env.portfolio.params import TASK_VERSION, TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.registry import register, register_family


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
for _name, _params in TASKS.items():
    register(
        EnvSpec("portfolio", _name, TASK_VERSION, _params, _params.description),
        _factory(_name),
    )
