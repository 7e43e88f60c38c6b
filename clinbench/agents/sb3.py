"""``ppo`` and ``maskable_ppo``: stable-baselines3 PPO and sb3-contrib MaskablePPO.

PPO: Schulman et al., Proximal Policy Optimization Algorithms (arXiv 1707.06347);
invalid-action masking: Huang and Ontañón, A Closer Look at Invalid Action Masking in
Policy Gradient Algorithms (arXiv 2006.14171). The implementations are the libraries'.

Reference rows from a standard RL library, entered through the same entry-point group
as any plugin (``clinbench.agents``, declared in clinbench's ``pyproject.toml``) and
installed with the optional extra: ``pip install -e ".[sb3]"`` (CPU torch, pinned).
Without it they are listed as unavailable by ``clinbench agents``.

Both train through the Gymnasium adapter (:class:`clinbench.env.gym_adapter.MacroGymEnv`:
the macro features in, a macro index out) on the cell's training worlds, drawn from
the cell's training stream, for exactly the protocol's budget in environment steps
(``protocol.train_steps``, the in-house learners' budget), so they compare with them
at equal experience; a last partial rollout is stopped at the budget, not learnt from.
``ppo`` sees no mask (an invalid index is played as an invalid action, which wastes
the day); ``maskable_ppo`` gets the adapter's ``action_mask``. Evaluation is greedy.

Determinism: one torch thread; the model's seed is drawn from the cell's training
stream. stable-baselines3 draws from the global ``random`` / ``numpy`` / ``torch``
generators internally (minibatch order, initial weights, sampling) and seeds them from
that seed when the model is built, so the same cell gives the same numbers in any
process; no clinbench code reads those generators.

Hyper-parameters (stable-baselines3 defaults, ``conf/agent/ppo.yaml``):
    learning_rate (3e-4), n_steps (2048), batch_size (64), n_epochs (10), gamma (0.99),
    gae_lambda (0.95), clip_range (0.2), ent_coef (0.0), vf_coef (0.5),
    max_grad_norm (0.5), net_arch ([64, 64]: the default MlpPolicy).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.learner import TRAIN_SEED_HIGH, TRAIN_SEED_LOW, CurvePoint, curve_marks
from clinbench.env.base import Env

INSTALL = 'pip install -e ".[sb3]"'


class _SB3Agent(Agent):
    """What PPO and MaskablePPO share: the adapter, the budget, the curve, acting."""

    learning = True
    masked: ClassVar[bool] = False
    #: distributions whose versions enter the cell hash; modules that must import
    requires: ClassVar[tuple[str, ...]] = ("stable-baselines3", "torch")
    requires_modules: ClassVar[tuple[str, ...]] = ("stable_baselines3", "torch")
    install_hint = INSTALL

    def __init__(
        self,
        context: AgentContext,
        learning_rate: float = 3e-4,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: float = 0.2,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        net_arch: tuple[int, ...] = (64, 64),
        **config: Any,
    ):
        super().__init__(context, **config)
        self.hyper = {
            "learning_rate": learning_rate,
            "n_steps": n_steps,
            "batch_size": batch_size,
            "n_epochs": n_epochs,
            "gamma": gamma,
            "gae_lambda": gae_lambda,
            "clip_range": clip_range,
            "ent_coef": ent_coef,
            "vf_coef": vf_coef,
            "max_grad_norm": max_grad_norm,
        }
        self.net_arch = [int(n) for n in net_arch]
        self.horizon = int(context.spec.params.horizon)
        self.model: Any = None
        self.curve: list[CurvePoint] = []

    # ---- the library's classes (imported only when used) ---------------------------
    def algorithm(self) -> Any:
        from stable_baselines3 import PPO

        return PPO

    # ---- training ------------------------------------------------------------------
    def train(
        self,
        make_env: Callable[[], Env],
        steps: int,
        rng: np.random.Generator,
        evaluate: Callable[[Agent], float] | None = None,
        curve_points: int = 21,
    ) -> list[CurvePoint]:
        """Train for ``steps`` environment steps of training worlds (the in-house
        learners' budget, exactly)."""
        import torch

        from clinbench.env.gym_adapter import MacroGymEnv

        torch.set_num_threads(1)
        native = make_env()
        env = _TrainingWorlds(MacroGymEnv.wrap(native), rng)
        self.model = self.algorithm()(
            "MlpPolicy",
            env,
            policy_kwargs={"net_arch": self.net_arch},
            seed=int(rng.integers(2**31)),
            device="cpu",
            verbose=0,
            **self.hyper,
        )
        self.curve = []
        callback = self._callback(steps, curve_marks(steps, curve_points), evaluate, native)
        if steps > 0:
            self.model.learn(total_timesteps=steps, callback=callback)
        # a budget of whole rollouts learns from its last one after its last step: the
        # budget's mark is the policy after that update (otherwise nothing is left)
        callback.record(steps)
        return self.curve

    def _callback(
        self,
        budget: int,
        marks: list[int],
        evaluate: Callable[[Agent], float] | None,
        native: Any,
    ) -> Any:
        """Stops at exactly ``budget`` steps and records the curve at its marks."""
        from stable_baselines3.common.callbacks import BaseCallback

        agent, pending, began = self, list(marks), time.perf_counter()
        whole_rollouts = budget % self.hyper["n_steps"] == 0

        class Budget(BaseCallback):
            def record(self, steps: int) -> None:
                while pending and steps >= pending[0]:
                    mark = pending.pop(0)
                    if evaluate is not None:
                        score = float(evaluate(agent))
                        agent.curve.append(
                            CurvePoint(
                                len(agent.curve),
                                mark,
                                native.budget.episodes,
                                score,
                                time.perf_counter() - began,
                            )
                        )

            def _on_training_start(self) -> None:
                self.record(0)

            def _on_step(self) -> bool:
                steps = self.num_timesteps
                self.record(min(steps, budget - 1) if whole_rollouts else steps)
                # Stop at the budget; a budget of whole rollouts ends by itself after
                # learning from the last one.
                return self.num_timesteps < budget or whole_rollouts

        return Budget()

    # ---- acting --------------------------------------------------------------------
    def act(self, obs: Any) -> Any:
        features = np.asarray(self.macros.features(obs), dtype=np.float32)
        if self.model is None:  # untrained: the first valid macro-action
            k = int(np.flatnonzero(self.macros.mask(obs))[0])
        elif self.masked:
            mask = np.asarray(self.macros.mask(obs), dtype=bool)
            k = int(self.model.predict(features, action_masks=mask, deterministic=True)[0])
        else:
            k = int(self.model.predict(features, deterministic=True)[0])
        return self.macros.to_action(k, obs)


class _TrainingWorlds(gym.Wrapper):
    """Every reset plays a training world drawn from ``rng`` (the learner's own reset
    seeds are ignored); ``action_masks()`` is the current mask, for MaskablePPO."""

    def __init__(self, env: gym.Env, rng: np.random.Generator):
        super().__init__(env)
        self._rng = rng
        self._mask = np.ones(env.action_space.n, dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(
            seed=int(self._rng.integers(TRAIN_SEED_LOW, TRAIN_SEED_HIGH)), options=options
        )
        self._mask = info["action_mask"].astype(bool)
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._mask = info["action_mask"].astype(bool)
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self._mask


class PPOAgent(_SB3Agent):
    name = "ppo"
    description = (
        "stable-baselines3 PPO through the Gymnasium adapter, no action mask (optional extra sb3)"
    )


class MaskablePPOAgent(_SB3Agent):
    name = "maskable_ppo"
    description = "sb3-contrib MaskablePPO with the adapter's action mask (optional extra sb3)"
    masked = True
    requires = ("stable-baselines3", "sb3-contrib", "torch")
    requires_modules = ("stable_baselines3", "sb3_contrib", "torch")

    def algorithm(self) -> Any:
        from sb3_contrib import MaskablePPO

        return MaskablePPO
