"""Tool environments for TRL's ``GRPOTrainer(environment_factory=...)``, one per family.

Duck-typed to TRL's contract (no TRL import): ``__init__`` takes no argument; ``reset``
gets the dataset row's columns (``task``, ``seed``, optionally ``horizon``) and returns
the first observation as text; every other public method is a tool (typed arguments,
``Literal`` for fixed choices, a Google-style docstring with ``Args:``); ``get_reward``
returns the episode's score. An invalid action raises ``ValueError`` with the
environment's error code (TRL hands the model ``{"error": ...}``); the action still used
its turn, as in the environment. :func:`reward_func` serves TRL versions without
``get_reward``. See ``examples/trl_grpo/``.
"""

from clinbench.tool_envs.base import ToolEnv, reward_func, short_horizon
from clinbench.tool_envs.recruitment import RecruitmentToolEnv
from clinbench.tool_envs.trial_design import TrialDesignToolEnv

#: The tool environment of each family.
TOOL_ENVS: dict[str, type[ToolEnv]] = {
    "recruitment": RecruitmentToolEnv,
    "trial_design": TrialDesignToolEnv,
}

__all__ = [
    "TOOL_ENVS",
    "RecruitmentToolEnv",
    "ToolEnv",
    "TrialDesignToolEnv",
    "reward_func",
    "short_horizon",
]
