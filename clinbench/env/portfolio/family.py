"""The portfolio family's hooks for the generic layers (see :mod:`clinbench.env.family`).

Built but not registered: registering it (``register_family(FAMILY)`` and each task in
this package's ``__init__``) is what would put the family in the sweep, the CLI and
the report. What is still missing before that is listed in ``docs/environments.md``
(Part III.9).
"""

from __future__ import annotations

from clinbench.env.family import Family, Metric
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
        "budget",
        "portfolio_cap",
        "indications",
        "trials",
        "catalogue_mask",
        "records",
        "approvals",
        "last_error",
    ),
    episode_metrics=(
        Metric("any_approval", "at least one approval", "rate"),
        Metric("approvals", "approvals"),
        Metric("npv", "risk-adjusted value ($M)"),
        Metric("trials_started", "trials started"),
        Metric("phase3_started", "Phase III trials started"),
    ),
    score_part_labels={
        "value": "discounted value of approvals ($M)",
        "cost": "discounted trial costs ($M)",
        "npv": "net value ($M)",
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
    # no stored references or domain charts yet; evaluation episodes not yet measured
)
