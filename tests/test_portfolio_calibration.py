"""The portfolio family's logged programs reproduce the published oncology figures.

2,400 programs (40 universes of 60) under their sponsors' policies, counted per
drug-indication pair as BIO / Biomedtracker count (``clinbench.env.portfolio.
calibration``). Tolerances: the sampling error at this size is about 0.5 to 2
percentage points per rate; the universes' class effects add spread, so each band is a
few points around the target.
"""

from __future__ import annotations

import pytest

from clinbench.env.portfolio.calibration import pair_rates
from clinbench.env.portfolio.history import simulate_universe
from clinbench.env.portfolio.params import TARGETS, TASKS
from clinbench.env.portfolio.world import draw_universe

#: rate -> (low, high)
BANDS = {
    "phase1_to_2": (TARGETS["phase1_to_2"] - 0.05, TARGETS["phase1_to_2"] + 0.05),
    "phase2_to_3": (TARGETS["phase2_to_3"] - 0.05, TARGETS["phase2_to_3"] + 0.05),
    "phase3_to_filing": (TARGETS["phase3_to_filing"] - 0.07, TARGETS["phase3_to_filing"] + 0.07),
    "filing_to_approval": (TARGETS["filing_to_approval"] - 0.07,
                           TARGETS["filing_to_approval"] + 0.07),
    # between Wong, Siah & Lo's 3.4 % and BIO's 5 % plus two points
    "loa_phase1": (TARGETS["loa_phase1_wong"], TARGETS["loa_phase1"] + 0.02),
    "biomarker_loa_ratio": (1.5, 3.0),
    "years_phase1_to_approval": (TARGETS["years_phase1_to_approval"] - 1.5,
                                 TARGETS["years_phase1_to_approval"] + 1.5),
}


@pytest.fixture(scope="module")
def rates() -> dict[str, float]:
    params = TASKS["develop"]
    histories = [
        h for seed in range(40) for h in simulate_universe(draw_universe(params, seed), 60)
    ]
    return pair_rates(histories)


def test_enough_pairs_and_approvals_are_simulated(rates):
    assert rates["pairs_phase1"] > 10_000
    assert rates["approvals"] > 400


@pytest.mark.parametrize("name", sorted(BANDS))
def test_rate_is_within_its_band(rates, name):
    low, high = BANDS[name]
    assert low <= rates[name] <= high, f"{name} = {rates[name]:.4f}, band [{low}, {high}]"


def test_biomarker_programs_do_better(rates):
    assert rates["loa_biomarker"] > rates["loa_no_biomarker"]
