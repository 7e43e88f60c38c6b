"""The shared learning core: gradients against finite differences, masks, optimiser,
standardiser and regression helpers against closed forms and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from clinbench.agents.core.optim import Adam, minibatches
from clinbench.agents.core.policy import SoftmaxPolicy, entropy_and_grad, grad_log_prob, kl_and_grad
from clinbench.agents.core.ppo import ppo_objective
from clinbench.agents.core.regression import Logistic, MultinomialLogistic, Ridge
from clinbench.agents.core.rollout import group_advantages
from clinbench.agents.core.standardise import Standardiser

N_IN, N_ACT, ROWS = 5, 6, 40


def _batch(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(ROWS, N_IN))
    mask = rng.random((ROWS, N_ACT)) < 0.7
    mask[np.arange(ROWS), rng.integers(N_ACT, size=ROWS)] = True
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
    return rng, x, mask, actions


def _policy(hidden: int, rng) -> SoftmaxPolicy:
    pol = SoftmaxPolicy(N_IN, N_ACT, rng, hidden=hidden)
    for v in pol.params.values():  # non-zero everywhere, so every path is exercised
        v += rng.normal(0.0, 0.5, v.shape)
    return pol


def _numeric_grad(fun, params: dict[str, np.ndarray], eps: float = 1e-6) -> dict[str, np.ndarray]:
    out = {}
    for k, v in params.items():
        g = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            old = v[idx]
            v[idx] = old + eps
            hi = fun()
            v[idx] = old - eps
            lo = fun()
            v[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        out[k] = g
    return out


def _assert_grads_close(analytic, numeric, rtol=1e-5, atol=1e-7):
    assert analytic.keys() == numeric.keys()
    for k in analytic:
        np.testing.assert_allclose(analytic[k], numeric[k], rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("hidden", [0, 7])
def test_log_prob_gradient_matches_finite_differences(hidden):
    rng, x, mask, actions = _batch(1)
    pol = _policy(hidden, rng)
    weights = rng.normal(size=ROWS)

    def j():
        return float((pol.forward(x, mask).logp[np.arange(ROWS), actions] * weights).sum())

    fwd = pol.forward(x, mask)
    analytic = pol.backward(fwd, grad_log_prob(fwd, actions) * weights[:, None])
    _assert_grads_close(analytic, _numeric_grad(j, pol.params))


@pytest.mark.parametrize("hidden", [0, 7])
def test_ppo_objective_gradient_matches_finite_differences(hidden):
    rng, x, mask, actions = _batch(2)
    pol = _policy(hidden, rng)
    ref = _policy(hidden, rng)
    ref_logp = ref.forward(x, mask).logp
    # old log probs spread around the current ones, so that both clip branches occur
    old_logp = pol.forward(x, mask).logp[np.arange(ROWS), actions] + rng.normal(0, 0.3, ROWS)
    adv = rng.normal(size=ROWS)
    kw = {"clip_eps": 0.2, "kl_beta": 0.3, "ent_coef": 0.05}
    ratio = np.exp(pol.forward(x, mask).logp[np.arange(ROWS), actions] - old_logp)
    assert np.any(np.abs(ratio - 1) > 0.2) and np.any(np.abs(ratio - 1) < 0.2)

    def j():
        return ppo_objective(pol, x, mask, actions, old_logp, adv, ref_logp, **kw)[0]

    _, analytic = ppo_objective(pol, x, mask, actions, old_logp, adv, ref_logp, **kw)
    _assert_grads_close(analytic, _numeric_grad(j, pol.params), rtol=1e-4, atol=1e-6)


def test_kl_and_entropy_match_their_definitions():
    rng, x, mask, _ = _batch(3)
    pol, ref = _policy(0, rng), _policy(0, rng)
    fwd, rfwd = pol.forward(x, mask), ref.forward(x, mask)
    kl, _ = kl_and_grad(fwd, rfwd.logp)
    h, _ = entropy_and_grad(fwd)
    for r in range(ROWS):
        p, q = fwd.probs[r][mask[r]], rfwd.probs[r][mask[r]]
        assert kl[r] == pytest.approx(np.sum(p * np.log(p / q)))
        assert h[r] == pytest.approx(-np.sum(p * np.log(p)))
    assert np.all(kl >= -1e-12)


def test_masked_actions_get_zero_probability_and_are_never_chosen():
    rng, x, mask, _ = _batch(4)
    pol = _policy(7, rng)
    fwd = pol.forward(x, mask)
    assert np.all(fwd.probs[~mask] == 0.0)
    np.testing.assert_allclose(fwd.probs.sum(axis=1), 1.0)
    for r in range(ROWS):
        greedy, _ = pol.choose(x[r], mask[r], None)
        assert mask[r, greedy]
        for _ in range(50):
            a, lp = pol.choose(x[r], mask[r], rng)
            assert mask[r, a]
            assert lp == pytest.approx(fwd.logp[r, a])


def test_adam_step_matches_the_published_update():
    params = {"w": np.array([1.0, -2.0])}
    grads = {"w": np.array([0.5, -0.1])}
    opt = Adam(params, lr=0.1)
    opt.step(params, grads)
    # first step: m_hat = g, v_hat = g^2, so the move is lr * g / (|g| + eps)
    np.testing.assert_allclose(params["w"], [1.0 + 0.1, -2.0 - 0.1], rtol=1e-6)


def test_standardiser_matches_numpy_over_several_batches():
    rng = np.random.default_rng(5)
    data = rng.normal(3.0, 2.0, size=(300, 4))
    st = Standardiser(4, min_sd=1e-6)
    for chunk in np.array_split(data, 7):
        st.update(chunk)
    np.testing.assert_allclose(st.mean, data.mean(axis=0))
    np.testing.assert_allclose(st.sd, data.std(axis=0))
    np.testing.assert_allclose(st(data).mean(axis=0), 0.0, atol=1e-12)


def test_group_advantages_are_standardised_and_zero_for_ties():
    a = group_advantages(np.array([0.1, 0.4, 0.4, 0.9]))
    assert a.mean() == pytest.approx(0.0, abs=1e-12)
    assert a.std() == pytest.approx(1.0)
    assert np.all(group_advantages(np.full(5, 0.3)) == 0.0)


def test_ridge_equals_the_closed_form():
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    fit = Ridge(alpha=2.0).fit(x, y)
    xb = np.hstack([x, np.ones((50, 1))])
    pen = np.diag([2.0, 2.0, 2.0, 0.0])
    np.testing.assert_allclose(fit.coef, np.linalg.solve(xb.T @ xb + pen, xb.T @ y), rtol=1e-7)


@pytest.mark.parametrize("model", [Logistic(alpha=0.5), MultinomialLogistic(4, alpha=0.5)])
def test_regression_gradients_match_finite_differences(model):
    rng = np.random.default_rng(7)
    xb = np.hstack([rng.normal(size=(30, 3)), np.ones((30, 1))])
    if isinstance(model, Logistic):
        y, theta = (rng.random(30) < 0.4).astype(float), rng.normal(size=4)
    else:
        y, theta = rng.integers(4, size=30), rng.normal(size=16)
    err = optimize.check_grad(
        lambda t: model.loss_and_grad(t, xb, y)[0],
        lambda t: model.loss_and_grad(t, xb, y)[1],
        theta,
    )
    assert err < 1e-5 * max(1.0, np.linalg.norm(model.loss_and_grad(theta, xb, y)[1]))


def test_logistic_fit_reaches_the_penalised_optimum():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(200, 2))
    y = (rng.random(200) < 1 / (1 + np.exp(-(1.5 * x[:, 0] - x[:, 1])))).astype(float)
    fit = Logistic(alpha=1e-6, max_iter=500).fit(x, y)
    xb = np.hstack([x, np.ones((200, 1))])
    grad = fit.loss_and_grad(fit.coef, xb, y)[1]
    assert np.linalg.norm(grad) < 1e-3  # stationary point of the convex objective
    assert fit.coef[0] > 0.8 and fit.coef[1] < -0.4
    p = fit.predict_proba(x)
    assert np.all((0 < p) & (p < 1))


def test_multinomial_probabilities_sum_to_one():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(60, 3)), rng.integers(5, size=60)
    p = MultinomialLogistic(5).fit(x, y).predict_proba(x)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_minibatches_cover_the_rows_once_per_pass():
    rng = np.random.default_rng(0)
    batches = list(minibatches(10, 4, 7, rng))
    assert [len(b) for b in batches] == [4, 4, 2, 4, 4, 2, 4]
    for start in (0, 3):  # each pass is a permutation of the rows
        assert sorted(np.concatenate(batches[start : start + 3]).tolist()) == list(range(10))
    assert not np.array_equal(np.concatenate(batches[:3]), np.concatenate(batches[3:6]))


@pytest.mark.parametrize("size", [0, 10, 11, -1])
def test_full_batches_draw_nothing(size):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert list(minibatches(10, size, 3, rng)) == [None, None, None]
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("size", [8, 13])
def test_minibatch_update_steps_once_per_minibatch_of_each_shuffled_pass(size):
    """grpo's minibatch schedule: an Adam step on the PPO-clip objective of each
    ``size`` rows of ``passes`` shuffled passes (the rows ``minibatches`` draws with the
    same generator, a pass's last step on what is left), the reference log-probabilities
    taken on the same rows."""
    from clinbench.agents.grpo import minibatch_update

    rng, x, mask, actions = _batch(3)
    pol = _policy(7, rng)
    ref_logp = pol.forward(x, mask).logp
    old_logp = ref_logp[np.arange(ROWS), actions] + rng.normal(0, 0.3, ROWS)
    adv = rng.normal(size=ROWS)
    kw = {"clip_eps": 0.2, "kl_beta": 0.1, "ent_coef": 0.0}
    expected, got = pol.copy(), pol.copy()
    opt_e, opt_g = Adam(expected.params, lr=0.01), Adam(got.params, lr=0.01)
    steps = 3 * -(-ROWS // size)
    for r in minibatches(ROWS, size, steps, np.random.default_rng(5)):
        _, g = ppo_objective(
            expected, x[r], mask[r], actions[r], old_logp[r], adv[r], ref_logp[r], **kw
        )
        opt_e.step(expected.params, g)
    minibatch_update(
        opt_g, got, x, mask, actions, old_logp, adv, ref_logp, size, 3,
        np.random.default_rng(5), **kw,
    )
    assert opt_g.t == steps
    for key in expected.params:
        np.testing.assert_array_equal(got.params[key], expected.params[key])
