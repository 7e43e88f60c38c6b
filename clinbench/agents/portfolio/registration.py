"""Registering the portfolio family's agents (importing this module does it): its
``heuristic`` variant and ``repeat_last``; ``random`` is the generic agent. The
package's ``__init__`` imports it.
"""

from clinbench.agents.portfolio.agents import PortfolioHeuristic, PortfolioRepeatLast
from clinbench.agents.registry import register_agent
from clinbench.env.portfolio import registration  # noqa: F401 - the family first

register_agent(PortfolioHeuristic)
register_agent(PortfolioRepeatLast)
