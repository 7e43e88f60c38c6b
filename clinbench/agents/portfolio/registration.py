"""Registering the portfolio family's agents (importing this module does it): its
``heuristic`` variant and ``repeat_last``; ``random`` is the generic agent.

Not imported by the package's ``__init__`` while the family itself is unregistered
(``clinbench.env.portfolio.registration``); switching both on is one import in each
``__init__``.
"""

from clinbench.agents.portfolio.agents import PortfolioHeuristic, PortfolioRepeatLast
from clinbench.agents.registry import register_agent
from clinbench.env.portfolio import registration  # noqa: F401 - the family first

register_agent(PortfolioHeuristic)
register_agent(PortfolioRepeatLast)
