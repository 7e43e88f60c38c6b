"""The PPO-clip objective with an exact discrete KL penalty, and its gradient.

J = mean_t min(r_t A_t, clip(r_t, 1-eps, 1+eps) A_t) - beta * mean_t KL(pi || ref)
    + c_ent * mean_t H(pi),
r_t = pi(a_t|x_t) / pi_old(a_t|x_t)  (Schulman et al., "Proximal Policy Optimization
Algorithms", arXiv 1707.06347). The clipped branch has zero gradient.
"""

from __future__ import annotations

import numpy as np

from clinbench.agents.core.optim import Adam
from clinbench.agents.core.policy import SoftmaxPolicy, entropy_and_grad, grad_log_prob, kl_and_grad


def ppo_objective(
    policy: SoftmaxPolicy,
    x: np.ndarray,
    mask: np.ndarray,
    actions: np.ndarray,
    old_logp: np.ndarray,
    adv: np.ndarray,
    ref_logp: np.ndarray | None,
    clip_eps: float = 0.2,
    kl_beta: float = 0.01,
    ent_coef: float = 0.0,
) -> tuple[float, dict[str, np.ndarray]]:
    """Value of J and its gradient w.r.t. the policy parameters."""
    fwd = policy.forward(x, mask)
    n = actions.size
    logp_a = fwd.logp[np.arange(n), actions]
    ratio = np.exp(logp_a - old_logp)
    clipped = np.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    surrogate = np.minimum(ratio * adv, clipped * adv)
    active = ratio * adv <= clipped * adv  # the unclipped branch is the minimum
    g = grad_log_prob(fwd, actions) * (np.where(active, ratio * adv, 0.0))[:, None]
    value = surrogate.mean()
    if ref_logp is not None and kl_beta:
        kl, g_kl = kl_and_grad(fwd, ref_logp)
        value -= kl_beta * kl.mean()
        g -= kl_beta * g_kl
    if ent_coef:
        h, g_h = entropy_and_grad(fwd)
        value += ent_coef * h.mean()
        g += ent_coef * g_h
    return float(value), policy.backward(fwd, g / n)


def ppo_update(
    policy: SoftmaxPolicy,
    optimizer: Adam,
    x: np.ndarray,
    mask: np.ndarray,
    actions: np.ndarray,
    old_logp: np.ndarray,
    adv: np.ndarray,
    ref_logp: np.ndarray | None,
    epochs: int = 4,
    **kw: float,
) -> float:
    """``epochs`` full-batch Adam ascent steps on J; returns the last J."""
    value = 0.0
    for _ in range(epochs):
        value, grads = ppo_objective(policy, x, mask, actions, old_logp, adv, ref_logp, **kw)
        optimizer.step(policy.params, grads)
    return value
