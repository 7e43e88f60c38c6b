"""``klong``: trajectory-splitting imitation, then progressive RL over growing horizons.

Liu et al., "KLong: Training LLM Agent for Extremely Long-horizon Tasks",
arXiv 2602.17547. A recipe, not a loss:

1. Trajectory-splitting imitation. The ``heuristic`` teacher plays training worlds;
   each episode is cut into overlapping windows (``window`` days, ``overlap`` shared).
   The policy input is the day's features, a pinned episode-start summary (the day-0
   features) and a history summary (mean features over a look-back that shrinks in
   later windows); it is trained by cross-entropy on the teacher's macro-actions.
2. Progressive RL. Stages with horizons 60 -> 120 -> 180 days: episodes are cut at the
   stage horizon and scored by the partial score at the cut (the return so far, which
   equals the score if the trial ended then); GRPO groups and PPO-clip with a KL
   penalty to the cloned policy.

Replaced: distilled LLM trajectories are heuristic demonstrations, and the context
window is the three-part feature vector above. The teacher's ``stop`` is labelled as
``plan`` (wait) when stop is masked for the learner.

Hyper-parameters (``conf/agent/klong.yaml``; GRPO's too):
    imitation_share (0.25): share of the step budget spent on teacher episodes.
    window (30), overlap (10): window length and overlap in days.
    lookback_start (30), lookback_shrink (5), lookback_min (5): history look-back of
        window k is max(lookback_min, lookback_start - k * lookback_shrink) days.
    imitation_steps (300), imitation_batch (4096): Adam steps of cross-entropy, each on
        a minibatch of that many rows in shuffled passes (0: every row at every step);
        ``experiments/update_cost.py`` measured them non-inferior to 150 full-batch
        steps at a third less of a recruitment cell's time.
    stages ([60, 120, 180]): horizons of progressive RL; [180] is direct RL.
    rl (true): false keeps imitation only (ablation).
    kl_beta (0.02): KL weight towards the cloned policy.
    groups (1, as GRPO's): groups per update in the RL stages, collected at
        once; chosen by the search on training worlds (``experiments/hparam_search.py``).
    minibatch (64; GRPO's default is 0): stable-baselines3's minibatch schedule for
        updates of more than 64 rows (every recruitment update, few trial ones); chosen
        by the search.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.optim import Adam, minibatches
from clinbench.agents.core.policy import grad_log_prob
from clinbench.agents.grpo import GRPOAgent
from clinbench.agents.registry import make_agent, register_agent
from clinbench.env.base import Env


@register_agent
class KLongAgent(GRPOAgent):
    name = "klong"
    description = "imitation of the heuristic on split trajectories, then progressive-horizon RL"
    envs = ("recruitment", "trial_design")

    def __init__(
        self,
        context: AgentContext,
        imitation_share: float = 0.25,
        window: int = 30,
        overlap: int = 10,
        lookback_start: int = 30,
        lookback_shrink: int = 5,
        lookback_min: int = 5,
        imitation_steps: int = 300,
        imitation_batch: int = 4096,
        stages: tuple[int, ...] = (60, 120, 180),
        rl: bool = True,
        kl_beta: float = 0.02,
        groups: int = 1,
        minibatch: int = 64,
        **config: Any,
    ):
        self.n_features = context.macro_space.n_features
        super().__init__(
            context, kl_beta=kl_beta, groups=groups, minibatch=minibatch, **config
        )
        self.imitation_share, self.window, self.overlap = imitation_share, window, overlap
        self.lookback_start, self.lookback_shrink = lookback_start, lookback_shrink
        self.lookback_min, self.imitation_steps = lookback_min, imitation_steps
        self.imitation_batch = imitation_batch
        self.stages, self.rl = tuple(stages), rl
        self.teacher = make_agent("heuristic", context)
        names = self.macros.names
        #: the label of a teacher action the learner may not take: ``plan`` (wait) where
        #: the family has it, else the first valid macro
        self._plan = names.index("plan") if "plan" in names else None
        self.begin_episode()

    # ---- the three-part input ----------------------------------------------------
    def input_size(self) -> int:
        return 3 * self.n_features

    def lookback(self, day: int) -> int:
        k = day // (self.window - self.overlap)
        return max(self.lookback_min, self.lookback_start - k * self.lookback_shrink)

    def episode_state(self) -> list[np.ndarray]:
        """The episode's features so far (the history the summary averages)."""
        return []

    def policy_input(
        self, features: np.ndarray, summary: dict[str, float], state: Any
    ) -> np.ndarray:
        state.append(features)
        lookback = self.lookback(summary["time"])
        return self.context(state, len(state) - 1, lookback)

    @staticmethod
    def context(history: list[np.ndarray] | np.ndarray, t: int, lookback: int) -> np.ndarray:
        """[features_t, features_0 (pinned), mean of features over the look-back before t]."""
        past = history[max(0, t - lookback) : t]
        # np.mean's own sum and division (the same bits), without its per-call overhead
        summary = np.add.reduce(np.asarray(past), axis=0) / len(past) if len(past) else history[0]
        return np.concatenate([history[t], history[0], summary])

    # ---- training ---------------------------------------------------------------
    def learn(self, env: Env, rng: np.random.Generator) -> None:
        budget = self.steps_left
        demo_steps = round(self.imitation_share * budget)
        if demo_steps:
            self.imitate(env, demo_steps, rng)
        self.progress(0)
        if not self.rl:
            return  # imitation only: the remaining points are recorded at the end
        reference = self.policy.copy()
        optimizer = self.optimiser(rng)
        iteration, rl_steps = 0, budget - self.steps_used
        for k, horizon in enumerate(self.stages):
            stage_end = budget - rl_steps + round(rl_steps * (k + 1) / len(self.stages))
            while self.steps_used < stage_end:
                groups = self.collect(
                    env, rng, horizon, lambda end=stage_end: end - self.steps_used
                )
                iteration += 1
                if groups:
                    self.update_groups(groups, optimizer, reference)
                self.progress(iteration, unchanged=not groups)

    def demonstrations(self, env: Env, steps: int, rng: np.random.Generator):
        """Teacher episodes as (features per day, masks, macro labels), ``steps``
        environment steps in all (the last episode cut there)."""
        while self.steps_used < steps:
            obs, _ = env.reset(seed=self.world_seed(rng))
            self.teacher.reset(rng)
            feats, masks, labels, done = [], [], [], False
            while not done and self.steps_used < steps:
                action = self.teacher.act(obs)
                mask = self.valid(self.macros.mask(obs))
                label = self.macros.index_of(action)
                feats.append(self.macros.features(obs))
                masks.append(mask)
                if not mask[label]:
                    label = self._plan if self._plan is not None else int(np.argmax(mask))
                labels.append(label)
                obs, _, done, _, _ = env.step(action)
            yield np.asarray(feats), np.asarray(masks), np.asarray(labels)

    def windows(self, feats: np.ndarray) -> list[tuple[int, int, int]]:
        """(start, end, window index) of the overlapping windows of one episode."""
        step = self.window - self.overlap
        return [
            (start, min(start + self.window, len(feats)), k)
            for k, start in enumerate(range(0, max(1, len(feats) - self.overlap), step))
        ]

    def imitate(self, env: Env, steps: int, rng: np.random.Generator) -> None:
        """Cross-entropy on the teacher's macro-actions over split trajectories."""
        xs, ms, ys = [], [], []
        for feats, masks, labels in self.demonstrations(env, steps, rng):
            for start, end, k in self.windows(feats):
                lb = max(self.lookback_min, self.lookback_start - k * self.lookback_shrink)
                for t in range(start, end):
                    xs.append(self.context(feats, t, lb))
                    ms.append(masks[t])
                    ys.append(labels[t])
        # The policy has not changed while the teacher played: the curve's marks up to
        # here are the untrained policy's.
        self.progress(0, unchanged=True)
        if not xs:
            return
        x_raw, mask, y = np.asarray(xs), np.asarray(ms), np.asarray(ys)
        self.std.update(x_raw)
        x = self.std(x_raw)
        optimizer = Adam(self.policy.params, lr=self.lr)
        for rows in minibatches(y.size, self.imitation_batch, self.imitation_steps, rng):
            xb, mb, yb = (x, mask, y) if rows is None else (x[rows], mask[rows], y[rows])
            fwd = self.policy.forward(xb, mb)
            optimizer.step(
                self.policy.params, self.policy.backward(fwd, grad_log_prob(fwd, yb) / yb.size)
            )
