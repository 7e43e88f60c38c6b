"""The trial_design family's own agents (its ``heuristic``, ``fixed_design``) and its
reference planner; the learners play it through its macro-actions."""

from clinbench.agents.trial_design import fixed_design, heuristic  # noqa: F401
