"""Indication and strict F1: hand-computed cases, conventions, and sklearn when present."""

from __future__ import annotations

import numpy as np
import pytest

from clinbench.env.portfolio.metrics import (
    indication_set,
    macro_f1,
    micro_f1,
    portfolio_f1,
    set_f1,
    strict_set,
)
from clinbench.env.portfolio.trials import TrialDesign

A1 = TrialDesign("nsclc_1L", 1)
A2 = TrialDesign("nsclc_1L", 2, randomised=True)
B1 = TrialDesign("breast_2L", 1, biomarker=True)
B1_MONO = TrialDesign("breast_2L", 1)
C3 = TrialDesign("aml_2L", 3, randomised=True)


def test_set_f1_by_hand():
    assert set_f1(frozenset({1, 2}), frozenset({2, 3})) == pytest.approx(0.5)
    assert set_f1(frozenset({1}), frozenset({1})) == 1.0
    assert set_f1(frozenset(), frozenset()) == 1.0  # empty vs empty: a full match
    assert set_f1(frozenset({1}), frozenset()) == 0.0
    assert set_f1(frozenset(), frozenset({1})) == 0.0


def test_strict_needs_phase_and_design_but_indication_does_not():
    pred, true = (A1, B1_MONO), (A2, B1)
    assert indication_set(pred) == indication_set(true)
    assert not strict_set(pred) & strict_set(true)
    f = portfolio_f1([pred], [true])
    assert f["indication_f1_macro"] == 1.0 and f["strict_f1_macro"] == 0.0


def test_micro_and_macro_differ_by_hand():
    # episode 1: pred {A}, true {A, B}: F1 2/3; episode 2: pred {C}, true {}: F1 0
    pairs = [(frozenset("A"), frozenset("AB")), (frozenset("C"), frozenset())]
    assert macro_f1(pairs) == pytest.approx((2 / 3 + 0) / 2)
    assert micro_f1(pairs) == pytest.approx(2 * 1 / (1 + 2 + 1 + 0))
    assert micro_f1([(frozenset(), frozenset())]) == 1.0
    assert np.isnan(macro_f1([])) and np.isnan(micro_f1([]))


def test_length_mismatch_is_refused():
    with pytest.raises(ValueError, match="predictions"):
        portfolio_f1([(A1,)], [])


def _indicator(sets, labels):
    return np.array([[lab in s for lab in labels] for s in sets], dtype=int)


def test_matches_sklearn_on_random_sets():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    labels = list(range(6))
    pred = [frozenset(np.flatnonzero(rng.random(6) < 0.3).tolist()) for _ in range(50)]
    true = [frozenset(np.flatnonzero(rng.random(6) < 0.3).tolist()) for _ in range(50)]
    yp, yt = _indicator(pred, labels), _indicator(true, labels)
    pairs = list(zip(pred, true, strict=True))
    for average, ours in (("samples", macro_f1(pairs)), ("micro", micro_f1(pairs))):
        ref = metrics.f1_score(yt, yp, average=average, zero_division=1.0)
        assert ours == pytest.approx(ref)
