"""Playing one episode: the loop every command, test and benchmark shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clinbench.env.base import Env
from clinbench.env.registry import family


@dataclass
class Episode:
    """Outcome of one episode; ``steps_log`` is filled only when asked for."""

    seed: int
    score: float
    ret: float
    steps: int
    score_parts: dict[str, float]
    terminated_by: str
    #: the family's episode metrics, read from the final ``info`` (``Family.episode_metrics``)
    metrics: dict[str, float] = field(default_factory=dict)
    #: ``obs.summary()["progress"]`` at each time from 0 to the last; times skipped by
    #: an early stop hold the value at the stop (the last entry is the final value)
    progress_by_time: list[float] = field(default_factory=list)
    steps_log: list[dict[str, Any]] = field(default_factory=list)
    #: what the agent reports about its own episode (``agent.episode_stats()``, if it
    #: has one: an LLM agent's calls, repairs, fallbacks, tokens, latency); else empty
    agent_stats: dict[str, float] = field(default_factory=dict)


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
    :func:`clinbench.protocol.acting_seeds`), let the agent act until the episode ends.

    ``record`` keeps each step's action, reward, error and observation summary.
    """
    obs, _ = env.reset(seed=seed, options=options)
    agent.reset(agent_seed)
    total, done, info = 0.0, False, {}
    summary = obs.summary()
    progress = {summary["time"]: summary["progress"]}
    log: list[dict[str, Any]] = []
    while not done:
        action = agent.act(obs)
        time = summary["time"]
        obs, reward, done, _, info = env.step(action)
        total += reward
        summary = obs.summary()
        progress[summary["time"]] = summary["progress"]
        if record:
            log.append(
                {
                    "action": action.to_dict(),
                    "reward": reward,
                    "error": info["error"],
                    "outcome": info["outcome"],
                    **summary,
                    "time": time,
                }
            )
    return Episode(
        seed=seed,
        score=info["score"],
        ret=total,
        steps=info["steps"],
        score_parts=info["score_parts"],
        terminated_by=info["terminated_by"],
        metrics={m.name: info[m.name] for m in family(env.spec.env).episode_metrics},
        progress_by_time=_dense(progress),
        steps_log=log,
        agent_stats=dict(agent.episode_stats()) if hasattr(agent, "episode_stats") else {},
    )


def _dense(by_time: dict[int, float]) -> list[float]:
    """Values for every time 0..last, holding the last known value over skipped times."""
    last = max(by_time)
    out, value = [], by_time[0]
    for t in range(last + 1):
        value = by_time.get(t, value)
        out.append(value)
    out[-1] = by_time[last]
    return out
