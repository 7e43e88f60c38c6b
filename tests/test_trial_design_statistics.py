"""The dose-finding DMC statistics against published values and independent computations."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.optimize import brentq
from scipy.special import betaln

from clinbench.env.trial_design.statistics import (
    SpendingBoundary,
    boundaries,
    information,
    obf_spending,
    per_arm_alpha,
    predictive_probabilities,
    predictive_probability,
    prob_better,
    prob_toxic,
    safety_stop,
    z_statistic,
)

ALPHA = 0.025

#: gsDesign, one-sided alpha 0.025, Lan-DeMets O'Brien-Fleming spending, equal spacing.
GSDESIGN = {
    2: [2.9626, 1.9686],
    3: [3.7103, 2.5114, 1.9930],
    4: [4.3326, 2.9631, 2.3590, 2.0141],
    5: [4.8769, 3.3570, 2.6802, 2.2898, 2.0310],
}

UNEQUAL = [[0.2, 0.45, 1.0], [0.1, 0.3, 0.35, 0.8, 1.0], [0.15, 0.5, 0.6, 1.0]]


# ------------------------------------------------------------------ the exact joint distribution
def _canonical_cov(fractions) -> np.ndarray:
    """corr(Z_i, Z_j) = sqrt(t_i / t_j) for t_i <= t_j."""
    f = np.asarray(fractions, dtype=float)
    return np.sqrt(np.minimum.outer(f, f) / np.maximum.outer(f, f))


def _exit_probability(previous, b, fractions) -> float:
    """P(Z_1 < b_1, ..., Z_{k-1} < b_{k-1}, Z_k >= b) under H0, by scipy's mvn integration."""
    k = len(previous) + 1
    if k == 1:
        return float(stats.norm.sf(b))
    upper = np.array([*previous, np.inf])
    lower = np.array([-np.inf] * (k - 1) + [b])
    return float(
        stats.multivariate_normal.cdf(
            upper,
            mean=np.zeros(k),
            cov=_canonical_cov(fractions[:k]),
            lower_limit=lower,
            abseps=1e-9,
            releps=1e-6,
            maxpts=200_000,
            rng=np.random.default_rng(1),
        )
    )


# ---------------------------------------------------------------------------------- spending
def test_obf_spending_endpoints_clipping_and_known_value():
    assert obf_spending(0.0) == 0.0
    assert obf_spending(1.0) == ALPHA
    assert obf_spending(1.7) == ALPHA
    assert obf_spending(-0.3) == 0.0
    # 2 - 2 Phi(z_{0.9875} / sqrt(0.5))
    assert obf_spending(0.5) == pytest.approx(
        2 * stats.norm.sf(stats.norm.isf(0.0125) / 0.5**0.5), rel=1e-12
    )
    t = np.array([-1.0, 0.0, 0.1, 0.5, 0.9, 1.0, 2.0])
    values = obf_spending(t, 0.05)
    assert values.shape == t.shape
    np.testing.assert_allclose(values, [obf_spending(float(v), 0.05) for v in t], rtol=1e-13)
    assert np.all(np.diff(obf_spending(np.linspace(0, 1, 101))) > 0)


def test_per_arm_alpha_is_bonferroni():
    assert per_arm_alpha(0.025, 3) == pytest.approx(0.025 / 3)
    assert per_arm_alpha(0.05, 1) == 0.05
    with pytest.raises(ValueError):
        per_arm_alpha(0.05, 0)


# ---------------------------------------------------------------------------------- boundary
@pytest.mark.parametrize("k", sorted(GSDESIGN))
def test_boundaries_match_gsdesign(k):
    ours = boundaries(np.arange(1, k + 1) / k, alpha=ALPHA)
    np.testing.assert_allclose(ours, GSDESIGN[k], atol=1e-3)


@pytest.mark.parametrize("fractions", UNEQUAL)
def test_boundaries_match_root_finding_on_scipy_mvn(fractions):
    reference: list[float] = []
    for k, t in enumerate(fractions):
        spend = obf_spending(t) - (obf_spending(fractions[k - 1]) if k else 0.0)
        lo, hi = stats.norm.isf(obf_spending(t)), stats.norm.isf(spend)
        reference.append(
            brentq(
                lambda b, s=spend: _exit_probability(reference, b, fractions) - s,
                lo - 1e-6,
                hi + 1e-6,
                xtol=1e-8,
            )
        )
    np.testing.assert_allclose(boundaries(fractions), reference, atol=1e-4)


