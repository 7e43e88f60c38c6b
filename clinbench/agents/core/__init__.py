"""The shared numpy core of the learning agents, written once and used by all four.

Feature standardisation, masked softmax policies with analytic gradients, Adam, the
PPO-clip update with exact discrete KL, the group rollout collector and the
regression helpers. Each learning method adds only its defining piece on top.
"""
