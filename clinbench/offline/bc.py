"""``bc``: behavioural cloning of the logged macro-actions.

Pomerleau, "Efficient Training of Artificial Neural Networks for Autonomous
Navigation" (Neural Computation 1991); the baseline of every offline study, here as
the masked softmax policy of the online learners fitted by cross-entropy to the
dataset's (features, mask) -> action. It can only be as good as its data: on a mixture
it imitates the mixture.

Hyper-parameters (``conf/agent/bc.yaml``; the shared ones in ``clinbench/offline/base.py``):
    hidden (64): 0 gives the linear multinomial logistic policy (ablation: it fits the
        same likelihood with no hidden layer).
"""

from __future__ import annotations

import numpy as np

from clinbench.offline.base import OfflineAgent
from clinbench.offline.data import OfflineData


class BCAgent(OfflineAgent):
    name = "bc"
    description = "behavioural cloning of the dataset's macro-actions (offline)"

    def learn(
        self, data: OfflineData, x: np.ndarray, x_next: np.ndarray, rng: np.random.Generator
    ) -> None:
        self.fit_policy(x, data.masks, data.actions)