@pytest.mark.parametrize(
    "fractions,alpha",
    [
        *((f, ALPHA) for f in UNEQUAL),
        ([0.25, 0.5, 0.75, 1.0], ALPHA),
        ([0.3, 0.55, 0.8, 1.0], ALPHA / 3),
    ],
)
def test_exact_crossing_probability_spends_alpha_look_by_look(fractions, alpha):
    """Each look's exit probability, integrated by scipy's mvn, is the spending increment."""
    bounds = boundaries(fractions, alpha)
    exits = [_exit_probability(bounds[:k], bounds[k], fractions) for k in range(len(bounds))]
    spend = np.diff(obf_spending(np.array(fractions), alpha), prepend=0.0)
    np.testing.assert_allclose(exits, spend, rtol=1e-4, atol=1e-9)
    assert sum(exits) == pytest.approx(alpha, abs=5e-7)  # measured: 2e-7 at grid 6


def _pocock_type(t, alpha):
    """Lan-DeMets Pocock-type spending: spends early, boundaries nearly flat."""
    return alpha * math.log(1 + (math.e - 1) * min(max(t, 0.0), 1.0))


def test_a_supplied_spending_function_is_spent_exactly():
    fractions = [0.25, 0.4, 0.7, 1.0]
    bounds = boundaries(fractions, alpha=0.05, spending=_pocock_type)
    exits = [_exit_probability(bounds[:k], bounds[k], fractions) for k in range(len(bounds))]
    spend = np.diff([0.0, *(_pocock_type(t, 0.05) for t in fractions)])
    np.testing.assert_allclose(exits, spend, rtol=1e-4)
    assert bounds[0] < boundaries(fractions, alpha=0.05)[0] - 1.5  # far below OBF's early


def test_single_look_is_the_fixed_sample_test():
    assert boundaries([1.0]) == [pytest.approx(stats.norm.isf(ALPHA), abs=1e-12)]
    assert boundaries([0.4], alpha=0.05) == [pytest.approx(stats.norm.isf(obf_spending(0.4, 0.05)))]


def test_spent_alpha_is_tracked_and_all_of_it_goes_by_the_last_look():
    boundary = SpendingBoundary(ALPHA)
    for t in (0.3, 0.6):
        boundary.look(t)
        assert boundary.spent == pytest.approx(obf_spending(t), rel=1e-14)
    boundary.look(1.0)
    assert boundary.spent == ALPHA
    assert boundary.information_fraction == 1.0


def test_looks_without_new_information_return_inf_and_change_nothing():
    reference = boundaries([0.3, 0.6, 1.4])
    boundary = SpendingBoundary()
    got = [boundary.look(0.0), boundary.look(1e-4)]  # nothing to spend this early
    got.append(boundary.look(0.3))
    got.append(boundary.look(0.3))  # a repeated look
    got.append(boundary.look(0.6))
    got.append(boundary.look(0.6 - 1e-14))  # rounding noise is not a decrease
    got.append(boundary.look(1.4))  # past the maximum: spends the rest at t = 1.4
    got.append(boundary.look(1.4))
    got.append(boundary.look(2.0))  # everything spent
    assert got[:2] == [math.inf, math.inf]
    assert got[3] == got[5] == got[7] == got[8] == math.inf
    np.testing.assert_allclose([got[2], got[4], got[6]], reference, rtol=0, atol=1e-12)
    assert boundary.spent == ALPHA


def test_zero_increment_of_a_flat_spending_function_is_skipped_exactly():
    def flat_middle(t, alpha):  # spends nothing between 0.4 and 0.7
        return obf_spending(min(t, 0.4) if t < 0.7 else t, alpha)

    boundary = SpendingBoundary(spending=flat_middle)
    got = [boundary.look(t) for t in (0.2, 0.4, 0.55, 1.0)]
    assert got[2] == math.inf
    reference = boundaries([0.2, 0.4, 1.0], spending=flat_middle)
    np.testing.assert_allclose([got[0], got[1], got[3]], reference, atol=1e-12)


