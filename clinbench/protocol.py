"""The training and evaluation protocol of one cell (environment, task, agent, seed).

Every random stream of a cell is derived from ``SeedSequence`` of the cell seed, a
stable hash of the agent and task names and a purpose tag, so a cell gives the same
numbers in any process, in any order, with any number of jobs. Evaluation worlds
depend on the seed only, so every agent at seed s meets the same worlds (paired
comparisons); training worlds are drawn from [2**31, 2**32), disjoint from them.

The agent contract (``docs/agents.md``) is kept here: the agent is built from the
task's :class:`AgentContext`, trains through a factory of :class:`TrainingEnv` (which
refuse evaluation worlds), is reset with integer seeds drawn from its own stream
(:func:`acting_seed`, never a world seed) and is evaluated through a callback that
returns a number.
"""

from __future__ import annotations

import copy
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents.context import AgentContext
from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW, CurvePoint
from clinbench.agents.registry import make_agent
from clinbench.env.base import Env
from clinbench.env.registry import family, make
from clinbench.episode import Episode, play_episode

_EVAL, _TRAIN, _ACT, _OC = 0, 1, 2, 3


@dataclass(frozen=True)
class Protocol:
    """Training budget (episodes), evaluation episodes, learning-curve points, and the
    operating-characteristic episodes (played only for a family that declares
    operating characteristics)."""

    train_episodes: int = 600
    eval_episodes: int = 10
    curve_points: int = 5
    oc_episodes: int = 0

    def __post_init__(self) -> None:
        bad = self.train_episodes < 0 or self.eval_episodes < 1 or self.curve_points < 1
        if bad or self.oc_episodes < 0:
            raise ValueError(
                f"invalid protocol {self}: episodes must be >= 0, eval >= 1, points >= 1"
            )


def stable_hash(name: str) -> int:
    """A hash of a name that does not depend on PYTHONHASHSEED."""
    return zlib.crc32(name.encode())


def evaluation_seeds(seed: int, n: int) -> list[int]:
    """The evaluation world seeds of cell seed ``seed``, shared by every agent and task."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _EVAL]))
    return [int(s) for s in rng.integers(0, TRAIN_SEED_LOW, n)]


def characteristic_seeds(seed: int, n: int) -> list[int]:
    """The operating-characteristic world seeds of cell seed ``seed`` (a stream of their
    own, shared by every agent and task like the evaluation worlds)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _OC]))
    return [int(s) for s in rng.integers(0, TRAIN_SEED_LOW, n)]


def cell_stream(
    seed: int, agent: str, env_id: str, purpose: int, *extra: int
) -> np.random.Generator:
    """A Generator for one purpose of one cell."""
    seq = np.random.SeedSequence([seed, stable_hash(agent), stable_hash(env_id), purpose, *extra])
    return np.random.default_rng(seq)


def training_stream(seed: int, agent: str, env_id: str) -> np.random.Generator:
    """The stream a cell trains from (training worlds, policy sampling, initial weights).

    Seeded by an integer drawn from the cell's training stream, so the Generator an
    agent receives carries no trace of the cell seed (its ``SeedSequence`` would, and
    from the cell seed the evaluation worlds follow)."""
    return np.random.default_rng(int(cell_stream(seed, agent, env_id, _TRAIN).integers(2**63)))


def acting_seed(seed: int, agent: str, env_id: str, world_seed: int) -> int:
    """The agent's own seed for one evaluation world of a cell: an integer drawn from
    the cell's acting stream, not the world seed (the contract keeps accidents out;
    cell seeds are small and public, so it is no secret against a determined search)."""
    return int(cell_stream(seed, agent, env_id, _ACT, world_seed).integers(2**63))


class TrainingEnv:
    """A native environment that plays training worlds only.

    ``reset(seed=s)`` requires ``s`` in ``[2**31, 2**32)`` (the evaluation worlds are
    below), so a learning agent cannot train on the worlds it is scored on by accident.
    ``step``, ``spec`` and ``macro_space`` are the native environment's own.
    """

    def __init__(self, env: Env):
        self._native = env
        self.spec, self.macro_space = env.spec, env.macro_space
        self.step = env.step  # bound directly: no per-step overhead

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is None or not TRAIN_SEED_LOW <= int(seed) < TRAIN_SEED_HIGH:
            raise ValueError(
                f"training environments play training worlds only: seed must be in "
                f"[{TRAIN_SEED_LOW}, {TRAIN_SEED_HIGH}), got {seed!r}"
            )
        return self._native.reset(seed=seed, options=options)


def make_env(
    env_id: str, overrides: dict[str, Any] | None = None, remote: str | None = None
) -> Env:
    """A cell's environment: built in this process, or the task served at ``remote``
    (``ws://host:port`` of ``clinbench serve``; needs the ``serve`` extra)."""
    if remote:
        from clinbench.serve.remote import make_remote

        return make_remote(remote, env_id, **(overrides or {}))
    return make(env_id, **(overrides or {}))


