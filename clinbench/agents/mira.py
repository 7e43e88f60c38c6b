"""``mira``: milestone-shaped, phase-wise offline RL with two critics.

Wang et al., "A Subgoal-driven Framework for Improving Long-Horizon LLM Agents"
(Google DeepMind), arXiv 2603.19685.

Kept: a deterministic milestone checker labels progress; a potential critic P
(ridge regression of progress on the features) shapes the reward,
r' = r + lambda (gamma P(s') - P(s)); a success critic V (logistic regression of
"episode score above the phase median") gives the doubly robust advantage
A = 1/2 [r' + gamma V(s') - V(s)] + 1/2 [G' - V(s)], clipped to [-1, 1]; the actor
minimises (beta [log pi(a|s) - log pi_prev(a|s)] - A)^2 over the phase buffer (a
regression, not PPO). Six phases of collect -> fit critics -> offline actor update;
the buffer keeps two phases; failed world seeds are re-sampled more often.
Replaced: teacher-proposed subgoals are the fixed milestone checker below.

Milestones, per environment family (``MILESTONES``). Recruitment: net enrolled reaches
25 / 50 / 75 / 100 % of the target, the first enrolment (a site's yield observed), and
a screen-fail ratio (ineligible / screened, after 10 screenings) at or under
``screen_fail_bound``. Trial design: the first cohort, the information fraction of the
best-informed dose reaching 25 / 50 / 75 / 100 %, and a signal (some dose's z at least
1.5). Progress is the share reached, linearly interpolated between milestone events.

Hyper-parameters (``conf/agent/mira.yaml``):
    phases (6): collect / fit / update cycles over the training budget.
    lam (None: the family's, ``SHAPING``): weight of the potential shaping; 0 removes
        the potential critic. Recruitment 1.0; trial_design 0.0: its observable
        milestones (information fraction, first cohort, a signal) reward spending
        patients while the score rewards a correct decision at low cost, and shaping
        toward them lowered the final validation score on all three trial tasks
        (``docs/agents.md``, mira).
    gamma (0.99): discount of shaping, TD and returns.
    beta (1.0): scale of the log-ratio in the actor regression (the paper: about 2;
        at 600 episodes beta 2 moved too little per phase: 0.24 vs 0.73 on easy_bench).
    actor_steps (60): Adam steps of the actor regression per phase.
    buffer_phases (2): phases kept in the buffer.
    resample_failed (0.5): chance a new episode replays a failed world seed.
    batch_episodes (25): episodes collected at once (one policy forward per day for all
        of them, through the family's batched core where it has one); fewer when the
        phase's remaining steps, at the mean episode length so far, need fewer.
    screen_fail_bound (0.4): bound of the screen-fail milestone.
    critic_l2 (1.0): L2 penalty of both critics.
    hidden (16), lr (0.03): policy size and Adam step size.

Ablation switches (``docs/agents.md``, mira: what keeps mira below maskable_ppo):
    actor ("regression"): "ppo" replaces the actor regression by PPO-clip on the newest
        phase's episodes (on-policy: the policy that collected them) with
        stable-baselines3's schedule and defaults (``PPO``: 10 shuffled passes, an Adam
        step at 3e-4 per 64 rows, clip 0.2), its shuffling generator spawned from the
        training generator at the first such update.
    advantage ("milestones"): "gae" replaces both critics and the shaping by
        generalised advantage estimation (Schulman et al., arXiv 1506.02438; lambda
        0.95, as stable-baselines3) on a ridge value of the discounted return, fitted
        on the update's episodes, the advantages standardised over them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam
from clinbench.agents.core.policy import grad_log_prob
from clinbench.agents.core.regression import Logistic, Ridge
from clinbench.agents.core.rollout import Trajectory, collect
from clinbench.agents.grpo import minibatch_update
from clinbench.agents.learner import LearningAgent
from clinbench.agents.registry import register_agent
from clinbench.env.base import Env

MILESTONE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def milestone_days(summaries: list[dict[str, float]], screen_fail_bound: float) -> list[int]:
    """Recruitment: step index at which each milestone is first reached (sorted;
    unreached left out)."""
    reached: dict[str, int] = {}
    for t, s in enumerate(summaries):
        for f in MILESTONE_FRACTIONS:
            if s["enrolled"] >= f * s["target"]:
                reached.setdefault(f"enrolled_{f}", t)
        if s["enrolled"] >= 1:
            reached.setdefault("first_yield", t)
        if s["screened"] >= 10 and s["ineligible"] / s["screened"] <= screen_fail_bound:
            reached.setdefault("screen_fail_ok", t)
    return sorted(reached.values())


def trial_milestone_steps(summaries: list[dict[str, float]], screen_fail_bound: float) -> list[int]:
    """Trial design: step index at which each milestone is first reached (sorted)."""
    reached: dict[str, int] = {}
    for t, s in enumerate(summaries):
        for f in MILESTONE_FRACTIONS:
            if s["information"] >= f:
                reached.setdefault(f"information_{f}", t)
        if s["patients"] >= 1:
            reached.setdefault("first_cohort", t)
        if s["max_z"] >= 1.5:
            reached.setdefault("signal", t)
    return sorted(reached.values())


def discounted(x: np.ndarray, g: float) -> np.ndarray:
    """``out[t] = x[t] + g x[t+1] + g^2 x[t+2] + ...`` (returns; GAE with g = gamma lambda)."""
    out = np.zeros_like(x, dtype=float)
    acc = 0.0
    for t in range(x.size - 1, -1, -1):
        acc = x[t] + g * acc
        out[t] = acc
    return out


def gae_advantages(
    xs: list[np.ndarray], rewards: list[np.ndarray], gamma: float, lam: float, l2: float
) -> list[np.ndarray]:
    """Generalised advantage estimation (Schulman et al., arXiv 1506.02438) of each
    episode (its features ``xs`` and ``rewards``): GAE(gamma, lam) on a ridge value (L2
    penalty ``l2``) of the discounted return fitted on these episodes, with terminal
    value 0, standardised over all their steps (one array per episode)."""
    returns = [discounted(r, gamma) for r in rewards]
    value = Ridge(alpha=l2).fit(np.concatenate(xs), np.concatenate(returns))
    out = []
    for x, r in zip(xs, rewards, strict=True):
        v = np.append(value.predict(x), 0.0)
        out.append(discounted(r + gamma * v[1:] - v[:-1], gamma * lam))
    flat = np.concatenate(out)
    mean, sd = flat.mean(), flat.std() + 1e-8
    return [(a - mean) / sd for a in out]


#: The ``actor: ppo`` ablation's schedule: stable-baselines3's PPO defaults.
PPO = {"minibatch": 64, "passes": 10, "lr": 3e-4, "clip_eps": 0.2}
#: The ``advantage: gae`` ablation's lambda (stable-baselines3's default).
GAE_LAMBDA = 0.95
ACTORS = ("regression", "ppo")
ADVANTAGES = ("milestones", "gae")

#: Each family's default weight of the milestone shaping (``lam``; see the docstring).
SHAPING: dict[str, float] = {"recruitment": 1.0, "trial_design": 0.0}

#: Each family's milestone checker and its number of milestones.
MILESTONES: dict[str, tuple[Callable[[list[dict[str, float]], float], list[int]], int]] = {
    "recruitment": (milestone_days, len(MILESTONE_FRACTIONS) + 2),
    "trial_design": (trial_milestone_steps, len(MILESTONE_FRACTIONS) + 2),
}


def progress_labels(
    summaries: list[dict[str, float]], screen_fail_bound: float, family: str = "recruitment"
) -> np.ndarray:
    """Progress in [0, 1] at each state, interpolated between milestone events."""
    n_states = len(summaries)
    checker, total = MILESTONES[family]
    days = checker(summaries, screen_fail_bound)
    xs = [0] + days
    ys = [0.0] + [(k + 1) / total for k in range(len(days))]
    if xs[-1] < n_states - 1:
        xs.append(n_states - 1)
        ys.append(ys[-1])
    return np.interp(np.arange(n_states), xs, ys)


@register_agent
class MIRAAgent(LearningAgent):
    name = "mira"
    description = (
        "milestone potential shaping + success critic, phase-wise offline actor regression"
    )
    envs = tuple(MILESTONES)
    experience = ("buffer",)

    def __init__(
        self,
        context: AgentContext,
        phases: int = 6,
        lam: float | None = None,
        gamma: float = 0.99,
        beta: float = 1.0,
        actor_steps: int = 60,
        buffer_phases: int = 2,
        resample_failed: float = 0.5,
        screen_fail_bound: float = 0.4,
        critic_l2: float = 1.0,
        batch_episodes: int = 25,
        actor: str = "regression",
        advantage: str = "milestones",
        **config: Any,
    ):
        super().__init__(context, **config)
        if phases < 1 or batch_episodes < 1:
            raise ValueError(
                f"phases and batch_episodes must be >= 1, got {phases}, {batch_episodes}"
            )
        if actor not in ACTORS or advantage not in ADVANTAGES:
            raise ValueError(
                f"actor must be one of {ACTORS} and advantage one of {ADVANTAGES}, "
                f"got {actor!r}, {advantage!r}"
            )
        self.actor, self.advantage = actor, advantage
        self.batch_episodes = batch_episodes
        if lam is None:
            lam = SHAPING[context.spec.env]
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or lam < 0:
            raise ValueError(f"lam must be a number >= 0 or null, got {lam!r}")
        self.phases, self.lam, self.gamma, self.beta = phases, float(lam), gamma, beta
        self.actor_steps, self.resample_failed = actor_steps, resample_failed
        self.screen_fail_bound = screen_fail_bound
        self.buffer: deque[list[Trajectory]] = deque(maxlen=buffer_phases)
        self.potential = Ridge(alpha=critic_l2)
        self.success = Logistic(alpha=critic_l2)

    def learn(self, env: Env, rng: np.random.Generator) -> None:
        optimizer = Adam(self.policy.params, lr=self.lr)
        self._rng, self._ppo = rng, None  # the PPO ablation's state, made at its first update
        failed: list[int] = []
        played: list[Trajectory] = []
        budget = self.steps_left
        for phase in range(self.phases):
            # Phase p collects until (p + 1) / phases of the step budget is spent.
            phase_end = round(budget * (phase + 1) / self.phases)
            batch = []
            while self.steps_used < phase_end:
                seeds = []
                for _ in range(self.episodes_for(phase_end - self.steps_used, played)):
                    if failed and rng.random() < self.resample_failed:
                        seeds.append(failed[int(rng.integers(len(failed)))])
                    else:
                        seeds.append(self.world_seed(rng))
                trajs = collect(env, self.sampler(rng), seeds, steps_left=self.steps_left)
                played += trajs
                batch += [t for t in trajs if not t.budget_cut]
            if not batch:
                continue
            self.fit_standardiser(batch)
            self.buffer.append(batch)
            median = float(np.median([t.score for t in batch]))
            failed = [t.world_seed for t in batch if t.score < median]
            if self.advantage == "milestones":
                self.fit_critics(median)
            if self.actor == "ppo":
                self.update_actor_ppo()
            else:
                self.update_actor(optimizer)
            self.progress(phase + 1)

    def episodes_for(self, steps: int, played: list[Trajectory]) -> int:
        """Episodes of the next batch: ``batch_episodes``, or fewer if ``steps`` are
        left in the phase at the mean episode length so far (at least one)."""
        if not played:
            return max(1, min(self.batch_episodes, steps))
        mean = sum(len(t) for t in played) / len(played)
        return max(1, min(self.batch_episodes, -(-steps // max(1, round(mean)))))

    # ---- critics ----------------------------------------------------------------
    def fit_critics(self, median: float) -> None:
        trajs = [t for batch in self.buffer for t in batch]
        x = self.std(np.concatenate([t.x for t in trajs]))
        progress = np.concatenate(
            [
                progress_labels(t.summaries, self.screen_fail_bound, self.env_spec.env)[:-1]
                for t in trajs
            ]
        )
        won = np.concatenate([np.full(len(t), float(t.score > median)) for t in trajs])
        self.potential.fit(x, progress)
        if 0.0 < won.mean() < 1.0:
            self.success.fit(x, won)

    def advantages(self, traj: Trajectory) -> np.ndarray:
        """Doubly robust advantage of each step, clipped to [-1, 1]."""
        x = self.std(traj.x)
        g = self.gamma
        p = np.append(self.potential.predict(x), 0.0)  # terminal potential 0
        v = np.append(self.success.predict_proba(x), 0.0)  # terminal value 0
        shaped = traj.rewards + self.lam * (g * p[1:] - p[:-1])
        returns = discounted(shaped, g)
        td = shaped + g * v[1:] - v[:-1]
        return np.clip(0.5 * td + 0.5 * (returns - v[:-1]), -1.0, 1.0)

    def gae_advantages(self, trajs: list[Trajectory]) -> list[np.ndarray]:
        """The ``advantage: gae`` ablation (:func:`gae_advantages`) on ``trajs``."""
        xs = [self.std(t.x) for t in trajs]
        rewards = [t.rewards for t in trajs]
        return gae_advantages(xs, rewards, self.gamma, GAE_LAMBDA, self.potential.alpha)

    def step_advantages(self, trajs: list[Trajectory]) -> np.ndarray:
        """The advantage of every step of ``trajs``, by the ``advantage`` switch."""
        if self.advantage == "gae":
            return np.concatenate(self.gae_advantages(trajs))
        return np.concatenate([self.advantages(t) for t in trajs])

    # ---- actor ------------------------------------------------------------------
    def update_actor_ppo(self) -> None:
        """The ``actor: ppo`` ablation: PPO-clip on the newest phase's episodes."""
        if self._ppo is None:
            self._ppo = (Adam(self.policy.params, lr=PPO["lr"]), self._rng.spawn(1)[0])
        adam, shuffle = self._ppo
        trajs = list(self.buffer[-1])
        x = self.std(np.concatenate([t.x for t in trajs]))
        mask = np.concatenate([t.mask for t in trajs])
        actions = np.concatenate([t.actions for t in trajs])
        old_logp = np.concatenate([t.logp for t in trajs])
        minibatch_update(
            adam,
            self.policy,
            x,
            mask,
            actions,
            old_logp,
            self.step_advantages(trajs),
            None,
            PPO["minibatch"],
            PPO["passes"],
            shuffle,
            clip_eps=PPO["clip_eps"],
            kl_beta=0.0,
        )

    def update_actor(self, optimizer: Adam) -> None:
        """Minimise (beta (log pi - log pi_prev) - A)^2 over the buffer."""
        trajs = [t for batch in self.buffer for t in batch]
        x = self.std(np.concatenate([t.x for t in trajs]))
        mask = np.concatenate([t.mask for t in trajs])
        actions = np.concatenate([t.actions for t in trajs])
        adv = self.step_advantages(trajs)
        rows = np.arange(actions.size)
        prev_logp = self.policy.forward(x, mask).logp[rows, actions]
        for _ in range(self.actor_steps):
            fwd = self.policy.forward(x, mask)
            resid = self.beta * (fwd.logp[rows, actions] - prev_logp) - adv
            # ascend J = -mean(resid^2): dJ/dz = -2 beta resid (onehot - pi) / n
            g = grad_log_prob(fwd, actions) * (-2.0 * self.beta * resid / actions.size)[:, None]
            optimizer.step(self.policy.params, self.policy.backward(fwd, g))
