"""Report statistics against statsmodels and rliable on the same inputs: Holm, power and
seeds needed, Wilcoxon, the aggregates and rliable's probability of improvement.

Both are test dependencies (the ``test`` extra); rliable's definitions are those of
Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice",
arXiv:2108.13264.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from clinbench import stats as cs

SEEDS = [0, 1, 2, 3, 4]


statsmodels_power = pytest.importorskip("statsmodels.stats.power")
multitest = pytest.importorskip("statsmodels.stats.multitest")
rliable = pytest.importorskip("rliable.metrics")


@pytest.mark.parametrize("seed", SEEDS)
def test_holm_equals_statsmodels(seed):
    p = np.random.default_rng(40 + seed).random(6 + seed) ** 3
    _, expected, _, _ = multitest.multipletests(p, alpha=0.05, method="holm")
    np.testing.assert_allclose(cs.holm(p), expected, rtol=1e-12)
    np.testing.assert_array_equal(
        cs.holm_reject(p, 0.05), multitest.multipletests(p, 0.05, "holm")[0]
    )


def sm_paired_power(d: float, n: int, alpha: float) -> float:
    """statsmodels' paired power; where it is NaN (its noncentral t lower tail fails for a
    large noncentrality) the upper tail alone, which is then the whole power."""
    value = statsmodels_power.TTestPower().power(
        effect_size=d, nobs=n, alpha=alpha, alternative="two-sided"
    )
    if math.isnan(value):
        value = sps.nct.sf(sps.t.isf(alpha / 2, n - 1), n - 1, d * math.sqrt(n))
    return float(value)


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 15])
def test_power_equals_statsmodels(n, alpha):
    paired, independent = statsmodels_power.TTestPower(), statsmodels_power.TTestIndPower()
    for d in (0.5, 1.3, 2.5):
        assert cs.paired_power(d, n, alpha) == pytest.approx(
            paired.power(effect_size=d, nobs=n, alpha=alpha, alternative="two-sided"), rel=1e-6
        )
        assert cs.two_sample_power(d, n, alpha) == pytest.approx(
            independent.power(
                effect_size=d, nobs1=n, ratio=1.0, alpha=alpha, alternative="two-sided"
            ),
            rel=1e-6,
        )
    # statsmodels' own root search does not converge at n = 3 and alpha / 15 (it returns a
    # fallback), so its power function is the oracle: the effect found has power 0.8 there
    dz = cs.paired_minimum_detectable_effect(n, alpha)
    assert sm_paired_power(dz, n, alpha) == pytest.approx(0.8, abs=1e-6)
    d = cs.minimum_detectable_effect(n, alpha)
    assert independent.power(effect_size=d, nobs1=n, ratio=1.0, alpha=alpha) == pytest.approx(
        0.8, abs=1e-6
    )
    if alpha == 0.05:
        assert dz == pytest.approx(paired.solve_power(nobs=n, alpha=alpha, power=0.8), rel=1e-5)


@pytest.mark.parametrize("d", [0.6, 1.5, 3.0])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 15])
def test_seeds_needed_equal_statsmodels_rounded_up(d, alpha):
    paired, independent = statsmodels_power.TTestPower(), statsmodels_power.TTestIndPower()
    n_paired = paired.solve_power(effect_size=d, alpha=alpha, power=0.8, alternative="two-sided")
    n_ind = independent.solve_power(
        effect_size=d, alpha=alpha, power=0.8, ratio=1.0, alternative="two-sided"
    )
    assert cs.paired_seeds_needed(d, alpha) == max(2, math.ceil(n_paired - 1e-9))
    assert cs.seeds_needed(d, alpha) == max(2, math.ceil(n_ind - 1e-9))


@pytest.mark.parametrize("seed", SEEDS)
def test_wilcoxon_equals_scipy(seed):
    rng = np.random.default_rng(60 + seed)
    x = rng.random(15)
    y = x + rng.normal(0.05, 0.1, size=15)
    if seed % 2:
        y[:3] = x[:3]  # zero differences, dropped as scipy does by default
    ref = sps.wilcoxon(x, y)
    ours = cs.wilcoxon(x, y)
    assert ours["statistic"] == ref.statistic and ours["p"] == pytest.approx(ref.pvalue, rel=1e-12)
    assert cs.wilcoxon(x, x.copy())["p"] == 1.0


def _runs_by_task(seed: int, runs: int = 5, tasks: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(rng.random((runs, tasks)), 1)  # [run, task], rounded for ties


@pytest.mark.parametrize("seed", SEEDS)
def test_aggregates_equal_rliable(seed):
    scores = _runs_by_task(seed)
    assert cs.iqm(scores) == pytest.approx(rliable.aggregate_iqm(scores), rel=1e-12)
    assert cs.optimality_gap(scores) == pytest.approx(
        rliable.aggregate_optimality_gap(scores), rel=1e-12
    )
    assert cs.aggregate_median(scores) == pytest.approx(rliable.aggregate_median(scores), rel=1e-12)
    assert cs.aggregate_mean(scores) == pytest.approx(rliable.aggregate_mean(scores), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_aggregate_probability_of_improvement_equals_rliable(seed):
    x, y = _runs_by_task(seed), _runs_by_task(seed + 100)
    expected = rliable.probability_of_improvement(x, y)
    assert cs.mean_probability_of_improvement(list(x.T), list(y.T)) == pytest.approx(
        expected, rel=1e-12
    )
    est, lo, hi = cs.aggregate_probability_of_improvement_ci(list(x.T), list(y.T), rng=3, reps=500)
    assert est == pytest.approx(expected, rel=1e-12) and lo <= est <= hi


def test_aggregate_probability_of_improvement_is_not_that_of_per_seed_means():
    # [run, task]; per task 0.75 and 0.5 -> 0.625, while per-seed means give 0.5
    x = np.array([[1.0, 10.0], [2.0, 20.0]])
    y = np.array([[1.5, 5.0], [0.0, 30.0]])
    assert cs.mean_probability_of_improvement(list(x.T), list(y.T)) == 0.625
    assert rliable.probability_of_improvement(x, y) == 0.625
    assert cs.probability_of_improvement(x.mean(axis=1), y.mean(axis=1)) == 0.5


def test_aggregate_probability_of_improvement_ci_matches_hand_resample():
    x, y = _runs_by_task(7), _runs_by_task(8)
    _, lo, hi = cs.aggregate_probability_of_improvement_ci(list(x.T), list(y.T), rng=5, reps=300)
    gen = np.random.default_rng(5)
    draws = []
    for t in range(3):
        draws.append((gen.integers(0, 5, size=(300, 5)), gen.integers(0, 5, size=(300, 5))))
    reps = [
        np.mean(
            [
                cs.probability_of_improvement(x[ix[r], t], y[iy[r], t])
                for t, (ix, iy) in enumerate(draws)
            ]
        )
        for r in range(300)
    ]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), rel=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 15), (1, 15), (3, 188), (57, 4000), (20, 20), (7, 9)])
def test_clopper_pearson_equals_statsmodels(k, n):
    from statsmodels.stats.proportion import proportion_confint

    value, lo, hi = cs.clopper_pearson(k, n)
    ref_lo, ref_hi = proportion_confint(k, n, alpha=0.05, method="beta")
    assert value == k / n
    assert (lo, hi) == pytest.approx((ref_lo, ref_hi), abs=1e-12)


def test_clopper_pearson_has_no_interval_without_trials_and_refuses_bad_counts():
    assert all(math.isnan(v) for v in cs.clopper_pearson(0, 0))
    for k, n in ((3, 2), (-1, 5), (True, 5)):
        with pytest.raises(ValueError):
            cs.clopper_pearson(k, n)
