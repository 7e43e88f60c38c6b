"""``mira_standardised``: mira with its milestone advantages standardised over each
update's steps, an ablation of mira's actor (docs/agents.md, mira: what keeps mira
below maskable_ppo).

mira's doubly robust advantage is clipped to [-1, 1] and passed to its actor as it is.
PPO as stable-baselines3 runs it standardises the advantages of each update (mean 0,
standard deviation 1), and PPO-clip's step size is tuned to that scale, so handing
mira's raw advantages to PPO (``actor: ppo`` alone) changes two things at once: the
update rule and the scale of its targets. This agent is mira with one change, its
advantages standardised over the steps of the update they enter (the newest phase's
episodes for ``actor: ppo``, the buffer for the regression actor), so that the row
"mira, PPO actor, standardised advantages" compares the actors on mira's own critics.
The GAE switch (``advantage: gae``) already standardises and is left as it is.

It is a plugin (swept as ``experiments/ablation_agents/mira_standardised.py:
MIRAStandardised`` by ``experiments/ablations.py``), not a switch of ``mira.py``, so that
adding it leaves the code identity of mira's committed cells as it is.

Hyper-parameters: mira's (``conf/agent/mira.yaml``; the ablation sets ``actor: ppo``).
"""

from __future__ import annotations

import numpy as np

from clinbench.agents.core.rollout import Trajectory
from clinbench.agents.mira import MIRAAgent


def standardised(adv: np.ndarray) -> np.ndarray:
    """``(adv - mean) / (sd + 1e-8)``, as stable-baselines3 normalises advantages."""
    return (adv - adv.mean()) / (adv.std() + 1e-8)


class MIRAStandardised(MIRAAgent):
    name = "mira_standardised"
    description = "mira with its milestone advantages standardised over each update's steps"

    def step_advantages(self, trajs: list[Trajectory]) -> np.ndarray:
        """mira's advantage of every step of ``trajs``, standardised over them (the GAE
        switch's are already)."""
        adv = super().step_advantages(trajs)
        return adv if self.advantage == "gae" else standardised(adv)
