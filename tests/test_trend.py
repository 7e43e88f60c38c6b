"""The "still improving" flag of the report is computed from the curves, and its
statistics equal scipy's on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sps

from clinbench.report.curves import curve_summary
from clinbench.stats import end_trend, ols_slope

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
