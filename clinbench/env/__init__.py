"""clinbench environments: ``make("recruitment/<task>")`` and the shared interfaces."""

from clinbench.env.base import Env, EnvSpec, MacroSpace
from clinbench.env.registry import env_ids, make, spec

__all__ = ["Env", "EnvSpec", "MacroSpace", "env_ids", "make", "spec"]
