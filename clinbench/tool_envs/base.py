"""What every family's tool environment shares: reset from a dataset row, play, reward."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from clinbench.env import make, spec
from clinbench.llm.render import compact

#: Task parameters scaled with the horizon by :func:`short_horizon` (when a task has them).
_SCALED = ("target", "budget", "followup_days", "activation_span")


def short_horizon(task: str, horizon: int) -> dict[str, Any]:
    """Overrides that shorten ``task`` to ``horizon`` steps, its goals scaled alike.

    A 180-day recruitment episode is 180 tool calls (about 8.5k tokens of tool text
    alone), more than a completion budget of GRPO usually holds. The short variant keeps
    the task's world and scales the target, budget, follow-up and site-opening span by
    ``horizon / full horizon``, so that a good policy can still reach the goal.
    """
    params = spec(task).params
    full = params.horizon
    if not 1 <= horizon <= full:
        raise ValueError(f"horizon must be in 1..{full} for {task}, got {horizon}")
    ratio = horizon / full
    out: dict[str, Any] = {"horizon": horizon}
    for name in _SCALED:
        value = getattr(params, name, None)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            out[name] = max(1, math.ceil(value * ratio))
        elif isinstance(value, float):
            out[name] = value * ratio
    return out


class ToolEnv:
    """Base of the tool environments (see the package docstring)."""

    #: the family whose tasks this environment plays, and the task of a row without one
    FAMILY: ClassVar[str]
    DEFAULT_TASK: ClassVar[str]

    def __init__(self) -> None:
        self._envs: dict[tuple[str, int | None], Any] = {}
        self._env: Any = None
        self._done = True
        self._return = 0.0
        self._score: float | None = None
        self.task = self.DEFAULT_TASK

    def reset(
        self,
        task: str | None = None,
        seed: int | None = None,
        horizon: int | None = None,
        **row: Any,
    ) -> str:
        """Start the episode of the row's ``task`` and ``seed`` (other columns are ignored)."""
        task = task or self.DEFAULT_TASK
        if spec(task).env != self.FAMILY:
            raise ValueError(f"{type(self).__name__} plays {self.FAMILY} tasks, not {task!r}")
        key = (task, None if horizon is None else int(horizon))
        env = self._envs.get(key)
        if env is None:
            overrides = short_horizon(task, int(horizon)) if horizon is not None else {}
            env = self._envs[key] = make(task, **overrides)
        obs, _ = env.reset(seed=None if seed is None else int(seed))
        self.task, self._env, self._obs = task, env, obs
        self._done, self._return, self._score = False, 0.0, None
        return f"{self._intro()}\nState: {compact(obs.to_dict())}"

    def get_reward(self) -> float:
        """The episode's score (so far, if it was cut before its end)."""
        return self._score if self._score is not None else self._return

    def _intro(self) -> str:  # private: TRL makes every public method a tool
        s = self._env.spec
        return f"Task {s.id}: {s.description.rstrip('.')}. Use the tools, one decision per call."

    def _play(self, action: dict[str, Any]) -> str:
        if self._done:
            raise ValueError("the episode is over; its score is final")
        obs, reward, done, _, info = self._env.step(action)
        self._obs, self._done = obs, bool(done)
        self._return += reward
        if done:
            self._score = float(info["score"])
        state = compact(obs.to_dict())
        if info["error"]:
            raise ValueError(f"{info['error']}: the action was refused (it used the turn). {state}")
        if done:
            return f"The episode is over. Score: {self._score:.4f}."
        return state


def reward_func(environments: list[ToolEnv], **kwargs: Any) -> list[float]:
    """TRL reward function reading each environment's score (for TRL without ``get_reward``)."""
    return [env.get_reward() for env in environments]
