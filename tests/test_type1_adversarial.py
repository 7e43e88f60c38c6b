"""Type-I error of the dose-finding trial against adversarial legal plans.

The protocol promises a one-sided familywise 0.025 whatever a legal plan does. Two
mechanisms broke it (docs/environments.md II.4): over-running the planned information
(the final bound assumed the information stopped at its maximum) and the Mantel-Haenszel
z's heavy upper tail when a dose is small next to control within cohorts. Here: the
statistics of the remedies against independent computations (scipy's multivariate normal
CDF and hypergeometric), the environment using them, and the worst plans of
``benchmarks/type1_search.py`` replayed on fresh null worlds.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from clinbench.env import make
from clinbench.env.trial_design import TASKS, TrialAction
from clinbench.env.trial_design.statistics import (
    SpendingBoundary,
    boundaries,
    hypergeometric_pmf,
    null_distribution,
    per_arm_alpha,
    stratified_exact_sf,
    upper_tail,
)

ALPHA = 0.025


def _search_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "type1_search.py"
    spec = importlib.util.spec_from_file_location("type1_search", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SEARCH = _search_module()


# ------------------------------------------------------------------ over-running
def _cov(fractions) -> np.ndarray:
    f = np.asarray(fractions, dtype=float)
    return np.sqrt(np.minimum.outer(f, f) / np.maximum.outer(f, f))


def _exits(bounds, fractions) -> list[float]:
    """P(Z_1 < b_1, ..., Z_{k-1} < b_{k-1}, Z_k >= b_k) under H0 for every k (scipy mvn)."""
    out = []
    for k in range(1, len(bounds) + 1):
        if k == 1:
            out.append(float(stats.norm.sf(bounds[0])))
            continue
        out.append(
            float(
                stats.multivariate_normal.cdf(
                    np.array([*bounds[: k - 1], np.inf]),
                    mean=np.zeros(k),
                    cov=_cov(fractions[:k]),
                    lower_limit=np.array([-np.inf] * (k - 1) + [bounds[k - 1]]),
                    abseps=1e-9,
                    releps=1e-6,
                    maxpts=200_000,
                    rng=np.random.default_rng(3),
                )
            )
        )
    return out


@pytest.mark.parametrize(
    "fractions", [[0.5, 1.3], [0.3, 0.7, 1.6], [0.25, 0.6, 0.98, 1.9], [0.98, 2.0]]
)
def test_an_over_running_final_look_spends_exactly_alpha(fractions):
    """The final bound is solved on the information reached: total exit = alpha."""
    bounds = boundaries(fractions, ALPHA)
    exits = _exits(bounds, fractions)
    assert sum(exits) == pytest.approx(ALPHA, abs=1e-6)
    # the bound of the old rule (information counted as 1) lets more than alpha through
    capped = boundaries([*fractions[:-1], 1.0], ALPHA)
    assert capped[-1] < bounds[-1]
    assert sum(_exits(capped, fractions)) > ALPHA * 1.005  # 1.009 to 1.46 times


def test_the_first_look_past_the_maximum_is_the_final_one():
    boundary = SpendingBoundary(ALPHA)
    b = [boundary.look(t) for t in (0.4, 1.5, 1.8, 2.5)]
    assert b[1] == pytest.approx(boundaries([0.4, 1.5])[-1], abs=1e-12)
    assert b[2] == b[3] == math.inf
    assert boundary.spent == ALPHA
    assert boundary.information_fraction == 2.5
    assert boundaries([1.7]) == [pytest.approx(stats.norm.isf(ALPHA), abs=1e-12)]
    with pytest.raises(ValueError):
        SpendingBoundary().look(math.inf)


def test_the_environment_spends_on_the_information_reached():
    """Control and one dose, 43 + 43 then 50 + 50 patients: t = 0.896, then 1.94."""
    env = make("trial_design/effective_drug", scenario_mix=(0.0, 1.0, 0.0, 0.0))
    env.reset(seed=11)
    alloc = {
        "allocation_control": 0.5,
        "allocation_low": 0.5,
        "allocation_mid": 0.0,
        "allocation_high": 0.0,
    }
    env.step(TrialAction(n_next_cohort=86, **alloc))
    obs = env.step(TrialAction(n_next_cohort=100, **alloc))[0]
    info_max = env.params.planned_per_arm / 2
    t = [21.5 / info_max, (21.5 + 25) / info_max]
    alpha_arm = per_arm_alpha(ALPHA, 3)
    assert t[1] > 1.9
    assert obs.boundary[0] == pytest.approx(boundaries(t, alpha_arm)[-1], abs=1e-9)
    assert obs.boundary[0] > boundaries([t[0], 1.0], alpha_arm)[-1] + 0.1
    assert obs.information_fraction[0] == 1.0  # shown capped
    obs, _, _, _, info = env.step(TrialAction(n_next_cohort=8, **alloc))
    assert info["error"] is None and obs.n[1] == 97
    assert obs.boundary[0] == math.inf  # all alpha spent


# ------------------------------------------------------------------ the exact test
@pytest.mark.parametrize(
    "n_arm,n_ctl,responders",
    [(9, 66, 8), (5, 70, 0), (40, 40, 80), (1, 0, 1), (30, 7, 20), (100, 100, 37)],
)
def test_hypergeometric_pmf_is_scipys(n_arm, n_ctl, responders):
    first, pmf = hypergeometric_pmf(n_arm, n_ctl, responders)
    k = np.arange(first, first + pmf.size)
    ref = stats.hypergeom.pmf(k, n_arm + n_ctl, responders, n_arm)
    np.testing.assert_allclose(pmf, ref, rtol=1e-12, atol=1e-300)
    assert ref.sum() == pytest.approx(1.0, abs=1e-12)  # the whole support
    with pytest.raises(ValueError):
        hypergeometric_pmf(n_arm, n_ctl, n_arm + n_ctl + 1)


def test_stratified_exact_p_is_the_convolution_of_hypergeometrics():
    strata = [(9, 66, 8), (12, 5, 3), (1, 1, 1), (3, 7, 0), (20, 20, 40), (30, 10, 12)]
    pmf, first = np.ones(1), 0
    for n1, n0, m in strata:
        k = np.arange(max(0, m - n0), min(n1, m) + 1)
        pmf, first = np.convolve(pmf, stats.hypergeom.pmf(k, n1 + n0, m, n1)), first + k[0]
    for t in range(first - 1, first + pmf.size + 1):
        i = t - first
        exact = pmf[max(i, 0) :].sum() if i < pmf.size else 0.0
        mid = exact - (0.5 * pmf[i] if 0 <= i < pmf.size else 0.0)
        assert stratified_exact_sf(strata, t) == pytest.approx(min(exact, 1.0), rel=1e-11)
        assert stratified_exact_sf(strata, t, mid=True) == pytest.approx(min(mid, 1.0), rel=1e-11)
    # adding strata to a distribution equals building it at once
    half = null_distribution(strata[:3])
    assert upper_tail(*null_distribution(strata[3:], half), first + 9) == pytest.approx(
        stratified_exact_sf(strata, first + 9), rel=1e-13
    )


def _one_table_size(n_arm, n_ctl, rate, b):
    """P(rule) / Phi(-b) under H0 for one 2x2 table with binomial arms, exactly:
    the MH z alone, the exact p-value, and the environment's rule (z and mid-p)."""
    x1 = np.arange(n_arm + 1)[:, None]
    x0 = np.arange(n_ctl + 1)[None, :]
    w = stats.binom.pmf(x1, n_arm, rate) * stats.binom.pmf(x0, n_ctl, rate)
    n, m = n_arm + n_ctl, x1 + x0
    var = n_arm * n_ctl * m * (n - m) / (n * n * (n - 1))
    z = np.where(var > 0, (x1 - n_arm * m / n) / np.sqrt(np.maximum(var, 1e-300)), 0.0)
    level = stats.norm.sf(b)
    exact = np.vectorize(lambda x, mm: stratified_exact_sf([(n_arm, n_ctl, mm)], x))(x1, m)
    mid = np.vectorize(lambda x, mm: stratified_exact_sf([(n_arm, n_ctl, mm)], x, True))(x1, m)
    return [
        float((w * rule).sum() / level)
        for rule in (z >= b, exact <= level, (z >= b) & (mid <= level))
    ]


