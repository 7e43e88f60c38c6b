"""Report statistics: tests and intervals against scipy and hand computations, aggregates
against rliable's published definitions, power against known sample sizes, Nemenyi
against Demšar's table, and the bootstraps' determinism and stratification."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from clinbench import stats as cs
from clinbench.stats import aggregate

SEEDS = [0, 1, 2, 3, 4]


def _pair(seed: int):
    """Two samples of different sizes, means and spreads; some draws are rounded to make ties."""
    rng = np.random.default_rng(seed)
    n, m = rng.integers(4, 12, size=2)
    x = rng.normal(0.6, 0.1, size=n)
    y = rng.normal(0.5, 0.3, size=m)
    if seed % 2:
        x, y = np.round(x, 1), np.round(y, 1)
    return x, y


# --- intervals -------------------------------------------------------------------------


def test_t_interval_matches_textbook_quantile():
    # n = 5: t_{4, 0.975} = 2.776 (any t table); mean 3, sd sqrt(2.5)
    m, lo, hi = cs.t_interval([1, 2, 3, 4, 5])
    half = 2.776 * math.sqrt(2.5) / math.sqrt(5)
    assert m == 3.0
    assert lo == pytest.approx(3 - half, abs=1e-3)
    assert hi == pytest.approx(3 + half, abs=1e-3)


def test_t_interval_single_value_has_no_interval():
    m, lo, hi = cs.t_interval([0.4])
    assert m == 0.4 and math.isnan(lo) and math.isnan(hi)


def test_summary_quartiles_and_interval():
    s = cs.summary([5, 1, 4, 2, 3])
    assert (s["n"], s["mean"], s["median"], s["q25"], s["q75"], s["iqr"]) == (5, 3, 3, 2, 4, 2)
    assert s["sd"] == pytest.approx(math.sqrt(2.5))
    assert (s["lo"], s["hi"]) == pytest.approx(cs.t_interval([1, 2, 3, 4, 5])[1:])


@pytest.mark.parametrize("bad", [[], [1.0, np.nan], [[1.0, 2.0]]])
def test_samples_are_validated(bad):
    with pytest.raises(ValueError):
        cs.t_interval(bad)


# --- two-sample tests --------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_welch_equals_scipy_and_hand_interval(seed):
    x, y = _pair(seed)
    ours = cs.welch(x, y)
    ref = sps.ttest_ind(x, y, equal_var=False)
    assert ours["t"] == pytest.approx(ref.statistic, rel=1e-12)
    assert ours["p"] == pytest.approx(ref.pvalue, rel=1e-12)

    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    half = sps.t.ppf(0.975, df) * math.sqrt(vx + vy)
    diff = x.mean() - y.mean()
    assert ours["df"] == pytest.approx(df, rel=1e-12)
    assert ours["diff"] == pytest.approx(diff, rel=1e-12)
    assert (ours["lo"], ours["hi"]) == pytest.approx((diff - half, diff + half), rel=1e-10)
    ci = ref.confidence_interval()
    assert (ours["lo"], ours["hi"]) == pytest.approx((ci.low, ci.high), rel=1e-12)


def test_welch_interval_follows_confidence():
    x, y = _pair(0)
    narrow, wide = cs.welch(x, y, confidence=0.8), cs.welch(x, y, confidence=0.99)
    assert wide["lo"] < narrow["lo"] < narrow["diff"] < narrow["hi"] < wide["hi"]


@pytest.mark.parametrize("seed", SEEDS)
def test_paired_equals_scipy_and_hand_interval(seed):
    rng = np.random.default_rng(100 + seed)
    x = rng.normal(0.6, 0.2, size=5 + seed)
    y = x - rng.normal(0.05, 0.1, size=x.size)
    ours = cs.paired(x, y)
    ref = sps.ttest_rel(x, y)
    assert ours["t"] == pytest.approx(ref.statistic, rel=1e-12)
    assert ours["p"] == pytest.approx(ref.pvalue, rel=1e-12)
    assert ours["df"] == x.size - 1

    d = x - y
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert ours["diff"] == pytest.approx(d.mean(), rel=1e-12)
    assert (ours["lo"], ours["hi"]) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-10)


def _constants_with_rounding_noise():
    """Two constant samples; 0.7 + 0.2 is not exactly 0.9, so y's float variance is not 0."""
    x, y = np.full(5, 0.7), np.full(5, 0.7 + 0.2)
    assert np.var(y, ddof=1) > 0  # the case the test is about: spread is only rounding noise
    return x, y


