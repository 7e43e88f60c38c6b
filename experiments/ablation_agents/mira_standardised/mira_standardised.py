"""``mira_standardised``: mira with its milestone advantages standardised over each
update's steps, an ablation of mira (docs/agents.md, mira: the diagnosis on
recruitment).

mira's doubly robust advantage is clipped to [-1, 1] and passed to its actor as it is:
on recruitment it is mostly negative (its mean over an update's steps is about -0.3).
stable-baselines3's PPO standardises its advantages (mean 0, standard deviation 1)
within each minibatch, and mira's ``advantage: gae`` switch standardises GAE over the
update's steps. This agent is mira with one change: its milestone advantages
standardised over all the steps of the update they enter (the newest phase's episodes
for ``actor: ppo``, the buffer for the regression actor), so that mira's own critics
and GAE reach either actor centred and scaled alike. GAE advantages (``advantage:
gae``) are passed on as they are.

It is a plugin (swept as
``experiments/ablation_agents/mira_standardised/mira_standardised.py:MIRAStandardised``
by ``experiments/ablations.py``), not a switch of ``mira.py``, so that adding it leaves
the code identity of mira's committed cells as it is. It has a folder of its own: a
file plugin's code identity covers every module loaded from its folder.

Hyper-parameters: mira's (``conf/agent/mira.yaml``).
"""

from __future__ import annotations

import numpy as np

from clinbench.agents.core.rollout import Trajectory
from clinbench.agents.mira import MIRAAgent


def standardised(adv: np.ndarray) -> np.ndarray:
    """``(adv - mean) / (sd + 1e-8)``, stable-baselines3's normalisation of advantages."""
    return (adv - adv.mean()) / (adv.std() + 1e-8)


class MIRAStandardised(MIRAAgent):
    name = "mira_standardised"
    description = "mira with its milestone advantages standardised over each update's steps"

    def step_advantages(self, trajs: list[Trajectory]) -> np.ndarray:
        """mira's advantage of every step of ``trajs``, standardised over them (the GAE
        switch's are already)."""
        adv = super().step_advantages(trajs)
        return adv if self.advantage == "gae" else standardised(adv)