@pytest.mark.parametrize(
    "n_arm,n_ctl,rate",
    [(9, 66, 0.1), (5, 70, 0.1), (2, 40, 0.05), (48, 48, 0.1), (66, 66, 0.5), (30, 60, 0.12)],
)
@pytest.mark.parametrize("b", [2.39, 2.9, 3.5])
def test_the_claim_rule_holds_its_level_where_the_z_alone_does_not(n_arm, n_ctl, rate, b):
    z_alone, exact, rule = _one_table_size(n_arm, n_ctl, rate, b)
    assert exact <= 1.0
    assert rule <= 1.1  # measured worst over 2-100 per arm, rates 0.05-0.5: 1.094
    if n_arm * 4 <= n_ctl:  # a small dose next to control: the z's heavy tail
        assert z_alone > 1.9 and rule <= 1.0


def test_a_look_where_only_the_z_crosses_cannot_claim():
    """The unbalanced plan meets looks whose z reaches the boundary but whose exact
    test does not confirm it; a crossing always has z >= boundary."""
    plan = SEARCH.PLANS["unbalanced"]
    env = make("trial_design/effective_drug", scenario_mix=(0.0, 1.0, 0.0, 0.0))
    refused = 0
    for seed in range(400):
        obs, _ = env.reset(seed=seed)
        k, done = 0, False
        while not done:
            for j in range(3):
                if obs.crossed[j]:
                    assert obs.z[j] >= obs.boundary[j]
                elif obs.active[j + 1] and obs.z[j] >= obs.boundary[j]:
                    refused += 1
                    arm = ("low", "mid", "high")[j]
                    probe = env.step(TrialAction(stop_for_success=True, success_arm=arm))
                    assert probe[4]["error"] == "boundary_not_crossed"
                    obs, done = probe[0], probe[2]
                    break
            else:
                action = SEARCH.act(plan, env.params, obs, k, None)
                k += action.n_next_cohort > 0
                obs, _, done, _, _ = env.step(action)
    assert refused >= 3


