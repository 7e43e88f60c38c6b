"""Report statistics against statsmodels and rliable on the same inputs: Holm, power and
seeds needed, Wilcoxon, the aggregates and rliable's probability of improvement, the
equivalence test (TOST) and the family x pair interaction test.

Both are test dependencies (the ``test`` extra); rliable's definitions are those of
Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice",
arXiv:2108.13264.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from shared_helpers import rliable_library

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


# --------------------------------------------------------------------------- TOST, interaction
weightstats = pytest.importorskip("statsmodels.stats.weightstats")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("margin", [0.02, 0.05, 0.3])
def test_tost_paired_equals_statsmodels_ttost_paired(seed, margin):
    rng = np.random.default_rng(80 + seed)
    x = rng.normal(0.5, 0.1, 5 + seed)
    y = x + rng.normal(0.01 * seed, 0.03, x.size)
    ours = cs.tost_paired(x, y, margin)
    p, lower, upper = weightstats.ttost_paired(x, y, -margin, margin)
    assert ours["p"] == pytest.approx(p, rel=1e-12)
    assert (ours["t_lower"], ours["p_lower"], ours["df"]) == pytest.approx(lower, rel=1e-12)
    assert (ours["t_upper"], ours["p_upper"], ours["df"]) == pytest.approx(upper, rel=1e-12)
    assert cs.equivalent_at(ours, 0.05) == (p <= 0.05)


@pytest.mark.parametrize("seed", SEEDS)
def test_tost_welch_equals_statsmodels_ttost_ind_unequal(seed):
    rng = np.random.default_rng(90 + seed)
    x, y = rng.normal(0.5, 0.05, 6), rng.normal(0.52, 0.15, 4 + seed)
    ours = cs.tost_welch(x, y, 0.1)
    p, lower, upper = weightstats.ttost_ind(x, y, -0.1, 0.1, usevar="unequal")
    assert ours["p"] == pytest.approx(p, rel=1e-12)
    assert (ours["p_lower"], ours["p_upper"]) == pytest.approx((lower[1], upper[1]), rel=1e-12)


def test_tost_degenerate_inputs_follow_the_t_tests():
    x = np.array([0.3, 0.5, 0.4, 0.6, 0.2])
    identical = cs.tost_paired(x, x + 1e-13, 0.05)  # equal up to rounding: level
    assert identical["identical"] and identical["p"] == 0.0 and cs.equivalent_at(identical, 0.05)
    shifted = cs.tost_paired(x, x - 0.01, 0.05)  # a constant non-zero difference: no SE
    assert not shifted["testable"] and math.isnan(shifted["p"])
    assert not cs.equivalent_at(shifted, 0.05)
    with pytest.raises(ValueError):
        cs.tost_paired(x, x, 0.0)


def test_repeated_measures_f_equals_statsmodels_anova_rm():
    import pandas as pd
    from statsmodels.stats.anova import AnovaRM

    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        d = rng.normal(0, 1, (5 + seed, 3)) + np.array([0.0, 0.4, -0.2])
        ours = cs.repeated_measures_f(d)
        frame = pd.DataFrame(
            [(s, c, d[s, c]) for s in range(d.shape[0]) for c in range(d.shape[1])],
            columns=["seed", "family", "diff"],
        )
        table = AnovaRM(frame, "diff", "seed", within=["family"]).fit().anova_table
        assert ours["f"] == pytest.approx(table["F Value"].iloc[0], rel=1e-10)
        assert ours["p"] == pytest.approx(table["Pr > F"].iloc[0], rel=1e-10)
        assert (ours["df_num"], ours["df_den"]) == (
            table["Num DF"].iloc[0],
            table["Den DF"].iloc[0],
        )
        # with two families it is the paired t-test of the two families' differences
        two = cs.repeated_measures_f(d[:, :2])
        assert two["p"] == pytest.approx(sps.ttest_rel(d[:, 0], d[:, 1]).pvalue, rel=1e-10)


def test_repeated_measures_f_without_residual_spread():
    d = np.array([[0.1, 0.1], [0.3, 0.3], [0.2, 0.2]])
    assert cs.repeated_measures_f(d)["p"] == 1.0  # no interaction at all
    shifted = cs.repeated_measures_f(d + np.array([0.0, 0.2]))
    assert not shifted["testable"] and math.isnan(shifted["p"])


# --------------------------------------------------------------------------- rliable.library
_rliable_library = rliable_library


def test_rliable_library_imports_and_agrees_on_the_point_estimates():
    library = _rliable_library()
    scores = {"a": _runs_by_task(1), "b": _runs_by_task(2)}
    point, _ = library.get_interval_estimates(
        scores,
        lambda x: np.array([rliable.aggregate_mean(x), rliable.aggregate_iqm(x)]),
        reps=50,
    )
    for name, runs in scores.items():
        assert point[name][0] == pytest.approx(cs.aggregate_mean(runs), rel=1e-12)
        assert point[name][1] == pytest.approx(cs.iqm(runs), rel=1e-12)
