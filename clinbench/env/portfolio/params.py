"""Every number of the portfolio family's generative model, with its source.

Published oncology development statistics fix the targets the model is calibrated to
(``TARGETS``); the latent-effect and trial-noise parameters below were chosen by
simulation so that the logged sponsor programs reproduce them
(``tests/test_portfolio_calibration.py`` checks it). Parameters marked *assumption* are
this simulator's own choices, not published figures. Changing any value changes the
tasks: bump ``TASK_VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clinbench.env.base import override_params

TASK_VERSION = 1

#: Published figures the simulated programs must reproduce (per drug-indication pair).
#: Phase transitions and LOA: BIO / Biomedtracker / Amplion, "Clinical Development
#: Success Rates 2006-2015" (2016), oncology; LOA also Wong, Siah & Lo, "Estimation of
#: clinical trial success rates and related parameters", Biostatistics 20(2), 2019
#: (oncology 3.4 %). Biomarker two-fold LOA and 10.5 years from Phase I to approval:
#: BIO / Informa / QLS, "Clinical Development Success Rates and Contributing Factors
#: 2011-2020" (2021).
TARGETS = MappingProxyType(
    {
        "phase1_to_2": 0.63,
        "phase2_to_3": 0.25,
        "phase3_to_filing": 0.40,
        "filing_to_approval": 0.82,
        "loa_phase1": 0.05,
        "loa_phase1_wong": 0.034,
        "biomarker_loa_ratio": 2.0,
        "years_phase1_to_approval": 10.5,
    }
)

#: Tumour types and their US incidence (estimated new cases per year, thousands,
#: rounded): American Cancer Society, "Cancer Facts & Figures 2024" (NSCLC taken as 85 %
#: of lung and bronchus).
TUMOUR_INCIDENCE = MappingProxyType(
    {
        "nsclc": 199.0,
        "breast": 311.0,
        "colorectal": 153.0,
        "prostate": 299.0,
        "melanoma": 101.0,
        "ovarian": 20.0,
        "gastric": 27.0,
        "aml": 21.0,
        "lymphoma": 81.0,
        "myeloma": 36.0,
        "pancreatic": 66.0,
        "bladder": 83.0,
    }
)
TUMOURS = tuple(TUMOUR_INCIDENCE)
#: Lines of therapy and the share of incident patients treated in each (*assumption*:
#: attrition between lines, roughly halving per line).
LINE_SHARE = MappingProxyType({"1L": 1.0, "2L": 0.5, "3L+": 0.25})
LINES = tuple(LINE_SHARE)
#: Mechanism classes (*assumption*: a coarse oncology taxonomy) and modalities.
CLASSES = (
    "kinase_inhibitor",
    "checkpoint_inhibitor",
    "antibody_drug_conjugate",
    "bispecific",
    "cell_therapy",
    "dna_damage_response",
    "epigenetic",
    "hormonal",
)
MODALITIES = ("small_molecule", "antibody", "cell_therapy", "conjugate")
#: The modality each class mostly uses (*assumption*).
CLASS_MODALITY = MappingProxyType(
    {
        "kinase_inhibitor": "small_molecule",
        "checkpoint_inhibitor": "antibody",
        "antibody_drug_conjugate": "conjugate",
        "bispecific": "antibody",
        "cell_therapy": "cell_therapy",
        "dna_damage_response": "small_molecule",
        "epigenetic": "small_molecule",
        "hormonal": "small_molecule",
    }
)
#: Sponsor behaviour styles (``clinbench.env.portfolio.sponsor``).
STYLES = ("aggressive", "conservative", "precision", "fast_follower")
SPONSOR_SIZES = ("small", "mid", "large")
PHASES = (1, 2, 3)


@dataclass(frozen=True)
class PortfolioParams:
    """Every number of one portfolio task (all overridable by name)."""

    name: str
    description: str
    # ---------------------------------------------------------------- calendar
    #: months are counted from 2000-01; decisions are every ``decision_months``
    decision_months: int = 6
    #: first and last month a program's Phase I may start
    start_min: int = 0
    start_max: int = 288
    #: the regime change: from this month (2018-01) a new standard of care holds in a
    #: share of indications (*assumption*, modelled on immunotherapy's arrival)
    cutoff_month: int = 216
    regime_share: float = 0.3
    #: effect lost against the new standard of care in the indications it reaches
    regime_shift: float = 0.35
    #: decisions per program (15 years: past the median 10.5 to approval, TARGETS)
    horizon: int = 30
    # ---------------------------------------------------------------- the world
    n_classes: int = len(CLASSES)
    n_sponsors: int = 12
    #: candidate indications per program (tumour x line, drawn without replacement)
    n_indications: int = 8
    #: share of drugs with a selection biomarker (*assumption*; BIO 2016 counts about
    #: one program in six with a selection biomarker across areas, more in oncology)
    biomarker_share: float = 0.3
    #: latent true effect (standardised: a z per unit of information) of drug d of class
    #: c in indication i: ``effect_mean + class + drug + indication + biomarker`` with
    #: normal class, drug and indication terms (calibrated by simulation to TARGETS)
    effect_mean: float = -0.55
    class_sd: float = 0.35
    drug_sd: float = 0.35
    indication_sd: float = 0.45
    biomarker_shift: float = 0.33
    #: a biomarker drug tested without selection keeps this share of its shift
    #: (*assumption*: the marker-negative patients dilute it)
    unselected_dilution: float = 0.4
    #: drug toxicity: class + drug normal terms; a Phase I passes when toxicity plus
    #: trial noise is below ``tox_limit`` (calibrated to the Phase I transition)
    class_tox_sd: float = 0.4
    drug_tox_sd: float = 0.8
    tox_noise_sd: float = 0.3
    tox_limit: float = 0.3
    #: a combination adds this to toxicity and this to the effect (*assumption*)
    combination_tox: float = 0.25
    combination_effect: float = 0.15
    # ---------------------------------------------------------------- trials
    #: sd of a readout's effect estimate by phase (information grows with size)
    estimate_sd: tuple[float, float, float] = (0.8, 0.45, 0.22)
    #: single-arm Phase II: estimate optimism against historical control (*assumption*,
    #: the known bias of single-arm trials) and sd factor
    single_arm_bias: float = 0.2
    single_arm_sd: float = 0.8
    #: success thresholds of Phase II and III readouts (calibrated)
    success_threshold: tuple[float, float] = (-0.05, 0.2)
    #: regulatory review: approval when the true effect plus review noise clears this
    #: (calibrated to filing -> approval)
    approval_threshold: float = 0.08
    review_sd: float = 0.3
    #: months from start to readout, uniform in [low, high] (*assumption*: oncology
    #: phases of about 2, 2.5 and 3.5 years and a year of review, chosen so that Phase I
    #: to approval takes about the 10.5 years of BIO 2021, TARGETS)
    duration_months: tuple[tuple[int, int], ...] = ((20, 32), (28, 40), (40, 52))
    review_months: tuple[int, int] = (10, 14)
    #: months between a readout and its public result record, uniform (*assumption*)
    result_lag: tuple[int, int] = (0, 9)
    #: share of registry records posted late (up to ``late_months``) and of result
    #: records with an extra reporting error (*assumption*)
    late_share: float = 0.2
    late_months: int = 12
    noisy_share: float = 0.15
    noisy_sd: float = 0.2
    #: cost per trial ($M), medians of Martin et al., "How much do clinical trials
    #: cost?", Nat Rev Drug Discov 16, 2017 (phase I in patients 3.4, II 8.6, III 21.4),
    #: times an oncology factor (*assumption*: larger, longer oncology trials)
    phase_cost: tuple[float, float, float] = (3.4, 8.6, 21.4)
    oncology_cost_factor: float = 3.0
    #: cost multipliers of design attributes (*assumption*)
    randomised_cost: float = 1.6
    biomarker_cost: float = 1.2
    combination_cost: float = 1.3
    # ---------------------------------------------------------------- value
    #: an approval's value ($M) = incidence (thousands) x line share x ``value_per_patient``
    #: (*assumption*: share, net price and years on the market folded into one number;
    #: set so that trial costs weigh against approvals as in industry, where developing
    #: a drug from Phase I without knowing its truth loses money more often than not:
    #: a first-line NSCLC approval is worth 1.2 $B, a third-line ovarian one 30 $M)
    value_per_patient: float = 6.0
    #: annual discount rate: the 10.5 % cost of capital of DiMasi, Grabowski & Hansen,
    #: "Innovation in the pharmaceutical industry", J Health Econ 47, 2016
    discount_rate: float = 0.105
    #: online score: ``clip(rnpv / (ev + score_floor), 0, 1)`` ($M; ``score``), so that
    #: a program of almost no value does not inflate the ratio (*assumption*: about
    #: half the cost of one indication's Phase I to III)
    score_floor: float = 50.0
    # ---------------------------------------------------------------- the agent
    #: most trials one portfolio may start
    portfolio_cap: int = 4
    #: the program's development budget ($M) by sponsor size (*assumption*)
    budget_by_size: tuple[float, float, float] = (250.0, 600.0, 1500.0)
    #: consecutive invalid actions after which an online episode ends (an invalid action
    #: changes nothing, so a policy repeating one would otherwise never end)
    max_invalid: int = 20
    #: online task: a program's Phase I starts in this window of months (None: any)
    start_window: tuple[int, int] | None = None

    @property
    def horizon_months(self) -> int:
        return self.horizon * self.decision_months

    def with_overrides(self, **overrides: Any) -> PortfolioParams:
        """A copy with some parameters replaced (unknown names: ``TypeError``)."""
        return override_params(self, overrides, check_params)


def check_params(params: PortfolioParams) -> None:
    """Raise ``ValueError`` on the structural parameters that would break the model."""
    positive = ("decision_months", "horizon", "n_sponsors", "n_indications", "portfolio_cap",
                "max_invalid")
    for name in positive:
        v = getattr(params, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"task parameter {name!r} must be a positive integer, got {v!r}")
    if params.n_indications > len(TUMOURS) * len(LINES):
        raise ValueError(f"n_indications must be at most {len(TUMOURS) * len(LINES)}")
    for name in ("biomarker_share", "regime_share", "late_share", "noisy_share"):
        v = getattr(params, name)
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"task parameter {name!r} must be in [0, 1], got {v!r}")
    if params.start_min > params.start_max:
        raise ValueError("start_min must not exceed start_max")


TASKS: MappingProxyType[str, PortfolioParams] = MappingProxyType(
    {
        "develop": PortfolioParams(
            name="develop",
            description="develop one oncology program from Phase I, any start date",
        ),
        "develop_post_cutoff": PortfolioParams(
            name="develop_post_cutoff",
            description="programs starting after the regime change (new standard of care)",
            start_window=(216, 288),
        ),
    }
)