# ------------------------------------------------------------------ the adversarial plans
#: The plans the search found worst on some task (docs/environments.md II.4), and the
#: two plans of the review rebuilt from their description.
WORST = ("unbalanced", "balanced_overrun", "c0.71_n75_s0", "c0.71_n40_s0")


def _rate(plan: str, task: str, worlds: int) -> tuple[float, int]:
    out = SEARCH.play(SEARCH.PLANS[plan], task, list(range(worlds)))
    assert out["errors"] == 0  # every action of the plan was legal
    return out["claims"] / worlds, out["claims"]


def test_the_unbalanced_plan_quickly():
    """The review's unbalanced plan (66 control and 9 per dose per cohort, strictness 0)
    on 1,000 null worlds: 4.8 % before the remedies, 2.0 % after (bound 0.0349)."""
    rate, claims = _rate("unbalanced", "effective_drug", 1000)
    assert rate <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / 1000), f"{claims} claims"


@pytest.mark.slow
@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("plan", WORST)
def test_worst_plans_keep_familywise_type_i_error_on_4000_fresh_null_worlds(plan, task):
    """Worlds 0..3999, not the search's: the worst plans replayed on fresh worlds."""
    rate, claims = _rate(plan, task, 4000)
    assert rate <= SEARCH.bound(4000), f"{plan} on {task}: {claims} claims in 4000"
