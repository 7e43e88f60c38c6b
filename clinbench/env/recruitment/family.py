"""The recruitment family's hooks for the generic layers (see :mod:`clinbench.env.family`)."""

from __future__ import annotations

from clinbench.env.family import Family, Metric
from clinbench.env.recruitment.tasks import TASK_VERSION

FAMILY = Family(
    name="recruitment",
    task_version=TASK_VERSION,
    observation_fields=(
        "timestamp",
        "max_steps",
        "time_to_deadline_days",
        "budget_remaining",
        "initial_budget",
        "enrolled_so_far",
        "target_enrollment",
        "task_id",
        "current_funnel",
        "available_patients",
        "recontact_candidates",
        "allocation_candidates",
        "site_performance",
        "recent_events",
        "screening_backlog",
        "dropout_rate_7d",
        "uncertainty_level",
        "active_constraints",
        "milestones",
        "active_milestone",
        "current_plan",
        "indexed_memory_summary",
        "retrieved_memory_context",
        "token_usage_so_far",
    ),
    episode_metrics=(
        Metric("net_enrolled", "net enrolled"),
        Metric("budget_used", "budget used"),
    ),
    score_part_labels={"enrolment": "enrolment E", "budget": "budget B", "time": "time T"},
    step_columns={"enrolled": "net", "budget_remaining": "budget left"},
    noop_actions=frozenset({"plan_next_phase"}),
    text_fields=frozenset({"plan_summary", "memory_payload", "hypothesis", "confidence"}),
    main_params=(
        "pool_size",
        "n_sites",
        "budget",
        "target",
        "screen_cost",
        "recontact_cost",
        "enrol_cost",
        "strategy_cost",
        "prescreen_noise_sd",
        "dropout_base",
        "followup_days",
        "site_rate_mean",
        "site_rate_cv",
        "never_enrol_prob",
        "event_rate_per_day",
        "world_types",
    ),
    param_labels={
        "n_sites": "sites",
        "prescreen_noise_sd": "pre-screen noise sd",
        "event_rate_per_day": "events / day (total)",
        "site_rate_mean": "site arrivals / day (mean)",
        "site_rate_cv": "site rate CV",
        "never_enrol_prob": "P(site never enrols)",
    },
    derived_params={"event_rate_per_day": lambda p: float(sum(p["event_rates"].values()))},
    time_unit="day",
    progress_label="net enrolled",
    references="clinbench.references.recruitment_scores",
    charts="clinbench.env.recruitment.charts",
    # experiments/sample_sizes.py on the canonical run: 30 for the heuristic on
    # hard_bench, the widest of the non-learning agents; rounded up
    evaluation_episodes=40,
    # the learners' per-episode score sd on the canonical run: 5 episodes of 180 days
    # give a curve point a median standard error of 0.024 (hcapo) to 0.058 (memexrl),
    # 0.10 at worst; more would cost the default sweep about a minute per 5
    curve_episodes=5,
    # 600 episodes of 180 daily decisions
    training_steps=108_000,
)