def test_welch_constant_different_samples_are_not_testable():
    # scipy puts a placeholder df = 1 when both variances are 0, and turns rounding noise
    # into t ~ 1e15 and p = 0 otherwise; two constant agents 0.001 apart are not testable
    x, y = _constants_with_rounding_noise()
    for a, b in ((x, y), (y, x), (np.zeros(3), np.ones(4)), (np.full(5, 0.5), np.full(5, 0.501))):
        res = cs.welch(a, b)
        assert res["testable"] is False
        assert all(math.isnan(res[k]) for k in ("t", "p", "df", "lo", "hi"))
        assert res["diff"] == pytest.approx(a[0] - b[0])


def test_welch_equal_constants_give_p_one():
    _, y = _constants_with_rounding_noise()
    same = cs.welch(y, y.copy())
    assert same["testable"] is True and same["p"] == 1.0
    assert same["diff"] == same["lo"] == same["hi"] == 0.0 and math.isnan(same["t"])


def test_paired_constant_difference_is_not_testable_while_welch_is():
    # every difference is the same: the paired t is 0 / 0 (scipy: p < 0.0001), Welch is fine
    x = np.array([0.2, 0.5, 0.9, 0.4, 0.7])
    y = x - 0.25
    assert len(set(x - y)) == 1
    res = cs.paired(x, y)
    assert res["testable"] is False and math.isnan(res["p"]) and res["df"] == 4
    assert res["diff"] == pytest.approx(0.25)
    assert cs.welch(x, y)["p"] == pytest.approx(
        sps.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-12
    )
    same = cs.paired(x, x.copy())
    assert same["testable"] and same["p"] == 1.0 and same["diff"] == 0.0


def test_paired_refuses_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        cs.paired([1.0, 2.0, 3.0], [1.0, 2.0])


@pytest.mark.parametrize("seed", SEEDS)
def test_mann_whitney_equals_scipy(seed):
    x, y = _pair(seed)
    ours = cs.mann_whitney(x, y)
    ref = sps.mannwhitneyu(x, y, alternative="two-sided")
    assert ours["u"] == ref.statistic
    assert ours["p"] == pytest.approx(ref.pvalue, rel=1e-12)


# --- effect sizes ------------------------------------------------------------------------


def test_hedges_g_hand_case():
    x, y = [1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 6.0]
    sp = math.sqrt((3 * np.var(x, ddof=1) + 3 * np.var(y, ddof=1)) / 6)
    d = (2.5 - 3.75) / sp
    j_exact = math.gamma(3) / (math.sqrt(3) * math.gamma(2.5))
    res = cs.hedges_g(x, y)
    assert res["value"] == pytest.approx(j_exact * d, rel=1e-12)
    assert res["value"] == pytest.approx(
        (1 - 3 / (4 * 6 - 1)) * d, rel=2e-3
    )  # Hedges' approximation
    # the interval of delta inverts the noncentral t of the pooled t = d sqrt(nm / (n + m))
    t, scale = sps.ttest_ind(x, y).statistic, math.sqrt(16 / 8)
    assert t == pytest.approx(d * scale, rel=1e-12)
    assert res["method"] == "noncentral t (pooled variance)"
    assert sps.nct.sf(t, 6, res["lo"] * scale) == pytest.approx(0.025, abs=1e-9)
    assert sps.nct.cdf(t, 6, res["hi"] * scale) == pytest.approx(0.025, abs=1e-9)


def test_hedges_g_undefined_for_constant_samples():
    res = cs.hedges_g([0.5, 0.5, 0.5], [0.5, 0.5])
    assert all(math.isnan(res[k]) for k in ("value", "lo", "hi")) and res["method"] is None


def test_hedges_g_undefined_for_constant_samples_despite_rounding_noise():
    # s_p is only rounding noise here; dividing by it gave g of order 1e15
    x, y = _constants_with_rounding_noise()
    for a, b in ((x, y), (y, y.copy())):
        res = cs.hedges_g(a, b)
        assert all(math.isnan(res[k]) for k in ("value", "lo", "hi")), res


