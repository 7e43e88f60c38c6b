"""Test agents loaded by spec string (``path/to/this/file.py:Class``).

``RecordingAgent`` keeps everything clinbench hands it (constructor arguments, reset
seeds, observations, the training factory, stream and callback) so a test can prove
the agent contract: no scored environment, no world seed, nothing that reaches hidden
state. ``FailingAgent`` raises in a cell, to show a failing plugin fails alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents import Agent

#: Everything every RecordingAgent of this process received, in order.
RECEIVED: list[tuple[str, Any]] = []


class RecordingAgent(Agent):
    name = "recording"
    description = "records what it is given (agent-contract tests)"
    learning = True

    def __init__(self, context: Any, **config: Any):
        RECEIVED.append(("init", context))
        RECEIVED.append(("config", dict(config)))
        super().__init__(context)

    def reset(self, seed: Any = None) -> None:
        RECEIVED.append(("reset", seed))
        super().reset(seed)

    def act(self, obs: Any) -> Any:
        if len([k for k, _ in RECEIVED if k == "obs"]) < 400:
            RECEIVED.append(("obs", obs))
        mask = self.macros.mask(obs)
        k = int(np.flatnonzero(mask)[0])
        return self.macros.to_action(k, obs)

    def train(
        self, make_env: Any, steps: int, rng: Any, evaluate: Any = None, curve_points: int = 21
    ) -> list:
        RECEIVED.append(("train", (make_env, steps, rng, evaluate)))
        env = make_env()
        RECEIVED.append(("training_env", env))
        seed = int(rng.integers(2**31, 2**32))
        obs, _ = env.reset(seed=seed)
        RECEIVED.append(("obs", obs))
        if evaluate is not None:
            RECEIVED.append(("evaluated", evaluate(self)))
        return []


class FailingAgent(Agent):
    name = "failing"
    description = "raises when it acts (failure-isolation tests)"

    def act(self, obs: Any) -> Any:
        raise RuntimeError("this agent always fails")


class RecordingOfflineAgent(Agent):
    """An offline agent that records what the offline protocol hands it (``fit``)."""

    name = "recording_offline"
    description = "records what the offline protocol gives it (agent-contract tests)"
    offline = True

    def __init__(self, context: Any, **config: Any):
        RECEIVED.append(("init", context))
        RECEIVED.append(("config", dict(config)))
        super().__init__(context)

    def fit(self, data: Any, rng: Any) -> None:
        RECEIVED.append(("fit", (data, rng)))

    def train(self, *args: Any, **kwargs: Any) -> list:  # never called for an offline agent
        RECEIVED.append(("train", args))
        return []

    def reset(self, seed: Any = None) -> None:
        RECEIVED.append(("reset", seed))
        super().reset(seed)

    def act(self, obs: Any) -> Any:
        mask = self.macros.mask(obs)
        return self.macros.to_action(int(np.flatnonzero(mask)[0]), obs)
