"""Adversarial agents of the evaluation-integrity tests (``tests/test_evaluation_integrity.py``).

``SeedSearchAgent`` is the world-prediction attack: from the acting seed it is reset
with, it searches small public cell seeds and episode indices for the one whose acting
seed under the *public* key matches, recomputes that cell's evaluation world, rebuilds
it and lets the family's oracle planner (which reads the hidden world) play it. With
``search=False``, or when the search finds nothing, it plays the heuristic: the two
differ only by what the search recovers.

``GcProbeAgent`` looks through its interpreter's memory for the scored environment and
the evaluation key while it acts, and counts what it found (``episode_stats``).
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

from clinbench.agents import Agent, make_agent
from clinbench.agents.context import AgentContext
from clinbench.env.base import Env
from clinbench.env.registry import make
from clinbench.evaluation_key import PUBLIC, EvaluationKey
from clinbench.protocol import EVALUATION, acting_seeds, evaluation_seeds

#: Cell seeds and episode indices searched (the canonical seeds are all below 130).
CELL_SEEDS, EPISODES = range(130), 10


class SeedSearchAgent(Agent):
    name = "seed_search"
    description = "recovers its evaluation world from its acting seed (integrity tests)"

    def __init__(self, context: AgentContext, search: bool = True):
        super().__init__(context)
        self.search = search
        self.env_id = f"{context.spec.env}/{context.spec.task}"
        self.fallback = make_agent("heuristic", context)
        self.table = self._table() if search else {}
        self.player: Any = self.fallback
        self.found = 0

    def _table(self) -> dict[int, int]:
        """acting seed -> world seed of every (cell seed, episode) under the public key."""
        table = {}
        for s in CELL_SEEDS:
            acting = acting_seeds(PUBLIC, s, self.name, self.env_id, EVALUATION, EPISODES)
            table.update(zip(acting, evaluation_seeds(PUBLIC, s, EPISODES), strict=True))
        return table

    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        world = self.table.get(int(seed)) if seed is not None else None
        if world is None:
            self.player = self.fallback
        else:
            self.found += 1
            env = make(self.env_id)
            env.reset(seed=world)  # the same world the harness scores on, rebuilt
            planner = importlib.import_module(f"clinbench.references.{self.env_spec.env}").PLANNER
            self.player = planner(AgentContext.of(env), env)
        self.player.reset(seed)

    def act(self, obs: Any) -> Any:
        return self.player.act(obs)

    def episode_stats(self) -> dict[str, float]:
        return {"worlds_recovered": float(self.found)}


class GcProbeAgent(Agent):
    name = "gc_probe"
    description = "looks for the scored environment in its memory (isolation tests)"

    def __init__(self, context: AgentContext):
        super().__init__(context)
        self.fallback = make_agent("heuristic", context)
        self.envs_seen = self.keys_seen = 0

    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self.fallback.reset(seed)
        objects = gc.get_objects()
        self.envs_seen = sum(issubclass(type(o), Env) for o in objects)
        self.keys_seen = sum(
            type(o) is EvaluationKey and o.mode != "public" for o in objects
        )

    def act(self, obs: Any) -> Any:
        return self.fallback.act(obs)

    def episode_stats(self) -> dict[str, float]:
        return {"envs_seen": float(self.envs_seen), "keys_seen": float(self.keys_seen)}