@pytest.mark.parametrize("seed", SEEDS)
def test_cohens_dz_is_the_paired_t_over_sqrt_n_with_an_exact_interval(seed):
    rng = np.random.default_rng(200 + seed)
    x = rng.normal(0.6, 0.2, size=4 + seed)
    y = x - rng.normal(0.08, 0.1, size=x.size)
    res = cs.cohens_dz(x, y)
    d = x - y
    t = sps.ttest_rel(x, y).statistic
    assert res["value"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    assert res["value"] * math.sqrt(d.size) == pytest.approx(t, rel=1e-12)
    n, df = d.size, d.size - 1
    assert sps.nct.sf(t, df, res["lo"] * math.sqrt(n)) == pytest.approx(0.025, abs=1e-9)
    assert sps.nct.cdf(t, df, res["hi"] * math.sqrt(n)) == pytest.approx(0.025, abs=1e-9)
    assert res["lo"] < res["value"] < res["hi"]


def test_cohens_dz_undefined_for_a_constant_difference():
    x = np.array([0.1, 0.4, 0.3])
    res = cs.cohens_dz(x, x - 0.2)
    assert all(math.isnan(res[k]) for k in ("value", "lo", "hi"))


def test_noncentrality_interval_covers_at_its_nominal_rate():
    # paired design, n = 5, true delta_z = 1: the exact interval covers 95 % (MC se 0.3 %)
    rng = np.random.default_rng(31)
    n, delta, trials = 5, 1.0, 5000
    d = rng.normal(delta, 1.0, size=(trials, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    covered = 0
    for ti in t:
        lo, hi = cs.noncentrality_interval(float(ti), n - 1)
        covered += lo <= delta * math.sqrt(n) <= hi
    assert covered / trials == pytest.approx(0.95, abs=0.01)


def test_noncentrality_interval_is_symmetric_and_holds_at_large_t():
    lo, hi = cs.noncentrality_interval(3.0, 4)
    assert cs.noncentrality_interval(-3.0, 4) == pytest.approx((-hi, -lo))
    assert cs.noncentrality_interval(0.0, 4) == pytest.approx((-1.959964, 1.959964), abs=1e-6)
    for t in (8.0, 50.0, 1000.0):  # scipy's nct.cdf is NaN around some of these; sf is not
        lo, hi = cs.noncentrality_interval(t, 4)
        assert lo < t < hi and sps.nct.sf(t, 4, lo) == pytest.approx(0.025, abs=1e-8)
    with pytest.raises(ArithmeticError):  # beyond the range where scipy's nct is exact
        cs.noncentrality_interval(1e4, 4)


def test_effect_sizes_fall_back_to_the_normal_interval_beyond_exact_t():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = x - 0.5 - np.array([0.0, 1e-4, 0.0, -1e-4, 0.0])  # t ~ 1e4
    res = cs.cohens_dz(x, y)
    assert res["method"] == "normal approximation"
    half = 1.959964 * math.sqrt(1 / 5 + res["value"] ** 2 / 10)
    assert (res["lo"], res["hi"]) == pytest.approx(
        (res["value"] - half, res["value"] + half), rel=1e-6
    )


def test_probability_of_improvement_counts_ties_half():
    # pairs: 1>2 no, 1>0 yes, 2=2 tie, 2>0 yes -> (2 + 0.5) / 4
    assert cs.probability_of_improvement([1.0, 2.0], [2.0, 0.0]) == 0.625
    assert cs.probability_of_improvement([3.0, 3.0], [3.0]) == 0.5
    assert cs.probability_of_improvement([1.0, 2.0], [0.0]) == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_probability_of_improvement_is_u_over_nm(seed):
    x, y = _pair(seed)
    u = sps.mannwhitneyu(x, y).statistic
    assert cs.probability_of_improvement(x, y) == pytest.approx(u / (x.size * y.size), rel=1e-12)
    both_ways = cs.probability_of_improvement(x, y) + cs.probability_of_improvement(y, x)
    assert both_ways == pytest.approx(1)


def test_mean_probability_of_improvement_averages_tasks():
    assert cs.mean_probability_of_improvement([[1.0, 2.0], [5.0]], [[2.0, 0.0], [6.0]]) == 0.3125


def test_probability_of_improvement_ci_matches_hand_resample_and_seed():
    x, y = _pair(1)
    est, lo, hi = cs.probability_of_improvement_ci(x, y, rng=7, reps=400)
    assert (est, lo, hi) == cs.probability_of_improvement_ci(x, y, np.random.default_rng(7), 400)

    gen = np.random.default_rng(7)
    ix = gen.integers(0, x.size, size=(400, x.size))
    iy = gen.integers(0, y.size, size=(400, y.size))
    reps = [cs.probability_of_improvement(x[a], y[b]) for a, b in zip(ix, iy)]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), rel=1e-12)
    assert est == cs.probability_of_improvement(x, y)
    assert lo <= est <= hi


# --- aggregates --------------------------------------------------------------------------


def test_iqm_of_eight_values_is_mean_of_middle_four():
    scores = np.array([[0.9, 0.1], [0.3, 5.0], [0.4, 0.2], [0.6, -1.0]])  # [run, task]
    middle = np.sort(scores.ravel())[2:6]
    assert aggregate.iqm(scores) == pytest.approx(middle.mean())
    assert aggregate.iqm([scores[:, 0], scores[:, 1]]) == pytest.approx(middle.mean())


def test_iqm_pools_unequal_run_counts():
    # 12 pooled values: trim 3 at each end -> mean of the middle 6
    tasks = [np.arange(1.0, 6.0), np.arange(10.0, 17.0)]
    pooled = np.sort(np.concatenate(tasks))
    assert aggregate.iqm(tasks) == pytest.approx(pooled[3:9].mean())


def test_optimality_gap_gives_no_credit_above_reference():
    # max(0, 1 - s) = 0.5, 0, 0.1, 0
    assert aggregate.optimality_gap([[0.5, 1.2], [0.9, 1.0]]) == pytest.approx(0.15)
    assert aggregate.optimality_gap([[3.0, 2.0]]) == 0.0


def test_mean_and_median_are_over_task_means():
    tasks = [np.array([0.0, 1.0]), np.array([0.2, 0.2, 0.2, 0.2]), np.array([3.0])]
    # task means 0.5, 0.2, 3.0 (pooled mean would be 0.571...)
    assert aggregate.mean(tasks) == pytest.approx((0.5 + 0.2 + 3.0) / 3)
    assert aggregate.median(tasks) == pytest.approx(0.5)
    matrix = np.random.default_rng(0).random((5, 3))
    assert aggregate.mean(matrix) == pytest.approx(matrix.mean())
    assert aggregate.median(matrix) == pytest.approx(np.median(matrix.mean(axis=0)))


def _scales_apart():
    """Two tasks on very different scales: any mixing across tasks would show at once."""
    rng = np.random.default_rng(11)
    return [rng.normal(1.0, 0.2, size=5), rng.normal(1000.0, 50.0, size=4)]


def test_stratified_bootstrap_deterministic_by_seed():
    tasks = _scales_apart()
    a = cs.stratified_bootstrap(tasks, cs.iqm, rng=3, reps=2000)
    b = cs.stratified_bootstrap(tasks, cs.iqm, rng=np.random.default_rng(3), reps=2000)
    c = cs.stratified_bootstrap(tasks, cs.iqm, rng=4, reps=2000)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_stratified_bootstrap_matches_hand_built_resample():
    tasks = _scales_apart()
    got = cs.stratified_bootstrap(tasks, cs.aggregate_mean, rng=5, reps=300)
    gen = np.random.default_rng(5)
    draws = [gen.integers(0, t.size, size=(300, t.size)) for t in tasks]
    want = [np.mean([t[d[r]].mean() for t, d in zip(tasks, draws)]) for r in range(300)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_stratified_bootstrap_never_mixes_tasks():
    tasks = _scales_apart()
    first_task_only = cs.stratified_bootstrap(tasks, lambda t: t[0].mean(axis=-1), rng=0, reps=5000)
    assert tasks[0].min() <= first_task_only.min() and first_task_only.max() <= tasks[0].max()


@pytest.mark.parametrize("name", sorted(aggregate.AGGREGATES))
def test_stratified_ci_contains_point_estimate(name):
    scores = np.random.default_rng(8).normal(0.7, 0.2, size=(5, 3))
    stat = aggregate.AGGREGATES[name]
    est, lo, hi = cs.stratified_bootstrap_ci(scores, stat, rng=1, reps=5000)
    assert est == pytest.approx(stat(scores))
    assert lo <= est <= hi and lo < hi


def test_stratified_bootstrap_gives_one_value_per_default_replicate():
    scores = np.random.default_rng(9).random((5, 3))
    out = cs.stratified_bootstrap(scores, cs.iqm, rng=0)
    assert out.shape == (50_000,)
    assert np.all((out >= scores.min()) & (out <= scores.max()))


def test_bootstrap_refuses_none_rng_and_scalar_statistics():
    scores = np.ones((3, 2))
    with pytest.raises(TypeError):
        cs.stratified_bootstrap(scores, cs.iqm, rng=None, reps=10)
    with pytest.raises(ValueError, match="one value per replicate"):
        cs.stratified_bootstrap(scores, lambda t: float(np.mean(t[0])), rng=0, reps=10)


# --- multiple comparisons ----------------------------------------------------------------


def test_holm_hand_family():
    # sorted 0.005*4, 0.01*3, 0.03*2, 0.04*1 -> running max 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(cs.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # Holm-Šidák would give 1 - 0.995**4 = 0.0199 for the smallest
    assert cs.holm([0.005, 0.9, 0.9, 0.9])[0] == pytest.approx(0.02, abs=1e-15)


def test_holm_is_monotone_capped_and_at_least_raw():
    p = np.random.default_rng(2).random(12) ** 2
    adj = cs.holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p) and np.all(adj <= 1)
    np.testing.assert_array_equal(cs.holm([0.5, 0.6]), [1.0, 1.0])
    assert cs.holm([]).size == 0


def test_holm_reject_is_the_step_down_procedure():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2])
    m, reject = p.size, np.zeros(p.size, dtype=bool)
    for i, k in enumerate(np.argsort(p)):
        if p[k] > 0.05 / (m - i):
            break
        reject[k] = True
    np.testing.assert_array_equal(cs.holm_reject(p, 0.05), reject)
    assert reject.tolist() == [True, False, False, True, False]


