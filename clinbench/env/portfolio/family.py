"""The portfolio family's hooks for the generic layers (see :mod:`clinbench.env.family`).

Registered by this package's ``__init__`` (the online tasks); what is still missing
(the offline task as sweep cells) is listed in ``docs/environments.md`` (Part III.9).
"""

from __future__ import annotations

from clinbench.env.family import Family, Metric, OperatingCharacteristic
from clinbench.env.portfolio.params import TASK_VERSION

FAMILY = Family(
    name="portfolio",
    task_version=TASK_VERSION,
    observation_fields=(
        "task_id",
        "program_id",
        "drug_class",
        "modality",
        "biomarker",
        "sponsor_size",
        "decision",
        "max_decisions",
        "date",
        "month",
        "cash",
        "program_budget",
        "portfolio_cap",
        "indications",
        "trials",
        "catalogue_mask",
        "evidence",
        "approvals",
        "last_error",
    ),
    episode_metrics=(
        Metric("any_approval", "at least one approval", "rate"),
        Metric("approvals", "approvals"),
        Metric("npv", "realised net value ($M)"),
        Metric("rnpv", "risk-adjusted net value ($M)"),
        Metric("trials_started", "trials started"),
        Metric("phase3_started", "Phase III trials started"),
        Metric("sponsor_f1", "agreement with the sponsor (indication F1, %)"),
        Metric("sponsor_strict_f1", "agreement with the sponsor (strict F1, %)"),
    ),
    # what the report shows per agent and task over the operating-characteristic episodes:
    # the value behind the score ($M, discounted to the program's start) and agreement with
    # the sponsor (the offline task's F1, in per cent as the paper reports it, of the
    # agent's decisions against what the sponsor would have started in the same state)
    operating_characteristics=(
        OperatingCharacteristic("approval", "P(at least one approval)", "any_approval"),
        OperatingCharacteristic("npv", "E[realised net value, $M]", "npv"),
        OperatingCharacteristic("rnpv", "E[risk-adjusted net value, $M]", "rnpv"),
        OperatingCharacteristic("trials", "E[trials started]", "trials_started"),
        OperatingCharacteristic("sponsor_f1", "E[indication F1 against the sponsor, %]",
                                "sponsor_f1"),
        OperatingCharacteristic("sponsor_strict_f1", "E[strict F1 against the sponsor, %]",
                                "sponsor_strict_f1"),
    ),
    score_part_labels={
        "value": "discounted value of approvals ($M)",
        "cost": "discounted trial costs ($M)",
        "npv": "net value ($M)",
        "rnpv": "risk-adjusted net value ($M)",
        "ev": "expected value with the truth in hand ($M)",
    },
    step_columns={"approvals": "approvals", "running": "running", "cash": "cash"},
    main_params=(
        "horizon",
        "decision_months",
        "portfolio_cap",
        "n_indications",
        "cutoff_month",
        "regime_share",
        "biomarker_share",
        "start_window",
    ),
    param_labels={
        "horizon": "decisions",
        "decision_months": "months per decision",
        "portfolio_cap": "trials per portfolio (max)",
        "cutoff_month": "regime change (months from 2000-01)",
    },
    time_unit="decision",
    progress_label="approvals",
    references="clinbench.references.portfolio_scores",
    charts="clinbench.env.portfolio.charts",
    # per-episode score sd on 200 worlds of `develop`: repeat_last 0.22, heuristic 0.21,
    # random 0.14, so a 95 % half-width under 0.02 needs about 465; rounded up
    evaluation_episodes=480,
    # hcapo's per-episode score sd on the canonical run, at most 0.16: 20 episodes give
    # a curve point a standard error of at most 0.036, for about 3 s per learning cell
    curve_episodes=20,
    # about 300 to 600 episodes of 15 to 30 half-yearly decisions
    training_steps=9_000,
)
