"""What every learning agent shares: policy, standardiser, acting, the learning curve.

A learning agent chooses among the environment's macro-actions with a masked softmax
policy over standardised inputs (the macro features, plus whatever the method adds
in :meth:`LearningAgent.policy_input`). ``stop`` is masked out unless
``allow_stop`` (a freely sampled stop ends episodes within days and teaches nothing).
Evaluation is greedy (argmax) unless ``greedy_eval`` is off.

Budgets are environment steps (:mod:`clinbench.agents.core.budget`): a method's
``learn`` loops while :attr:`LearningAgent.steps_left` is positive, and the learning
curve is recorded at evenly spaced step counts (``curve_points`` of them, 0 and the
budget included).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.core.budget import StepBudget
from clinbench.agents.core.policy import SoftmaxPolicy
from clinbench.agents.core.rollout import Trajectory
from clinbench.agents.core.standardise import Standardiser
from clinbench.env.base import Env

#: Training world seeds live in [2**31, 2**32); evaluation seeds are below 2**31.
TRAIN_SEED_LOW, TRAIN_SEED_HIGH = 2**31, 2**32


def curve_marks(steps: int, curve_points: int) -> list[int]:
    """The environment-step counts at which the learning curve is recorded (0 and the
    budget included, evenly spaced)."""
    if curve_points <= 1:
        return [steps]
    return sorted({round(steps * k / (curve_points - 1)) for k in range(curve_points)})


@dataclass(frozen=True)
class CurvePoint:
    """Greedy score on the validation worlds at ``env_steps`` environment steps of
    training (the mark; the policy is the one after the last update before it),
    after ``episodes`` training episodes started, ``seconds`` of training wall-clock."""

    iteration: int
    env_steps: int
    episodes: int
    mean_score: float
    #: wall-clock seconds since training started (not part of the cell's numbers:
    #: the records keep it apart, under ``timing``)
    seconds: float = field(default=0.0, compare=False)


@dataclass
class EpisodeHandle:
    """One training episode's generator and input state."""

    rng: np.random.Generator
    state: Any