def test_holm_refuses_invalid_pvalues():
    with pytest.raises(ValueError):
        cs.holm([0.1, np.nan])


# --- ranking -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_friedman_equals_scipy(seed):
    scores = np.random.default_rng(seed).random((15, 3 + seed % 3))
    ours = cs.friedman(scores)
    ref = sps.friedmanchisquare(*scores.T)
    assert ours["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    assert ours["p"] == pytest.approx(ref.pvalue, rel=1e-12)


def test_friedman_needs_three_agents():
    with pytest.raises(ValueError, match="at least 3"):
        cs.friedman(np.ones((5, 2)))


def test_friedman_all_ties_is_nan_without_warning():
    # every block a complete tie: the statistic is 0 / 0 (R's friedman.test also gives NaN)
    scores = np.full((6, 3), 0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = cs.friedman(scores)
    assert math.isnan(res["statistic"]) and math.isnan(res["p"])
    np.testing.assert_array_equal(cs.average_ranks(scores), [2.0, 2.0, 2.0])
    # one untied block is enough for a statistic
    scores[0] = [0.1, 0.2, 0.3]
    ref = sps.friedmanchisquare(*scores.T)
    assert cs.friedman(scores)["statistic"] == pytest.approx(ref.statistic)


def test_average_ranks_best_is_one_and_ties_share():
    # block 1: ranks 1, 2, 3; block 2: agent 3 best, agents 1 and 2 tie for 2.5
    np.testing.assert_allclose(cs.average_ranks([[3, 2, 1], [1, 1, 2]]), [1.75, 2.25, 2.0])


@pytest.mark.parametrize("k,q", [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850)])
def test_nemenyi_q_matches_demsar_table(k, q):
    # the table is printed to three decimals (2.3437 appears as 2.343)
    assert cs.nemenyi_q(k) == pytest.approx(q, abs=1e-3)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1])
