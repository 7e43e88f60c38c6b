"""The trial_design family's hooks for the generic layers (see :mod:`clinbench.env.family`)."""

from __future__ import annotations

from clinbench.env.family import Family, Metric, OperatingCharacteristic
from clinbench.env.trial_design.tasks import TASK_VERSION, TaskParams

FAMILY = Family(
    name="trial_design",
    task_version=TASK_VERSION,
    observation_fields=(
        "task_id",
        "look",
        "max_looks",
        "weeks",
        "max_weeks",
        "budget_remaining",
        "initial_budget",
        "inclusion_criteria_strictness",
        "cost_per_patient",
        "enrol_per_week",
        "planned_per_arm",
        "ae_threshold",
        "alpha_per_arm",
        "final_analysis",
        "last_error",
        "arms",
        "comparisons",
    ),
    episode_metrics=(
        Metric("null_world", "null world", "rate"),
        Metric("good_world", "an effective and safe dose exists", "rate"),
        Metric("claimed", "success claimed", "rate"),
        Metric("false_claim", "false success claim", "rate"),
        Metric("correct_claim", "correct success claim", "rate"),
        Metric("picked_best", "claimed the best effective and safe dose", "rate"),
        Metric("futility_stop", "stopped for futility", "rate"),
        Metric("safety_stop", "stopped for safety", "rate"),
        Metric("patients", "patients"),
        Metric("weeks", "weeks"),
        Metric("unsafe_patients", "patients on unsafe doses"),
    ),
    operating_characteristics=(
        OperatingCharacteristic(
            "type_i_error", "P(claim | null drug)", "claimed", "null_world", on_null_worlds=True
        ),
        OperatingCharacteristic(
            "power", "P(correct claim | a good dose exists)", "correct_claim", "good_world"
        ),
        OperatingCharacteristic(
            "best_dose",
            "P(best good dose claimed | a good dose exists)",
            "picked_best",
            "good_world",
        ),
        OperatingCharacteristic("false_claims", "P(false claim)", "false_claim"),
        OperatingCharacteristic("safety_stops", "P(safety stop)", "safety_stop"),
        OperatingCharacteristic("patients", "E[patients]", "patients"),
        OperatingCharacteristic("weeks", "E[weeks]", "weeks"),
        OperatingCharacteristic(
            "unsafe_patients", "E[patients on unsafe doses]", "unsafe_patients"
        ),
    ),
    score_part_labels={
        "correct": "correct decision",
        "quality": "arm quality",
        "efficiency": "efficiency",
        "unsafe_exposure": "unsafe exposure",
    },
    step_columns={"patients": "patients", "weeks": "weeks", "max_z": "max z"},
    main_params=(
        "doses",
        "base",
        "emax",
        "ed50",
        "ae_slope",
        "ae_threshold",
        "mcid",
        "budget",
        "max_weeks",
        "max_looks",
        "enrol_rate",
        "scenario_mix",
        "alpha",
        "planned_patients",
    ),
    param_labels={
        "mcid": "min. clinically important difference",
        "enrol_rate": "patients / week (s = 0.5)",
        "scenario_mix": "effective / null / unsafe / weak",
        "planned_patients": "planned patients",
    },
    derived_params={"planned_patients": lambda p: TaskParams(**p).planned_patients},
    time_unit="look",
    progress_label="patients enrolled",
    references="clinbench.references.trial_design_scores",
    charts="clinbench.env.trial_design.charts",
    # experiments/sample_sizes.py on the canonical run: 435 for the heuristic on
    # rare_disease, 473 for klong on efficacy_safety; rounded up
    evaluation_episodes=480,
    # the learners' per-trial score sd on the canonical run, at most 0.40: 50 trials
    # give a curve point a standard error of at most 0.056 (5 gave up to 0.18), for
    # about 0.6 s per learning cell
    curve_episodes=50,
    # ~800 episodes of 3-4 decisions (600 episodes were ~2,200 steps)
    training_steps=3_000,
    # scenario mix (effective, null, unsafe_high, weak): every world null
    null_world_overrides={"scenario_mix": (0.0, 1.0, 0.0, 0.0)},
)