def training_env_factory(env_id: str, remote: str | None = None, **overrides: Any):
    """``make_env()`` for :meth:`LearningAgent.train`: a fresh :class:`TrainingEnv` per call."""

    def make_training_env() -> TrainingEnv:
        return TrainingEnv(make_env(env_id, overrides, remote))

    return make_training_env


class CurveEvaluator:
    """The ``evaluate`` callback a learning agent trains with: the greedy mean score on
    the evaluation worlds, for the learning curve only.

    It scores a deep copy of the agent, so nothing the agent does while being evaluated
    (storing experience, say) comes back into its training; it scores only the agent
    being trained, and at most ``limit`` times (the curve's points), so it cannot become
    a test set to select models on.
    """

    def __init__(self, score: Callable[[Any], float], agent: Any, limit: int):
        self._score, self._agent, self._limit = score, agent, limit
        self.calls = 0

    def __call__(self, agent: Any) -> float:
        if agent is not self._agent:
            raise ValueError("evaluate(agent) scores the agent being trained, nothing else")
        if self.calls >= self._limit:
            raise RuntimeError(
                f"evaluate may be called at most {self._limit} times (the learning curve's points)"
            )
        self.calls += 1
        return float(self._score(copy.deepcopy(agent)))

    def __deepcopy__(self, memo: dict) -> CurveEvaluator:
        return self  # an agent that keeps the callback is copied without it


@dataclass
class CellResult:
    """Tidy outcome of a cell: evaluation episodes, learning curve, timings."""

    env_id: str
    agent: str
    seed: int
    eval_seeds: list[int]
    episodes: list[Episode]
    curve: list[CurvePoint] = field(default_factory=list)
    train_seconds: float = 0.0
    eval_seconds: float = 0.0
    #: the episode metrics of the operating-characteristic episodes
    oc_metrics: list[dict[str, float]] = field(default_factory=list)

    @property
    def mean_score(self) -> float:
        return float(np.mean([e.score for e in self.episodes]))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["mean_score"] = self.mean_score
        return out


def evaluate(
    env, agent, agent_name: str, env_id: str, seed: int, eval_seeds: list[int], record: bool = False
) -> list[Episode]:
    """Play the evaluation worlds; the agent's own randomness is per (cell, world)."""
    return [
        play_episode(
            env, agent, s, agent_seed=acting_seed(seed, agent_name, env_id, s), record=record
        )
        for s in eval_seeds
    ]


def run_cell(
    env_id: str,
    agent_ref: str,
    seed: int,
    protocol: Protocol = Protocol(),
    agent_config: dict[str, Any] | None = None,
    env_overrides: dict[str, Any] | None = None,
    agent_name: str | None = None,
    remote: str | None = None,
) -> CellResult:
    """Train (learning agents) on training worlds, then evaluate on the shared worlds.

    ``agent_ref`` is what the registry resolves (a name or a spec string); ``agent_name``
    (default: ``agent_ref``) names the agent in results and in its random streams.
    ``remote`` plays every episode on the task served there (same numbers).
    """
    overrides = env_overrides or {}
    agent_name = agent_name or agent_ref
    with threadpool_limits(limits=1, user_api="blas"):
        env = make_env(env_id, overrides, remote)
        agent = make_agent(agent_ref, AgentContext.of(env), **(agent_config or {}))
        eval_seeds = evaluation_seeds(seed, protocol.eval_episodes)
        curve: list[CurvePoint] = []
        t0 = time.perf_counter()
        if agent.learning and protocol.train_episodes > 0:
            curve = agent.train(
                training_env_factory(env_id, remote, **overrides),
                protocol.train_episodes,
                training_stream(seed, agent_name, env_id),
                evaluate=CurveEvaluator(
                    lambda a: float(
                        np.mean(
                            [
                                e.score
                                for e in evaluate(env, a, agent_name, env_id, seed, eval_seeds)
                            ]
                        )
                    ),
                    agent,
                    protocol.curve_points,
                ),
                curve_points=protocol.curve_points,
            )
        t1 = time.perf_counter()
        episodes = evaluate(env, agent, agent_name, env_id, seed, eval_seeds)
        oc_metrics = []
        if protocol.oc_episodes and family(env.spec.env).operating_characteristics:
            oc_seeds = characteristic_seeds(seed, protocol.oc_episodes)
            oc_metrics = [
                e.metrics for e in evaluate(env, agent, agent_name, env_id, seed, oc_seeds)
            ]
        t2 = time.perf_counter()
    if remote:
        env.close()
    return CellResult(
        env_id, agent_name, seed, eval_seeds, episodes, curve, t1 - t0, t2 - t1, oc_metrics
    )