def test_nemenyi_refuses_alpha_outside_unit_interval(alpha):
    with pytest.raises(ValueError, match="alpha"):
        cs.nemenyi_cd(3, 10, alpha)


def test_nemenyi_cd_demsar_worked_example():
    # Demšar (2006): four classifiers on 14 data sets, CD = 2.569 sqrt(4*5 / (6*14)) = 1.25
    assert cs.nemenyi_cd(4, 14) == pytest.approx(1.25, abs=5e-3)


# --- power -------------------------------------------------------------------------------


@pytest.mark.parametrize("d,n", [(1.0, 17), (0.5, 64)])
def test_seeds_needed_known_values(d, n):
    assert cs.seeds_needed(d) == n
    assert cs.two_sample_power(d, n - 1) < 0.8 <= cs.two_sample_power(d, n)
    assert cs.seeds_needed(-d) == n


@pytest.mark.parametrize("d,n", [(1.0, 10), (0.5, 34)])
def test_paired_seeds_needed_known_values(d, n):
    assert cs.paired_seeds_needed(d) == n
    assert cs.paired_power(d, n - 1) < 0.8 <= cs.paired_power(d, n)


def test_minimum_detectable_effect_at_five_seeds():
    d = cs.minimum_detectable_effect(5)
    assert d == pytest.approx(2.02, abs=0.01)
    assert cs.two_sample_power(d, 5) == pytest.approx(0.8, abs=1e-6)
    dz = cs.paired_minimum_detectable_effect(5)
    assert cs.paired_power(dz, 5) == pytest.approx(0.8, abs=1e-6)


