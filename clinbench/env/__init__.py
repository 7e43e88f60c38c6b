"""clinbench environments: ``make("recruitment/<task>")`` and the shared interfaces.

Importing this package also registers the Gymnasium ids
(``clinbench/Recruitment-<task>-v<version>``, see :mod:`clinbench.env.gym_adapter`).
"""

from clinbench.env.base import Env, EnvSpec, MacroSpace
from clinbench.env.gym_adapter import register_gym_envs
from clinbench.env.registry import env_ids, make, spec

register_gym_envs()

__all__ = ["Env", "EnvSpec", "MacroSpace", "env_ids", "make", "register_gym_envs", "spec"]
