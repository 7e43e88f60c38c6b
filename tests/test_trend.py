"""The "still improving" flag of the report is computed from the curves, and its
statistics equal scipy's on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps
from hypothesis import given
from hypothesis import strategies as st

from clinbench.report.curves import curve_summary
from clinbench.stats import budget_to_beat, end_trend, ols_slope

BUDGET = 3000
STEPS = [round(BUDGET * k / 20) for k in range(21)]


def curves(shape, seeds=5, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (STEPS, [shape(s / BUDGET) + noise * rng.standard_normal() for s in STEPS])
        for _ in range(seeds)
    ]


def test_ols_slope_is_scipys_linregress():
    rng = np.random.default_rng(4)
    x, y = rng.random(12), rng.random(12)
    assert ols_slope(x, y) == pytest.approx(sps.linregress(x, y).slope, rel=1e-12)
    assert np.isnan(ols_slope([1.0], [2.0])) and np.isnan(ols_slope([1, 1], [2, 3]))


def test_the_interval_is_the_t_interval_of_the_per_seed_changes():
    data = curves(lambda f: 0.5 * f, noise=0.05, seed=3)
    trend = end_trend(data, BUDGET, 0.2)
    changes = []
    for x, y in data:
        keep = [i for i, s in enumerate(x) if s >= 0.8 * BUDGET]
        fit = sps.linregress([x[i] for i in keep], [y[i] for i in keep])
        changes.append(fit.slope * 0.2 * BUDGET)
    lo, hi = sps.t.interval(0.95, len(changes) - 1, np.mean(changes), sps.sem(changes))
    assert trend["change"] == pytest.approx(np.mean(changes))
    assert (trend["lo"], trend["hi"]) == pytest.approx((lo, hi))
    assert trend["seeds"] == 5


@pytest.mark.parametrize(
    "shape, verdict",
    [
        (lambda f: 0.6 * f, "still improving"),  # a straight climb to the end
        (lambda f: 0.6 * min(f, 0.5) / 0.5, "flat"),  # a plateau from half the budget
        (lambda f: 0.6 - 0.5 * f, "declining"),
    ],
    ids=["rising", "plateau", "falling"],
)
def test_the_verdict_follows_the_curve(shape, verdict):
    assert end_trend(curves(shape), BUDGET)["verdict"] == verdict


def test_one_seed_is_undetermined():
    assert end_trend(curves(lambda f: f, seeds=1), BUDGET)["verdict"] == "undetermined"


def test_an_agent_that_ends_below_its_untrained_policy_is_flagged():
    def points(values):
        return [
            {"env_steps": s, "episodes": i, "mean_score": v}
            for i, (s, v) in enumerate(zip(STEPS, values, strict=True))
        ]

    worse = {
        seed: points([0.4 - 0.2 * s / BUDGET + 0.001 * seed for s in STEPS]) for seed in range(5)
    }
    summary = curve_summary(worse, BUDGET)
    assert summary["ends_below_untrained"]
    assert summary["change"]["mean"] == pytest.approx(-0.2)
    assert summary["end_trend"]["verdict"] == "declining" and summary["points"] == 21
    better = {seed: points([0.2 + 0.3 * s / BUDGET for s in STEPS]) for seed in range(5)}
    assert not curve_summary(better, BUDGET)["ends_below_untrained"]


def test_the_evaluated_checkpoint_is_summarised_beside_the_curve():
    def points(values):
        return [
            {"env_steps": s, "episodes": i, "mean_score": v}
            for i, (s, v) in enumerate(zip(STEPS, values, strict=True))
        ]

    curves = {seed: points([0.1 + 0.01 * seed] * 21) for seed in range(5)}
    kept = {
        seed: {"env_steps": 150 * (seed + 1), "mean_score": 0.3 + 0.02 * seed} for seed in range(5)
    }
    summary = curve_summary(curves, BUDGET, kept)["kept"]
    scores = [0.3 + 0.02 * seed for seed in range(5)]
    lo, hi = sps.t.interval(0.95, 4, loc=np.mean(scores), scale=sps.sem(scores))
    assert summary["mean"] == pytest.approx(np.mean(scores))
    assert (summary["lo"], summary["hi"]) == pytest.approx((lo, hi))
    assert summary["env_steps"] == pytest.approx(450.0)
    gains = [0.3 + 0.02 * seed - (0.1 + 0.01 * seed) for seed in range(5)]
    assert summary["change"]["mean"] == pytest.approx(np.mean(gains))
    assert summary["change"]["lo"] == pytest.approx(
        sps.t.interval(0.95, 4, loc=np.mean(gains), scale=sps.sem(gains))[0]
    )
    assert not summary["below_untrained"]
    assert curve_summary(curves, BUDGET)["kept"] is None  # the last policy was evaluated
    del kept[0]  # a seed without its checkpoint: no summary of part of the seeds
    assert curve_summary(curves, BUDGET, kept)["kept"] is None


# ---- budget_to_beat: the budget at which a learner would beat a reference -----------


def test_budget_to_beat_margin_and_gain_are_scipys():
    rng = np.random.default_rng(11)
    ref = 0.64 + 0.01 * rng.standard_normal(5)
    short = 0.40 + 0.05 * rng.standard_normal(5)
    long = short + 0.12 + 0.03 * rng.standard_normal(5)
    out = budget_to_beat(ref, short, long, factor=100.0, alpha=0.0033)
    # the margin is the d_z at which scipy's noncentral t gives the paired t-test 80 %
    # power (statsmodels' TTestPower returns NaN this far in the tail: tests/test_report.py)
    d_z = out["margin"] / np.std(ref - long, ddof=1)
    crit = sps.t.isf(0.0033 / 2, 4)
    nc = d_z * np.sqrt(5)
    power = sps.nct.sf(crit, 4, nc) + sps.nct.sf(crit, 4, -nc)  # upper tail + lower tail
    assert power == pytest.approx(0.8, abs=1e-9)
    gains = (long - short) / 2.0  # two decades
    lo, hi = sps.t.interval(0.95, 4, gains.mean(), sps.sem(gains))
    g = out["gain_per_decade"]
    assert (g["mean"], g["lo"], g["hi"]) == pytest.approx((gains.mean(), lo, hi))
    assert out["gap"] == pytest.approx(np.mean(ref - long))


def test_a_learner_on_a_log_linear_curve_is_placed_where_it_crosses():
    # every seed gains exactly 0.05 per decade: the interval collapses to the point
    offsets = np.array([0.30, 0.32, 0.28, 0.31, 0.29])

    def score(budget):
        return offsets + 0.05 * np.log10(budget)

    ref = np.array([0.70, 0.71, 0.69, 0.72, 0.70])
    out = budget_to_beat(ref, score(1e5), score(1e6), factor=10.0)
    target = ref.mean() + out["margin"]
    crossing = 10 ** ((target - offsets.mean()) / 0.05)  # solve mean score == target
    assert 1e6 * 10 ** out["decades"]["point"] == pytest.approx(crossing, rel=1e-9)
    assert out["decades"]["low"] == pytest.approx(out["decades"]["point"])
    assert out["verdict"] == "reached at"


@pytest.mark.parametrize(
    "gain, spread, verdict",
    [
        (0.10, 0.01, "reached at"),  # rising on every seed
        (0.02, 0.10, "no upper bound"),  # rising on average, the interval holds 0
        (-0.02, 0.10, "undetermined"),  # falling on average, the interval holds 0
        (-0.05, 0.01, "not rising"),
    ],
)
def test_budget_to_beat_verdicts(gain, spread, verdict):
    rng = np.random.default_rng(2)
    short = 0.4 + 0.02 * rng.standard_normal(6)
    long = short + gain + spread * rng.standard_normal(6)
    out = budget_to_beat(np.full(6, 0.7) + 0.01 * rng.standard_normal(6), short, long, 10.0)
    assert out["verdict"] == verdict
    d = out["decades"]
    if verdict == "reached at":
        assert 0 < d["low"] <= d["point"] <= d["high"]
    elif verdict == "no upper bound":
        assert d["high"] is None and 0 < d["low"] <= d["point"]
    elif verdict == "undetermined":  # only the optimistic end of the gain gives a budget
        assert d["point"] is None and d["high"] is None and d["low"] > 0
    else:
        assert d["point"] is None and d["high"] is None


def test_a_learner_already_past_the_reference_and_margin_is_beaten():
    ref = np.array([0.5, 0.52, 0.49, 0.51])
    out = budget_to_beat(ref, ref - 0.2, ref + 0.3 + np.array([0, 0.01, 0.0, 0.02]), 10.0)
    assert out["verdict"] == "beaten" and out["decades"]["point"] == 0.0


def test_budget_to_beat_refuses_unpaired_or_too_few_seeds():
    with pytest.raises(ValueError):
        budget_to_beat([0.5, 0.6], [0.1, 0.2, 0.3], [0.2, 0.3], 10.0)
    with pytest.raises(ValueError):
        budget_to_beat([0.5], [0.1], [0.2], 10.0)
    with pytest.raises(ValueError):
        budget_to_beat([0.5, 0.6], [0.1, 0.2], [0.2, 0.3], 1.0)


@given(
    gain=st.floats(0.01, 0.5),
    more=st.floats(0.001, 0.5),
)
def test_a_faster_learner_never_needs_a_larger_budget(gain, more):
    ref = np.array([0.8, 0.82, 0.79, 0.81, 0.8])
    short = np.array([0.2, 0.25, 0.22, 0.21, 0.23])
    noise = np.array([0.0, 0.01, -0.01, 0.005, -0.005])

    def point(g):
        return budget_to_beat(ref, short, short + g + noise, 10.0)["decades"]["point"]

    slow, fast = point(gain), point(gain + more)
    assert fast <= slow or slow == 0.0


def test_a_target_above_the_ceiling_gets_no_budget():
    ref = np.array([0.70, 0.71, 0.69, 0.72, 0.70])
    short = np.array([0.30, 0.32, 0.28, 0.31, 0.29])
    out = budget_to_beat(ref, short, short + 0.1, 10.0)
    assert out["verdict"] == "reached at"
    capped = budget_to_beat(ref, short, short + 0.1, 10.0, ceiling=out["target"] - 1e-9)
    assert capped["verdict"] == "above the ceiling"
    assert capped["decades"] == {"point": None, "low": None, "high": None}
    assert budget_to_beat(ref, short, short + 0.1, 10.0, ceiling=1.0)["verdict"] == "reached at"


def test_per_seed_gains_reach_only_when_the_mean_gain_beats_their_spread():
    """If each seed kept its own gain, the gaps' sd would grow with the budget: the
    paired test reaches its power only if the mean gain exceeds d_z x sd(gains)."""
    from clinbench.stats import paired_minimum_detectable_effect

    ref = np.full(5, 0.8)
    short = np.array([0.2, 0.25, 0.22, 0.21, 0.23])
    for spread, reach in ((0.001, True), (0.1, False)):
        gains = 0.1 + spread * np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
        out = budget_to_beat(ref, short, short + gains, 10.0, alpha=0.01)
        d_z = paired_minimum_detectable_effect(5, 0.01)
        assert out["per_seed_gains_reach"] is reach
        assert reach == (gains.mean() > d_z * gains.std(ddof=1))