def test_power_edge_cases():
    assert cs.two_sample_power(0.0, 10) == pytest.approx(0.05)
    assert cs.seeds_needed(0.0) is None and cs.paired_seeds_needed(0.0) is None
    assert cs.seeds_needed(0.01, max_n=1000) is None
    assert cs.two_sample_power(0.5, 2000) == 1.0  # scipy's nct.cdf gives NaN here


def test_power_agrees_with_simulation():
    rng = np.random.default_rng(12)
    d, n, trials = 1.0, 8, 20_000
    x = rng.normal(d, 1.0, size=(trials, n))
    y = rng.normal(0.0, 1.0, size=(trials, n))
    rate = np.mean(sps.ttest_ind(x, y, axis=1).pvalue < 0.05)
    assert rate == pytest.approx(cs.two_sample_power(d, n), abs=0.015)
    rate_paired = np.mean(sps.ttest_1samp(x[:, :6] - y[:, :6], 0.0, axis=1).pvalue < 0.05)
    assert rate_paired == pytest.approx(cs.paired_power(d / math.sqrt(2), 6), abs=0.015)


# --- p-value floors ----------------------------------------------------------------------


def test_floors_equal_scipy_exact_extremes():
    assert cs.wilcoxon_floor(5) == 0.0625
    assert cs.wilcoxon_floor(5) == pytest.approx(
        sps.wilcoxon([0.1, 0.2, 0.3, 0.4, 0.5], method="exact").pvalue
    )
    assert cs.mann_whitney_floor(5, 5) == pytest.approx(0.0079, abs=1e-4)
    assert cs.mann_whitney_floor(5, 5) == pytest.approx(
        sps.mannwhitneyu([6, 7, 8, 9, 10], [1, 2, 3, 4, 5], method="exact").pvalue
    )


def test_holm_family_cannot_pass_mann_whitney_floor_beyond_six():
    floor = cs.mann_whitney_floor(5, 5)
    assert cs.family_can_reach_alpha(floor, 6)
    assert not cs.family_can_reach_alpha(floor, 7)
    assert cs.floor_warning("exact Mann-Whitney (5 vs 5)", floor, 6) is None
    msg = cs.floor_warning("exact Mann-Whitney (5 vs 5)", floor, 7)
    assert "7 comparisons" in msg and "0.007937" in msg


def test_wilcoxon_with_five_pairs_never_significant():
    assert not cs.family_can_reach_alpha(cs.wilcoxon_floor(5), 1)
    assert "never be significant" in cs.floor_warning("exact Wilcoxon (5 pairs)", 0.0625, 1)


# --- small-sample correction, one tolerance, rank ranges -------------------------------


