"""Playing one episode: the loop every command, test and benchmark shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clinbench.env.base import Env


@dataclass
class Episode:
    """Outcome of one episode; ``steps_log`` is filled only when asked for."""

    seed: int
    score: float
    ret: float
    steps: int
    score_parts: dict[str, float]
    terminated_by: str
    net_enrolled: int
    budget_used: float
    #: ``obs.summary()["progress"]`` on each day from 0 to the last; days skipped by
    #: an early stop hold the value at the stop (the last entry is the final value)
    progress_by_day: list[float] = field(default_factory=list)
    steps_log: list[dict[str, Any]] = field(default_factory=list)


def play_episode(
    env: Env,
    agent: Any,
    seed: int,
    *,
    agent_seed: int,
    options: dict[str, Any] | None = None,
    record: bool = False,
) -> Episode:
    """Reset ``env`` with world seed ``seed`` and ``agent`` with its own ``agent_seed``
    (never the world seed: from it an agent could rebuild the world and its luck; see
    :func:`clinbench.protocol.acting_seed`), let the agent act until the episode ends.

    ``record`` keeps each day's action, reward, error and observation summary.
    """
    obs, _ = env.reset(seed=seed, options=options)
    agent.reset(agent_seed)
    total, done, info = 0.0, False, {}
    summary = obs.summary()
    progress = {summary["day"]: summary["progress"]}
    log: list[dict[str, Any]] = []
    while not done:
        action = agent.act(obs)
        day = obs.timestamp
        obs, reward, done, _, info = env.step(action)
        total += reward
        summary = obs.summary()
        progress[summary["day"]] = summary["progress"]
        if record:
            log.append(
                {
                    "action": action.to_dict(),
                    "reward": reward,
                    "error": info["error"],
                    "outcome": info["outcome"],
                    **summary,
                    "day": day,
                }
            )
    return Episode(
        seed=seed,
        score=info["score"],
        ret=total,
        steps=info["steps"],
        score_parts=info["score_parts"],
        terminated_by=info["terminated_by"],
        net_enrolled=info.get("net_enrolled", 0),
        budget_used=info.get("budget_used", 0.0),
        progress_by_day=_dense(progress),
        steps_log=log,
    )


def _dense(by_day: dict[int, float]) -> list[float]:
    """Values for every day 0..last, holding the last known value over skipped days."""
    last_day = max(by_day)
    out, value = [], by_day[0]
    for day in range(last_day + 1):
        value = by_day.get(day, value)
        out.append(value)
    out[-1] = by_day[last_day]
    return out
