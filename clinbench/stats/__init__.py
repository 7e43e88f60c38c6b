"""Statistics of the benchmark report: small pure functions over numpy arrays.

One module per concept. Every bootstrap takes a ``numpy.random.Generator`` (or a seed)
explicitly; nothing touches the global RNG.
"""

from clinbench.stats.aggregate import (
    AGGREGATES,
    iqm,
    optimality_gap,
    per_task,
    performance_profile_ci,
    score_distribution,
    stratified_bootstrap,
    stratified_bootstrap_ci,
)
from clinbench.stats.aggregate import mean as aggregate_mean
from clinbench.stats.aggregate import median as aggregate_median
from clinbench.stats.effect_sizes import (
    EFFECT_SIZES,
    aggregate_probability_of_improvement_ci,
    cohens_dz,
    hedges_g,
    hedges_gz,
    hedges_j,
    mean_probability_of_improvement,
    noncentrality_interval,
    probability_of_improvement,
    probability_of_improvement_ci,
)
from clinbench.stats.equivalence import TOST, equivalent_at, tost_paired, tost_welch
from clinbench.stats.floors import (
    family_can_reach_alpha,
    floor_warning,
    mann_whitney_floor,
    wilcoxon_floor,
)
from clinbench.stats.hypothesis_tests import (
    NO_VARIANCE,
    T_TESTS,
    mann_whitney,
    paired,
    welch,
    wilcoxon,
)
from clinbench.stats.interaction import repeated_measures_f
from clinbench.stats.intervals import clopper_pearson, percentile_interval, summary, t_interval
from clinbench.stats.multiple import holm, holm_reject
from clinbench.stats.power import (
    PLANNING,
    minimum_detectable_effect,
    paired_minimum_detectable_effect,
    paired_power,
    paired_seeds_needed,
    seeds_needed,
    two_sample_power,
)
from clinbench.stats.ranking import average_ranks, friedman, nemenyi_cd, nemenyi_q, rank_ranges
from clinbench.stats.trend import budget_to_beat, end_trend, ols_slope

__all__ = [
    "AGGREGATES",
    "EFFECT_SIZES",
    "NO_VARIANCE",
    "PLANNING",
    "TOST",
    "T_TESTS",
    "aggregate_mean",
    "aggregate_median",
    "aggregate_probability_of_improvement_ci",
    "average_ranks",
    "budget_to_beat",
    "clopper_pearson",
    "cohens_dz",
    "end_trend",
    "equivalent_at",
    "family_can_reach_alpha",
    "floor_warning",
    "friedman",
    "hedges_g",
    "hedges_gz",
    "hedges_j",
    "holm",
    "holm_reject",
    "iqm",
    "mann_whitney",
    "mann_whitney_floor",
    "mean_probability_of_improvement",
    "minimum_detectable_effect",
    "nemenyi_cd",
    "nemenyi_q",
    "noncentrality_interval",
    "ols_slope",
    "optimality_gap",
    "paired",
    "paired_minimum_detectable_effect",
    "paired_power",
    "paired_seeds_needed",
    "per_task",
    "percentile_interval",
    "performance_profile_ci",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "rank_ranges",
    "repeated_measures_f",
    "score_distribution",
    "seeds_needed",
    "stratified_bootstrap",
    "stratified_bootstrap_ci",
    "summary",
    "t_interval",
    "tost_paired",
    "tost_welch",
    "two_sample_power",
    "welch",
    "wilcoxon",
    "wilcoxon_floor",
]