def test_decreasing_information_fraction_is_an_error():
    boundary = SpendingBoundary()
    boundary.look(0.5)
    with pytest.raises(ValueError):
        boundary.look(0.4)
    with pytest.raises(ValueError):
        boundary.look(float("nan"))
    with pytest.raises(ValueError):
        SpendingBoundary(alpha=0.6)


def test_boundaries_fall_over_looks_and_with_alpha():
    for k in range(2, 9):
        b = np.array(boundaries(np.arange(1, k + 1) / k))
        assert np.all(np.diff(b) < 0)
        assert b[-1] > stats.norm.isf(ALPHA)  # some alpha went on the interim looks
    fractions = [0.2, 0.45, 0.7, 1.0]
    lower = np.array(boundaries(fractions, alpha=0.05))
    upper = np.array(boundaries(fractions, alpha=0.01))
    assert np.all(lower < np.array(boundaries(fractions)))
    assert np.all(np.array(boundaries(fractions)) < upper)
    # More interim looks cost the final analysis some alpha.
    assert boundaries([0.5, 1.0])[-1] < boundaries([0.25, 0.5, 0.75, 1.0])[-1]


def test_many_close_looks_stay_accurate():
    """A hundred looks: the grid is refined as the transition kernel narrows."""
    fractions = np.linspace(0.01, 1.0, 100)
    coarse = np.array(boundaries(fractions))
    fine = np.array(boundaries(fractions, grid=48))
    finite = np.isfinite(fine)
    assert np.array_equal(finite, np.isfinite(coarse))
    assert np.max(np.abs(coarse[finite] - fine[finite])) < 1e-3


def test_copy_is_independent():
    boundary = SpendingBoundary()
    boundary.look(0.3)
    other = boundary.copy()
    a = boundary.look(0.8)
    b = other.look(0.6)
    assert a == pytest.approx(boundaries([0.3, 0.8])[-1], abs=1e-12)
    assert b == pytest.approx(boundaries([0.3, 0.6])[-1], abs=1e-12)
    assert other.look(1.0) == pytest.approx(boundaries([0.3, 0.6, 1.0])[-1], abs=1e-12)
    assert boundary.look(1.0) == pytest.approx(boundaries([0.3, 0.8, 1.0])[-1], abs=1e-12)


def test_pickled_boundary_continues_identically():
    boundary = SpendingBoundary(alpha=0.05)
    states = [pickle.loads(pickle.dumps(boundary))]
    for t in (0.25, 0.5):
        boundary.look(t)
        states.append(pickle.loads(pickle.dumps(boundary)))
    assert [s.look(0.5) for s in states[:2]] == [
        boundaries([0.5], 0.05)[0],
        boundaries([0.25, 0.5], 0.05)[1],
    ]
    rest = [boundary.look(0.75), boundary.look(1.0)]
    assert [states[-1].look(0.75), states[-1].look(1.0)] == rest


def _crossing_rate(bounds, fractions, n_paths, rng) -> tuple[int, int]:
    """Brownian motion under H0 observed at ``fractions``: paths with some Z_k >= b_k."""
    f = np.asarray(fractions)
    increments = rng.standard_normal((n_paths, f.size)) * np.sqrt(np.diff(f, prepend=0.0))
    z = np.cumsum(increments, axis=1) / np.sqrt(f)
    return int(np.any(z >= np.asarray(bounds), axis=1).sum()), n_paths


def test_monte_carlo_crossing_rate_is_alpha():
    rng = np.random.default_rng(20240611)
    fractions = [0.15, 0.4, 0.55, 0.9, 1.0]
    crossed, n = _crossing_rate(boundaries(fractions), fractions, 200_000, rng)
    assert abs(crossed / n - ALPHA) < 3 * math.sqrt(ALPHA * (1 - ALPHA) / n)


def test_monte_carlo_with_data_driven_schedules_branching_by_copy():
    """One boundary after a common first look, copied into 16 random continuations."""
    rng = np.random.default_rng(7)
    first = SpendingBoundary()
    b0 = first.look(0.3)
    crossed = total = 0
    for _ in range(16):
        later = np.sort(rng.uniform(0.3, 1.0, size=rng.integers(1, 5)))
        fractions = [0.3, *later.tolist(), 1.0]
        branch = first.copy()
        bounds = [b0, *(branch.look(t) for t in fractions[1:])]
        c, n = _crossing_rate(bounds, fractions, 2_500, rng)
        crossed, total = crossed + c, total + n
    assert abs(crossed / total - ALPHA) < 3 * math.sqrt(ALPHA * (1 - ALPHA) / total)


