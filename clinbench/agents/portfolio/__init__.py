"""The portfolio family's agents, offline predictors and reference planner; importing
the package registers its online agents (``heuristic``'s portfolio variant and
``repeat_last``)."""

from clinbench.agents.portfolio import registration  # noqa: F401