class PolicySampler:
    """Samples a learning agent's policy for a batch of episodes in one forward pass."""

    def __init__(self, agent: LearningAgent, policy: SoftmaxPolicy, rng: np.random.Generator):
        self.agent, self.policy, self.rng = agent, policy, rng

    def start(self) -> EpisodeHandle:
        return EpisodeHandle(self.rng.spawn(1)[0], self.agent.episode_state())

    def __call__(
        self,
        features: np.ndarray,
        masks: np.ndarray,
        summaries: list[dict[str, float]],
        episodes: list[EpisodeHandle],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        agent = self.agent
        raw = np.stack(
            [
                agent.policy_input(f, s, e.state)
                for f, s, e in zip(features, summaries, episodes, strict=True)
            ]
        )
        a, logp = self.policy.sample(agent.std(raw), agent.valid(masks), [e.rng for e in episodes])
        return a, logp, raw


class LearningAgent(Agent):
    """Base of the learning agents (the policy is kept across ``reset`` calls)."""

    learning = True
    #: Attributes that hold experience kept for training only (replay buffers), which
    #: acting never reads: the copy a learning curve scores leaves them out
    #: (:func:`scoring_copy`).
    experience: tuple[str, ...] = ()

    def __init__(
        self,
        context: AgentContext,
        hidden: int = 16,
        lr: float = 0.03,
        allow_stop: bool = False,
        greedy_eval: bool = True,
        **config: Any,
    ):
        super().__init__(context, **config)
        self.hidden, self.lr = hidden, lr
        self.allow_stop, self.greedy_eval = allow_stop, greedy_eval
        names = self.macros.names
        self._stop = names.index("stop") if "stop" in names else None
        n_in = self.input_size()
        # The untrained policy is uniform over the valid actions whatever the draw;
        # ``train`` draws the hidden layer again from the cell's training stream.
        self.policy = SoftmaxPolicy(n_in, self.macros.n, np.random.default_rng(0), hidden)
        self.std = Standardiser(n_in)
        self.curve: list[CurvePoint] = []
        self._episode: Any = None

    # ---- inputs and masks ---------------------------------------------------------
    def input_size(self) -> int:
        return self.macros.n_features

    def episode_state(self) -> Any:
        """A new episode's input state (what :meth:`policy_input` keeps within one
        episode: klong its history, memexrl its reads); None for none."""
        return None

    def policy_input(
        self, features: np.ndarray, summary: dict[str, float], state: Any
    ) -> np.ndarray:
        """Raw (unstandardised) policy input from the macro features, ``obs.summary()``
        and the episode's input state; methods may add to the features. Nothing else of
        an observation is read, so batched cores can feed the policy."""
        return features

    def valid(self, mask: np.ndarray) -> np.ndarray:
        """The mask the policy chooses under (one row, or a batch of rows)."""
        if self._stop is not None and not self.allow_stop:
            free = mask.sum(axis=-1) > 1
            if np.any(free):
                mask = mask.copy()
                mask[..., self._stop] &= ~free
        return mask

    def begin_episode(self) -> None:
        """Called before every evaluation episode: a fresh input state."""
        self._episode = self.episode_state()

    # ---- acting -------------------------------------------------------------------
    def reset(self, seed: int | np.random.Generator | None = None) -> None:
        super().reset(seed)
        self.begin_episode()

    def act(self, obs: Any) -> Any:
        f = self.macros.features(obs)
        m = self.valid(self.macros.mask(obs))
        x = self.std(self.policy_input(f, obs.summary(), self._episode))
        a, _ = self.policy.choose(x, m, None if self.greedy_eval else self.rng)
        return self.macros.to_action(a, obs)

    def sampler(
        self, rng: np.random.Generator, policy: SoftmaxPolicy | None = None
    ) -> PolicySampler:
        """The sampler of training rollouts (:mod:`clinbench.agents.core.rollout`):
        episodes draw their actions from generators spawned from ``rng``."""
        return PolicySampler(self, policy or self.policy, rng)

    # ---- training -----------------------------------------------------------------
    def fit_standardiser(self, trajectories: list[Trajectory]) -> None:
        """Fit the feature statistics once, on the first data seen, then freeze them."""
        if self.std.count == 0:
            self.std.update(np.concatenate([t.x for t in trajectories]))

    def train(
        self,
        make_env: Callable[[], Env],
        steps: int,
        rng: np.random.Generator,
        evaluate: Callable[[LearningAgent], float] | None = None,
        curve_points: int = 21,
    ) -> list[CurvePoint]:
        """Train for ``steps`` environment steps of training worlds drawn from ``rng``.

        ``make_env()`` builds a training environment: it plays only training world seeds,
        ``[2**31, 2**32)``, drawn with :meth:`world_seed`, and counts its steps in the
        cell's :class:`StepBudget` (``env.budget``). ``evaluate(agent)`` returns the
        greedy score on the validation worlds (a number; the worlds stay with the
        caller) for the curve's ``curve_points`` evenly spaced step counts, 0 and the
        budget included: once per policy, as the marks one update passes share it.
        """
        self.curve = []
        # whether the policy may have changed since the last point was scored
        self._changed = True
        self._evaluate, self._marks = evaluate, curve_marks(steps, curve_points)
        # Small matrices: one BLAS thread is faster, and identical in any process.
        self.policy = SoftmaxPolicy(self.policy.n_in, self.macros.n, rng, self.hidden)
        env = make_env()
        self._budget: StepBudget = env.budget
        self._start, self._steps, self._began = env.budget.used, steps, time.perf_counter()
        with threadpool_limits(limits=1, user_api="blas"):
            self.progress(0)
            self.learn(env, rng)
            # Points not reached (a method that stops early, e.g. imitation only) are
            # recorded at the end, at their marks: the policy did not change after.
            self._record(0, final=True)
        return self.curve

    @property
    def steps_used(self) -> int:
        """Environment steps of training so far."""
        return self._budget.used - self._start

    @property
    def steps_left(self) -> int:
        """Environment steps of the budget not yet taken."""
        return self._steps - self.steps_used

    def _record(self, iteration: int, final: bool = False, unchanged: bool = False) -> None:
        # A point is reported at its mark of the budget: the policy after the last
        # update before the mark (an iteration may pass several marks).
        # Every mark passed here shares that policy, so it is scored once: a copy of the
        # same agent on the same validation worlds and acting seeds scores the same.
        # ``unchanged``: the policy is the one of the last call; if no update came
        # between the last scored point and now, the marks take that point's score.
        self._changed = self._changed or not unchanged
        used = self.steps_used
        reuse = not self._changed and self.curve
        score = self.curve[-1].mean_score if reuse else None
        while self._marks and (final or used >= self._marks[0]):
            mark = self._marks.pop(0)
            if self._evaluate is not None:
                if score is None:
                    score = float(self._evaluate(self))
                    self._changed = False
                self.curve.append(
                    CurvePoint(
                        iteration,
                        mark,
                        self._budget.episodes,
                        score,
                        time.perf_counter() - self._began,
                    )
                )

    def progress(self, iteration: int, unchanged: bool = False) -> None:
        """Methods call this after each update so the curve is recorded on time;
        ``unchanged`` when nothing the agent acts on has changed since its last call
        (no update): if none changed since the last point was scored either, the marks
        passed take that score, so the untrained policy is not scored again after
        training steps, where checkpoint selection would take it for a trained one."""
        self._record(iteration, unchanged=unchanged)

    def learn(self, env: Env, rng: np.random.Generator) -> None:
        """Update the policy until :attr:`steps_left` is 0 (the step budget)."""
        raise NotImplementedError

    @staticmethod
    def world_seed(rng: np.random.Generator) -> int:
        return int(rng.integers(TRAIN_SEED_LOW, TRAIN_SEED_HIGH))


def scoring_copy(agent: Any) -> Any:
    """A deep copy of ``agent`` to score, its training-only ``experience`` attributes
    None in the copy (acting never reads them): nothing the copy does reaches the agent
    in training, and a curve point does not copy the replay buffer (for mira, 30 % of a
    recruitment cell's time)."""
    memo: dict[int, Any] = {
        id(value): None
        for name in getattr(agent, "experience", ())
        if (value := vars(agent).get(name)) is not None
    }
    return copy.deepcopy(agent, memo)