# ---------------------------------------------------------------------------- test statistic
def test_z_statistic_matches_statsmodels():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    rng = np.random.default_rng(3)
    for _ in range(50):
        n_arm, n_ctl = rng.integers(1, 120, size=2)
        x_arm, x_ctl = rng.integers(0, n_arm + 1), rng.integers(0, n_ctl + 1)
        if x_arm + x_ctl in (0, n_arm + n_ctl):
            continue
        expected, _ = proportion.proportions_ztest(
            [x_arm, x_ctl], [n_arm, n_ctl], alternative="larger"
        )
        assert z_statistic(x_arm, n_arm, x_ctl, n_ctl) == pytest.approx(expected, rel=1e-12)


def test_z_statistic_is_vectorised_signed_and_zero_when_undefined():
    z = z_statistic([12, 3, 0, 0, 20, 5], [20, 20, 0, 20, 20, 10], [6, 6, 6, 0, 20, 2], 20)
    assert z.shape == (6,)
    assert z[0] > 0 > z[1]
    assert z[0] == pytest.approx(-z_statistic(6, 20, 12, 20))
    np.testing.assert_array_equal(z[2:5], 0.0)  # empty arm; pooled rate 0; pooled rate 1
    assert z_statistic(5, 10, 0, 0) == 0.0
    assert z_statistic(0, 0, 0, 0) == 0.0
    assert isinstance(z_statistic(5, 10, 2, 10), float)


def test_information_is_the_harmonic_half():
    assert information(10, 10) == 5.0
    np.testing.assert_allclose(information([30, 0, 5], [10, 10, 0]), [7.5, 0.0, 0.0])
    # Inverse variance of the difference of rates, up to p(1 - p).
    assert information(30, 10) == pytest.approx(1 / (1 / 30 + 1 / 10))


# -------------------------------------------------------------------------------- posteriors
def _quad_prob_better(x_arm, n_arm, x_ctl, n_ctl, a0=1, b0=1) -> float:
    arm = stats.beta(x_arm + a0, n_arm - x_arm + b0)
    ctl = stats.beta(x_ctl + a0, n_ctl - x_ctl + b0)
    value, _ = integrate.quad(
        lambda p: arm.pdf(p) * ctl.cdf(p),
        0,
        1,
        epsabs=1e-14,
        epsrel=1e-12,
        limit=500,
        points=[arm.mean(), ctl.mean()],
    )
    return value


@pytest.mark.parametrize(
    "case",
    [
        (0, 0, 0, 0),
        (5, 10, 3, 10),
        (10, 10, 0, 10),
        (0, 10, 10, 10),
        (0, 0, 7, 9),
        (120, 200, 100, 200),
        (200, 200, 199, 200),
        (0, 200, 0, 200),
        (3, 50, 9, 50),
        (2, 7, 2, 7, 2, 3),
    ],
)
def test_prob_better_matches_numerical_integration(case):
    assert prob_better(*case) == pytest.approx(_quad_prob_better(*case), abs=1e-8)


def test_prob_better_is_vectorised_monotone_and_keeps_tiny_probabilities():
    p = prob_better([2, 5, 8], [10, 10, 10], 5, 10)
    assert p.shape == (3,)
    assert np.all(np.diff(p) > 0)
    assert prob_better(5, 10, 5, 10) == pytest.approx(0.5, abs=1e-14)
    assert prob_better(5, 10, 3, 10) == pytest.approx(1 - prob_better(3, 10, 5, 10), abs=1e-14)
    # Beta(1, 201) above Beta(201, 1): 201 B(202, 201) ~ 1e-120, kept to full relative
    # accuracy rather than rounded to zero.
    tiny = prob_better(0, 200, 200, 200)
    assert math.log(tiny) == pytest.approx(math.log(201) + betaln(202, 201), rel=1e-13)
    ints = prob_better(np.array([2, 5, 8]), np.array([10, 10, 10]), np.int64(5), 10)
    np.testing.assert_array_equal(ints, p)
    with pytest.raises(ValueError):
        prob_better(1, 2, 1, 2, a0=0.5)
    with pytest.raises(ValueError):
        prob_better(np.array([1.5]), 4, 1, 2)
    with pytest.raises(ValueError):
        prob_better(5, 4, 1, 2)  # more responders than patients


