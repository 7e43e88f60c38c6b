"""The training and evaluation protocol of one cell (environment, task, agent, seed).

Every world and every seed a cell uses is a keyed hash of the evaluation key
(:mod:`clinbench.evaluation_key`), the cell seed, a purpose and an index, so a cell
gives the same numbers in any process, in any order, with any number of jobs, and an
agent without the key can infer nothing about its worlds from the seeds it is handed.
Evaluation worlds depend on (key, seed) only, so every agent at seed s meets the same
worlds (paired comparisons). Evaluation and operating-characteristic worlds are drawn
from [0, 2**30), the learning curve's validation worlds from [2**30, 2**31), training
worlds from [2**31, 2**32).

The agent contract (``docs/agents.md``) is kept here: the agent is built from the
task's :class:`AgentContext`, trains through a factory of :class:`TrainingEnv` (which
refuse every world but training worlds), is reset with its own acting seeds
(:func:`acting_seeds`, never a world seed), sees its learning curve only on validation
worlds (:class:`CurveEvaluator`), and may be evaluated in a process of its own
(``isolate``).
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents.context import AgentContext
from clinbench.agents.core.budget import BudgetSpent, StepBudget
from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW, CurvePoint, scoring_copy
from clinbench.agents.registry import make_agent
from clinbench.env.base import Env
from clinbench.env.registry import family, make
from clinbench.episode import Episode, play_episode
from clinbench.evaluation_key import PUBLIC, EvaluationKey

#: Evaluation and operating-characteristic worlds are drawn from [0, 2**30), validation
#: worlds (the learning curve's) from [2**30, 2**31), training worlds from [2**31, 2**32):
#: the three never meet.
VALIDATION_SEED_LOW = 2**30
#: Purposes of the worlds a harness scores an agent on (each with its acting seeds);
#: NULL worlds are played with the family's ``null_world_overrides`` (type-I error).
EVALUATION, VALIDATION, CHARACTERISTICS = "evaluation", "validation", "characteristics"
NULL = "null"
_WORLD_RANGE = {
    EVALUATION: (0, VALIDATION_SEED_LOW),
    CHARACTERISTICS: (0, VALIDATION_SEED_LOW),
    NULL: (0, VALIDATION_SEED_LOW),
    VALIDATION: (VALIDATION_SEED_LOW, TRAIN_SEED_LOW),
}


@dataclass(frozen=True)
class Protocol:
    """Training budget (environment steps), evaluation episodes, learning-curve points
    and the validation episodes behind each, the operating-characteristic episodes and
    the null-world episodes (both played only for a family that declares them)."""

    train_steps: int = 0
    eval_episodes: int = 10
    curve_points: int = 21
    oc_episodes: int = 0
    #: validation episodes behind each learning-curve point
    curve_episodes: int = 5
    #: null worlds per cell (each trained policy's own type-I error)
    null_episodes: int = 0
    #: evaluate the learning curve's best trained policy on the validation worlds, not
    #: the last one (:class:`CurveEvaluator`)
    select_checkpoint: bool = True

    def __post_init__(self) -> None:
        bad = self.train_steps < 0 or self.eval_episodes < 1 or self.curve_points < 1
        if bad or self.oc_episodes < 0 or self.curve_episodes < 1 or self.null_episodes < 0:
            raise ValueError(
                f"invalid protocol {self}: steps and episodes must be >= 0, eval >= 1, "
                "points >= 1"
            )


def stable_hash(name: str) -> int:
    """A hash of a name that does not depend on PYTHONHASHSEED."""
    return zlib.crc32(name.encode())


def world_seeds(key: EvaluationKey, purpose: str, seed: int, n: int) -> list[int]:
    """The ``n`` world seeds of ``purpose`` for cell seed ``seed``, shared by every agent
    and task (paired comparisons); the i-th does not depend on ``n``."""
    low, high = _WORLD_RANGE[purpose]
    return [low + key.derive("world", purpose, seed, i) % (high - low) for i in range(n)]


def evaluation_seeds(key: EvaluationKey, seed: int, n: int) -> list[int]:
    """The evaluation world seeds of cell seed ``seed``."""
    return world_seeds(key, EVALUATION, seed, n)


def validation_seeds(key: EvaluationKey, seed: int, n: int) -> list[int]:
    """The validation world seeds of cell seed ``seed`` (learning curves; model selection)."""
    return world_seeds(key, VALIDATION, seed, n)


def characteristic_seeds(key: EvaluationKey, seed: int, n: int) -> list[int]:
    """The operating-characteristic world seeds of cell seed ``seed``."""
    return world_seeds(key, CHARACTERISTICS, seed, n)


def acting_seeds(
    key: EvaluationKey, seed: int, agent: str, env_id: str, purpose: str, n: int
) -> list[int]:
    """The agent's own seeds for the ``n`` worlds of ``purpose`` of a cell: keyed hashes
    of (cell seed, agent, task, purpose, episode index), never of a world seed, so
    without the key an acting seed tells nothing about the world it is played on."""
    return [key.derive("act", purpose, seed, agent, env_id, i) >> 1 for i in range(n)]


def training_stream(
    key: EvaluationKey, seed: int, agent: str, env_id: str
) -> np.random.Generator:
    """The stream a cell trains from (training worlds, policy sampling, initial weights),
    seeded by a keyed hash: it carries no trace of the cell seed or of the key."""
    return np.random.default_rng(key.derive("train", seed, agent, env_id))


class TrainingEnv:
    """A native environment that plays training worlds only, within the cell's budget.

    ``reset(seed=s)`` requires ``s`` in ``[2**31, 2**32)`` (the evaluation worlds are
    below), so a learning agent cannot train on the worlds it is scored on by accident.
    Every step is counted in ``budget`` (shared by every training environment of the
    cell), and a step past the budget is refused. ``spec`` and ``macro_space`` are the
    native environment's own.
    """

    def __init__(self, env: Env, budget: StepBudget | None = None, batched: bool = True):
        self._native = env
        self.spec, self.macro_space = env.spec, env.macro_space
        self.budget = budget if budget is not None else StepBudget()
        self._step, self._spend = env.step, self.budget.spend
        self._batched, self._batch = batched, None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        _check_training_seed(seed)
        self.budget.episodes += 1
        return self._native.reset(seed=seed, options=options)

    def step(self, action: Any):
        self._spend()
        return self._step(action)

    def batch(self, n: int) -> TrainingBatch | None:
        """``n`` training worlds stepped together through the family's batched core,
        counting in the same budget; None where the family has none (or ``batched``
        is off): the caller then plays episodes one by one."""
        if not self._batched:
            return None
        if self._batch is None or self._batch.capacity < n:
            from clinbench.env.gym_vector import batched_core

            core = batched_core(self._native, n)
            if core is None:
                self._batched = False
                return None
            self._batch = TrainingBatch(core, self.budget)
        return self._batch


def _check_training_seed(seed: Any) -> None:
    if seed is None or not TRAIN_SEED_LOW <= int(seed) < TRAIN_SEED_HIGH:
        raise ValueError(
            f"training environments play training worlds only: seed must be in "
            f"[{TRAIN_SEED_LOW}, {TRAIN_SEED_HIGH}), got {seed!r}"
        )


class TrainingBatch:
    """Training worlds in a family's batched core (rows ``0 .. capacity - 1``), within
    the cell's budget: what :func:`clinbench.agents.core.rollout.rollout_batch` plays.

    Like :class:`TrainingEnv` it plays training world seeds only and counts every step
    (a row stepped is one environment step) in the cell's :class:`StepBudget`."""

    def __init__(self, core: Any, budget: StepBudget):
        self._core, self.budget = core, budget
        self.capacity = core.num_envs
        macros = core.macro_space
        self._features = np.zeros((self.capacity, macros.n_features))
        self._masks = np.zeros((self.capacity, macros.n), dtype=np.bool_)

    def reset(self, i: int, seed: int) -> None:
        _check_training_seed(seed)
        self.budget.episodes += 1
        self._core.reset(i, int(seed), None)

    def step(self, rows: list[int], macros: list[int]):
        """(rewards, terminated flags, infos) of macro ``macros[j]`` in world ``rows[j]``."""
        left = self.budget.left
        if left is not None and left < len(rows):
            raise BudgetSpent(
                f"the training budget has {left} environment steps left, not {len(rows)}"
            )
        self.budget.used += len(rows)
        return self._core.step(rows, macros)

    def observe(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Macro features (float64, as ``macro_space.features``) and masks of ``rows``."""
        idx = np.asarray(rows)
        self._core.observe(self._features, self._masks, idx)
        return self._features[idx], self._masks[idx]

    def summaries(self, rows: list[int]) -> list[dict[str, float]]:
        return self._core.summaries(rows)


def make_env(
    env_id: str, overrides: dict[str, Any] | None = None, remote: str | None = None
) -> Env:
    """A cell's environment: built in this process, or the task served at ``remote``
    (``ws://host:port`` of ``clinbench serve``; needs the ``serve`` extra)."""
    if remote:
        from clinbench.serve.remote import make_remote

        return make_remote(remote, env_id, **(overrides or {}))
    return make(env_id, **(overrides or {}))


class TrainingWorlds:
    """``make_env()`` for :meth:`LearningAgent.train`: a fresh :class:`TrainingEnv` per
    call, all counting in one :class:`StepBudget` of ``steps`` (None: no cap)."""

    def __init__(
        self,
        env_id: str,
        remote: str | None = None,
        steps: int | None = None,
        batched: bool = True,
        **overrides: Any,
    ):
        self.env_id, self.remote, self.overrides = env_id, remote, overrides
        self.budget, self.batched = StepBudget(steps), batched

    def __call__(self) -> TrainingEnv:
        env = make_env(self.env_id, self.overrides, self.remote)
        return TrainingEnv(env, self.budget, self.batched)


def training_env_factory(
    env_id: str,
    remote: str | None = None,
    steps: int | None = None,
    batched: bool = True,
    **overrides: Any,
) -> TrainingWorlds:
    """``make_env()`` for :meth:`LearningAgent.train` (see :class:`TrainingWorlds`)."""
    return TrainingWorlds(env_id, remote, steps, batched, **overrides)


class CurveEvaluator:
    """The ``evaluate`` callback a learning agent trains with: the greedy mean score on
    the cell's *validation* worlds (never its evaluation worlds), for the learning curve.

    Validation worlds are drawn from the key like the evaluation worlds but from their
    own range, so selecting a checkpoint on these numbers is selection on a validation
    set, not on the test set. It scores a deep copy of the agent (:func:`scoring_copy`:
    without its replay buffers), so nothing the agent does while being scored (storing
    experience, say) comes back into its training, and at most ``limit`` times (the
    curve's points).

    With ``keep`` it also keeps the best *trained* checkpoint: a second copy, taken
    before the first plays, of each policy scored after at least one training step
    (``budget.used > 0``: the untrained policy is not a candidate), the best score
    winning and the later one on ties (:attr:`best`, with its score and the training
    steps taken when it was scored in :attr:`kept`). The cell evaluates that copy
    (``Protocol.select_checkpoint``): model selection on a validation set, as
    stable-baselines3's ``EvalCallback`` keeps its best model (which keeps the earlier
    one on ties), the same rule for every learning agent.
    """

    def __init__(
        self,
        score: Callable[[Any], float],
        agent: Any,
        limit: int,
        budget: StepBudget | None = None,
        keep: bool = False,
    ):
        self._score, self._agent, self._limit = score, agent, limit
        self._budget, self._keep = budget, keep
        self.calls = 0
        self.best: Any = None
        self.kept: dict[str, Any] = {}

    def __call__(self, agent: Any) -> float:
        if agent is not self._agent:
            raise ValueError("evaluate(agent) scores the agent being trained, nothing else")
        if self.calls >= self._limit:
            raise RuntimeError(
                f"evaluate may be called at most {self._limit} times (the learning curve's points)"
            )
        self.calls += 1
        steps = None if self._budget is None else self._budget.used
        candidate = self._keep and (steps is None or steps > 0)
        copy = scoring_copy(agent)
        kept = scoring_copy(agent) if candidate else None
        score = float(self._score(copy))
        better = self.best is None or score >= self.kept["mean_score"]
        if candidate and math.isfinite(score) and better:
            self.best = kept
            self.kept = {"env_steps": steps, "mean_score": score}
        return score

    def __deepcopy__(self, memo: dict) -> CurveEvaluator:
        return self  # an agent that keeps the callback is copied without it

    def __reduce__(self):
        return (_spent_evaluator, ())  # pickled (to an isolated process): no harness state


def _spent_evaluator() -> Callable[[Any], float]:
    def evaluate(agent: Any) -> float:
        raise RuntimeError("evaluate is available during training only")

    return evaluate


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
    #: null-world episodes: {"n": episodes, metric: sum over them} (a rate's count)
    null_counts: dict[str, float] = field(default_factory=dict)
    #: environment steps and episodes of training, and the curve points' wall-clock
    training: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_score(self) -> float:
        return float(np.mean([e.score for e in self.episodes]))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["mean_score"] = self.mean_score
        return out


@dataclass(frozen=True)
class CellWorlds:
    """The worlds and acting seeds of one cell, all derived from the evaluation key."""

    key: EvaluationKey
    seed: int
    agent: str
    env_id: str

    def worlds(self, purpose: str, n: int) -> list[int]:
        return world_seeds(self.key, purpose, self.seed, n)

    def acting_seeds(self, purpose: str, n: int) -> list[int]:
        return acting_seeds(self.key, self.seed, self.agent, self.env_id, purpose, n)

    def play(self, env: Env, agent: Any, purpose: str, n: int) -> list[Episode]:
        """Play the ``n`` worlds of ``purpose``; the agent's own seed per (cell, world)."""
        return [
            play_episode(env, agent, w, agent_seed=a)
            for w, a in zip(self.worlds(purpose, n), self.acting_seeds(purpose, n), strict=True)
        ]

    def training_stream(self) -> np.random.Generator:
        return training_stream(self.key, self.seed, self.agent, self.env_id)

    def curve_evaluator(
        self, env: Env, agent: Any, protocol: Protocol, budget: StepBudget | None = None
    ) -> CurveEvaluator:
        """The learning curve's callback: the greedy mean score on the validation worlds
        (``budget``: the training budget, which tells trained checkpoints apart)."""
        n = protocol.curve_episodes
        return CurveEvaluator(
            lambda a: float(np.mean([e.score for e in self.play(env, a, VALIDATION, n)])),
            agent,
            protocol.curve_points,
            budget,
            keep=protocol.select_checkpoint,
        )

    def train(
        self,
        env: Env,
        agent: Any,
        protocol: Protocol,
        remote: str | None = None,
        overrides: dict[str, Any] | None = None,
    ) -> tuple[Any, list[CurvePoint], dict[str, Any]]:
        """Train a learning agent for ``protocol.train_steps`` on training worlds, its
        curve on the validation worlds; return the agent to evaluate (its best trained
        checkpoint with ``protocol.select_checkpoint``, else itself), the curve, and the
        steps, episodes, curve wall-clock and kept checkpoint of training."""
        worlds = training_env_factory(
            self.env_id, remote, protocol.train_steps, **(overrides or {})
        )
        evaluator = self.curve_evaluator(env, agent, protocol, worlds.budget)
        curve = agent.train(
            worlds,
            protocol.train_steps,
            self.training_stream(),
            evaluate=evaluator,
            curve_points=protocol.curve_points,
        )
        training = {
            "env_steps": worlds.budget.used,
            "episodes": worlds.budget.episodes,
            "curve_seconds": [p.seconds for p in curve],
        }
        if evaluator.best is not None:  # the copy scored best on the validation worlds
            training["kept"] = evaluator.kept
            return evaluator.best, curve, training
        return agent, curve, training

    def score(
        self,
        env: Env,
        agent: Any,
        protocol: Protocol,
        isolate: bool = False,
        null_env: Env | None = None,
    ) -> tuple[list[Episode], list[dict[str, float]], dict[str, float]]:
        """The evaluation episodes, the operating-characteristic episodes' metrics (for a
        family that declares them) and the null-world counts (on ``null_env``, the task
        with the family's ``null_world_overrides``), with the agent in its own process
        when ``isolate`` (:mod:`clinbench.isolation`)."""
        from clinbench.isolation import player

        with player(agent, isolate) as acting:
            episodes = self.play(env, acting, EVALUATION, protocol.eval_episodes)
            oc_metrics = []
            if protocol.oc_episodes and family(env.spec.env).operating_characteristics:
                oc = self.play(env, acting, CHARACTERISTICS, protocol.oc_episodes)
                oc_metrics = [e.metrics for e in oc]
            null_counts: dict[str, float] = {}
            if null_env is not None and protocol.null_episodes:
                null = self.play(null_env, acting, NULL, protocol.null_episodes)
                null_counts = count_metrics([e.metrics for e in null])
        return episodes, oc_metrics, null_counts


def count_metrics(metrics: list[dict[str, float]]) -> dict[str, float]:
    """{"n": episodes, metric: sum over them}: a rate metric's sum is its count, all a
    per-policy interval needs (2,000 episodes per cell stay a few bytes)."""
    out: dict[str, float] = {"n": len(metrics)}
    for m in metrics:
        for name, value in m.items():
            out[name] = out.get(name, 0.0) + float(value)
    return out


def null_environment(
    env_id: str, overrides: dict[str, Any], remote: str | None, protocol: Protocol
) -> Env | None:
    """The task with its family's ``null_world_overrides`` (every world a null world),
    or None where the family declares none or the protocol plays no null worlds."""
    null = family(env_id.split("/")[0]).null_world_overrides
    if not null or not protocol.null_episodes:
        return None
    return make_env(env_id, {**overrides, **null}, remote)


def run_cell(
    env_id: str,
    agent_ref: str,
    seed: int,
    protocol: Protocol = Protocol(),
    agent_config: dict[str, Any] | None = None,
    env_overrides: dict[str, Any] | None = None,
    agent_name: str | None = None,
    remote: str | None = None,
    key: EvaluationKey = PUBLIC,
    isolate: bool = False,
) -> CellResult:
    """Train (learning agents) on training worlds, then evaluate on the shared worlds.

    ``agent_ref`` is what the registry resolves (a name or a spec string); ``agent_name``
    (default: ``agent_ref``) names the agent in results and in its random streams.
    ``remote`` plays every episode on the task served there (same numbers). ``key``
    derives every world and acting seed; ``isolate`` evaluates the trained agent in a
    process of its own.
    """
    overrides = env_overrides or {}
    agent_name = agent_name or agent_ref
    cell = CellWorlds(key, seed, agent_name, env_id)
    with threadpool_limits(limits=1, user_api="blas"):
        env = make_env(env_id, overrides, remote)
        null_env = null_environment(env_id, overrides, remote, protocol)
        agent = make_agent(agent_ref, AgentContext.of(env), **(agent_config or {}))
        curve: list[CurvePoint] = []
        training: dict[str, Any] = {}
        t0 = time.perf_counter()
        if agent.learning and protocol.train_steps > 0:
            agent, curve, training = cell.train(env, agent, protocol, remote, overrides)
        t1 = time.perf_counter()
        episodes, oc_metrics, null_counts = cell.score(env, agent, protocol, isolate, null_env)
        t2 = time.perf_counter()
    for e in (env, null_env):
        if remote and e is not None:
            e.close()
    eval_seeds = cell.worlds(EVALUATION, protocol.eval_episodes)
    return CellResult(
        env_id,
        agent_name,
        seed,
        eval_seeds,
        episodes,
        curve,
        t1 - t0,
        t2 - t1,
        oc_metrics,
        null_counts,
        training,
    )