@pytest.mark.parametrize("n", [3, 5, 10, 30])
def test_hedges_gz_is_dz_times_the_exact_correction(n):
    rng = np.random.default_rng(n)
    x = rng.normal(0.6, 0.2, size=n)
    y = x - rng.normal(0.08, 0.1, size=n)
    dz, gz = cs.cohens_dz(x, y), cs.hedges_gz(x, y)
    j = math.gamma((n - 1) / 2) / (math.sqrt((n - 1) / 2) * math.gamma((n - 2) / 2))
    assert gz["value"] == pytest.approx(j * dz["value"], rel=1e-12)
    assert gz["uncorrected"] == dz["value"] and gz["correction"] == pytest.approx(j, rel=1e-12)
    assert (gz["lo"], gz["hi"]) == (dz["lo"], dz["hi"])  # the exact interval of delta_z
    assert j == pytest.approx(1 - 3 / (4 * (n - 1) - 1), abs=0.02)  # Hedges' approximation


def test_hedges_gz_removes_the_small_sample_bias_of_dz():
    """At five seeds d_z overestimates delta_z by about 1.25x; g_z does not (simulated)."""
    rng = np.random.default_rng(7)
    delta, n, sims = 1.0, 5, 40_000
    d = rng.normal(delta, 1.0, size=(sims, n))
    dz = d.mean(axis=1) / d.std(axis=1, ddof=1)
    assert dz.mean() / delta == pytest.approx(1 / cs.hedges_j(n - 1), rel=0.02)
    assert 1 / cs.hedges_j(n - 1) == pytest.approx(1.25, abs=0.01)
    assert (cs.hedges_j(n - 1) * dz).mean() == pytest.approx(delta, rel=0.02)


def test_two_constants_a_rounding_error_apart_are_equal_in_every_statistic():
    """One tolerance: p = 1 in the t-tests, P(X > Y) = 0.5, Wilcoxon p = 1, tied ranks,
    identical for the equivalence test (not p = 1 in one table and 0.40 in another)."""
    x = np.full(5, 0.3)
    y = x + 1e-13
    assert cs.paired(x, y)["p"] == 1.0 and cs.welch(x, y)["p"] == 1.0
    assert cs.probability_of_improvement(x, y) == 0.5
    _, lo, hi = cs.probability_of_improvement_ci(x, y, rng=1, reps=200)
    assert lo == hi == 0.5
    w = cs.wilcoxon(x, y)
    assert w["p"] == 1.0 and w["testable"]
    assert cs.tost_paired(x, y, 0.05)["identical"]
    blocks = np.column_stack([x, y, x + 0.2])
    assert cs.average_ranks(blocks).tolist() == [2.5, 2.5, 1.0]
    assert math.isnan(cs.friedman(np.column_stack([x, y, x + 1e-14]))["p"])  # all tied


def test_wilcoxon_on_a_constant_nonzero_difference_is_not_testable_like_the_t_test():
    x = np.linspace(0.1, 0.9, 30)
    w = cs.wilcoxon(x, x - 0.2)
    assert not w["testable"] and math.isnan(w["p"])
    assert not cs.paired(x, x - 0.25)["testable"]


def test_snap_ties_joins_values_within_rounding_only():
    from clinbench.stats._arrays import snap_ties

    row = np.array([[0.5, 0.3 + 1e-13, 0.3, 0.7]])
    assert snap_ties(row).tolist() == [[0.5, 0.3, 0.3, 0.7]]
    assert snap_ties(np.array([0.1, 0.2])).tolist() == [0.1, 0.2]


@pytest.mark.parametrize(
    ("separated", "expected"),
    [
        ([], {"a": (1, 3), "b": (1, 3), "c": (1, 3)}),  # all tied: no agent ranked above another
        ([("a", "b"), ("a", "c")], {"a": (1, 1), "b": (2, 3), "c": (2, 3)}),
        ([("a", "c")], {"a": (1, 2), "b": (1, 3), "c": (2, 3)}),
        ([("a", "b"), ("a", "c"), ("b", "c")], {"a": (1, 1), "b": (2, 2), "c": (3, 3)}),
    ],
)
def test_rank_ranges_give_a_rank_only_where_the_tests_separate(separated, expected):
    assert cs.rank_ranges(["a", "b", "c"], separated) == expected


def test_rank_ranges_of_one_agent():
    assert cs.rank_ranges(["only"], []) == {"only": (1, 1)}
