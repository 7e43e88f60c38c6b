"""``grpo_gae``: grpo with its group-relative outcome advantage replaced by generalised
advantage estimation on a ridge value, an ablation of the GRPO core (docs/agents.md,
grpo: hcapo and memexrl against maskable_ppo).

GRPO's defining choice is to have no value function: every step of an episode gets the
episode's score standardised within its group. This agent keeps everything else of
``grpo`` (groups of G episodes of one training world collected at once, PPO-clip with
the exact KL to the initial policy, the minibatch schedule) and gives each step the
GAE advantage of ``clinbench.agents.mira.gae_advantages`` instead: a ridge value of
the discounted return fitted on the update's episodes, gamma 0.99 and lambda 0.95
(stable-baselines3's defaults), standardised over the update's steps.

It is a plugin (swept as ``experiments/ablation_agents/grpo_gae/grpo_gae.py:GRPOGAE``
by ``experiments/ablations.py``), not a switch of ``grpo.py``, so that adding it leaves
the code identity of every GRPO learner's committed cells as it is. It has a folder of
its own: a file plugin's code identity covers every module loaded from its folder.

Hyper-parameters: grpo's (``conf/agent/grpo.yaml``), plus
    gamma (0.99): discount of the returns and of GAE.
    gae_lambda (0.95): GAE's lambda.
    value_l2 (1.0): L2 penalty of the ridge value.
"""

from __future__ import annotations

from typing import Any

from clinbench.agents.context import AgentContext
from clinbench.agents.grpo import GRPOAgent
from clinbench.agents.mira import gae_advantages


class GRPOGAE(GRPOAgent):
    name = "grpo_gae"
    description = "grpo with GAE on a ridge value instead of the group outcome advantage"

    def __init__(
        self,
        context: AgentContext,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        value_l2: float = 1.0,
        **config: Any,
    ):
        super().__init__(context, **config)
        self.gamma, self.gae_lambda, self.value_l2 = gamma, gae_lambda, value_l2

    def update_groups(self, groups, optimizer, reference) -> None:
        """One update on the batch, each step's advantage from GAE over all its episodes."""
        trajs = [t for group in groups for t in group]
        advantages = gae_advantages(
            [self.std(t.x) for t in trajs],
            [t.rewards for t in trajs],
            self.gamma,
            self.gae_lambda,
            self.value_l2,
        )
        self.update(trajs, advantages, optimizer, reference)
