"""The portfolio family's agents, offline predictors and reference planner.

Not registered yet: ``clinbench.agents.portfolio.registration`` registers the online
agents (and the family), and nothing imports it, so the agent registry's package scan
loads this file and finds no agent.
"""