def test_prob_toxic_is_the_beta_survival_function():
    for ae, n, threshold in [(0, 0, 0.3), (3, 10, 0.2), (9, 30, 0.35), (0, 40, 0.1)]:
        expected = stats.beta(ae + 1, n - ae + 1).sf(threshold)
        assert prob_toxic(ae, n, threshold) == pytest.approx(expected, rel=1e-12)
        density = stats.beta(ae + 1, n - ae + 1).pdf
        assert prob_toxic(ae, n, threshold) == pytest.approx(
            integrate.quad(density, threshold, 1, epsabs=1e-13)[0], abs=1e-9
        )
    np.testing.assert_allclose(
        prob_toxic([1, 4, 8], 12, 0.3, a0=0.5, b0=0.5),
        stats.beta.sf(0.3, np.array([1, 4, 8]) + 0.5, 12 - np.array([1, 4, 8]) + 0.5),
        rtol=1e-12,
    )
    assert np.all(np.diff(prob_toxic(np.arange(11), 10, 0.3)) > 0)


def test_safety_stop_needs_min_n_and_a_confident_posterior():
    # 6 adverse events in 9 patients is alarming, but below min_n = 10.
    assert prob_toxic(6, 9, 0.3) > 0.9
    stop = safety_stop([6, 7, 2, 7], [9, 10, 10, 10], 0.3)
    np.testing.assert_array_equal(stop, [False, True, False, True])
    assert safety_stop(6, 9, 0.3, min_n=5)
    assert not safety_stop(7, 10, 0.3, prob=0.999)
    assert stop.dtype == bool


# ------------------------------------------------------------------------ predictive power
def _quad_predictive(z, t, c) -> float:
    """Flat prior on the drift: posterior from the B-value likelihood, numerically."""
    b = z * math.sqrt(t)

    def likelihood(theta):
        return stats.norm.pdf(b, theta * t, math.sqrt(t))

    def conditional_power(theta):
        return stats.norm.sf(c, b + theta * (1 - t), math.sqrt(1 - t))

    lo, hi = b / t - 12 / math.sqrt(t), b / t + 12 / math.sqrt(t)
    num = integrate.quad(
        lambda th: likelihood(th) * conditional_power(th), lo, hi, epsabs=1e-13, limit=200
    )[0]
    return num / integrate.quad(likelihood, lo, hi, epsabs=1e-13, limit=200)[0]


@pytest.mark.parametrize(
    "z,t,c",
    [(1.5, 0.5, 1.96), (0.2, 0.3, 2.03), (-1.0, 0.8, 1.96), (3.0, 0.1, 2.5), (2.2, 0.95, 2.0)],
)
def test_predictive_probability_matches_numerical_integration(z, t, c):
    assert predictive_probability(z, t, c) == pytest.approx(_quad_predictive(z, t, c), abs=1e-8)


def test_predictive_probability_edges_and_monotonicity():
    assert predictive_probability(2.5, 0.0, 1.96) == 0.5
    assert predictive_probability(2.0, 1.0, 1.96) == 1.0
    assert predictive_probability(1.9, 1.2, 1.96) == 0.0
    pp = predictive_probability(np.linspace(-2, 4, 25), 0.5, 1.96)
    assert pp.shape == (25,)
    assert np.all(np.diff(pp) > 0)
    # The estimated drift leads the B-value exactly to c: a coin flip.
    assert predictive_probability(1.96 * math.sqrt(0.4), 0.4, 1.96) == pytest.approx(0.5)


def test_the_plain_python_predictive_probabilities_equal_the_array_function():
    rng = np.random.default_rng(3)
    z = rng.normal(0.0, 2.0, 5000)
    t = np.concatenate([rng.random(4995), [0.0, 1.0, 1.0, 0.5, 1e-12]])
    z[-3] = -1.0  # z below c at t = 1: exactly 0
    expected = predictive_probability(z, t, 2.3940)
    got = predictive_probabilities(z.tolist(), t.tolist(), 2.3940)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    assert got[-4] == 1.0 or z[-4] < 2.394 and got[-4] == 0.0
    assert got[-5] == 0.5
