"""``memexrl``: memory operations as actions, trained with GRPO on a memory-aware reward.

Wang et al., "Memex(RL): Scaling Long-Horizon LLM Agents via Indexed Experience
Memory", arXiv 2603.04257.

Kept: the policy chooses the environment's memory operations itself,
``summarize_and_index`` (store an exact, indexed snapshot) and
``retrieve_relevant_history`` (dereference a record by its exact key, no similarity
search). Its input adds a working-memory status (slots used of a slot budget, reads so
far, age of the last dereferenced record) to the features, which already carry the
last dereferenced record's per-site conversion. It is trained with GRPO on the
training reward R = score - a1 P_context - a2 P_redundancy - a3 P_format, where
P_context counts writes beyond the slot budget, P_redundancy writes that re-index an
existing key or a state unchanged since the last write, and P_format failed reads
(each count divided by the slot budget). The benchmark score stays the environment
score. Replaced: the LLM's token budget is the slot budget. Episodes are segmented at
each write for bookkeeping (``segments``), but with a feature-vector policy there is no
context to reset, so every segment shares its episode's group advantage.

Hyper-parameters (``conf/agent/memexrl.yaml``; GRPO's too):
    alphas ([0.3, 0.2, 0.1]): weights of P_context, P_redundancy, P_format.
    slot_budget (4): memory slots the policy may use without penalty.
    mask_memory (false): true masks out both memory actions (ablation).
    groups (4), minibatch (64; GRPO's defaults are 1 and 0): groups per update,
        collected at once, and stable-baselines3's minibatch schedule for updates of
        more than 64 rows; chosen by the search (``experiments/hparam_search.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clinbench.agents.context import AgentContext
from clinbench.agents.core.rollout import Trajectory, group_advantages
from clinbench.agents.grpo import GRPOAgent
from clinbench.agents.registry import register_agent

FAILED_READS = frozenset({"memory_not_found", "missing_memory_query", "missing_memory_key"})
#: summary fields that must change for a new write to carry new information
STATE_KEYS = ("enrolled", "screened", "consented", "dropped_out")


@register_agent
class MemexRLAgent(GRPOAgent):
    name = "memexrl"
    description = (
        "indexed memory as actions (write / dereference by key), GRPO on a memory-aware reward"
    )
    envs = ("recruitment", "trial_design")

    def __init__(
        self,
        context: AgentContext,
        alphas: tuple[float, float, float] = (0.3, 0.2, 0.1),
        slot_budget: int = 4,
        mask_memory: bool = False,
        groups: int = 4,
        minibatch: int = 64,
        **config: Any,
    ):
        self.n_features = context.macro_space.n_features
        super().__init__(context, groups=groups, minibatch=minibatch, **config)
        self.alphas, self.slot_budget, self.mask_memory = tuple(alphas), slot_budget, mask_memory
        names = self.macros.names
        #: the memory macros; a family without them (trial_design) leaves memexrl its
        #: GRPO core: no memory input, every memory penalty 0
        self._memory = "summarize" in names and "retrieve" in names
        self._write = names.index("summarize") if self._memory else -1
        self._read = names.index("retrieve") if self._memory else -1
        self.segments = 0
        self.begin_episode()

    # ---- working-memory status ---------------------------------------------------
    def input_size(self) -> int:
        return self.n_features + 3

    def episode_state(self) -> dict[str, Any]:
        """Reads so far and the day of the last record read (None: none yet)."""
        return {"reads": 0, "record_day": None}

    def policy_input(
        self, features: np.ndarray, summary: dict[str, float], state: Any
    ) -> np.ndarray:
        if not self._memory:
            return np.concatenate([features, [0.0, 0.0, 1.0]])
        if summary["retrieved_day"] >= 0:  # the last action read a record
            state["reads"] += 1
            state["record_day"] = summary["retrieved_day"]
        day = state["record_day"]
        age = 1.0 if day is None else (summary["time"] - day) / summary["horizon"]
        status = [
            min(2.0, summary["memory_slots"] / self.slot_budget),
            min(2.0, state["reads"] / self.slot_budget),
            age,
        ]
        return np.concatenate([features, status])

    def valid(self, mask: np.ndarray) -> np.ndarray:
        mask = super().valid(mask)
        if self.mask_memory and self._memory:
            mask = mask.copy()
            mask[..., [self._write, self._read]] = False
        return mask

    # ---- the training reward ------------------------------------------------------
    def penalties(self, traj: Trajectory) -> tuple[float, float, float]:
        """(P_context, P_redundancy, P_format) of one episode."""
        writes = np.flatnonzero(traj.actions == self._write)
        overflow = max(0, writes.size - self.slot_budget)
        redundant, last = 0, None
        for t in writes:
            state = tuple(traj.summaries[t][k] for k in STATE_KEYS)
            if traj.infos[t].get("memory_overwritten") or state == last:
                redundant += 1
            last = state
        failed = sum(1 for e in traj.errors if e in FAILED_READS)
        return overflow / self.slot_budget, redundant / self.slot_budget, failed / self.slot_budget

    def training_reward(self, traj: Trajectory) -> float:
        a1, a2, a3 = self.alphas
        p_ctx, p_red, p_fmt = self.penalties(traj)
        return traj.score - a1 * p_ctx - a2 * p_red - a3 * p_fmt

    def step_advantages(self, group: list[Trajectory]) -> list[np.ndarray]:
        self.segments += sum(1 + int(np.sum(t.actions == self._write)) for t in group)
        adv = group_advantages(np.array([self.training_reward(t) for t in group]))
        return [np.full(len(t), a) for t, a in zip(group, adv, strict=True)]
