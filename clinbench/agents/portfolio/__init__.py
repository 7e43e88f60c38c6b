"""The portfolio family's agents and offline predictors (not registered yet).

Nothing here is decorated with ``register_agent``, so the agent registry's package scan
loads this file and finds no agent: import the modules directly
(``clinbench.agents.portfolio.heuristic``, ...).
"""
