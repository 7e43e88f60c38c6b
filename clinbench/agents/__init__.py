"""clinbench agents: the contract, the registry and the baselines (see ``docs/agents.md``)."""

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import (
    agent_entries,
    agent_entry,
    agent_names,
    make_agent,
    register_agent,
)

__all__ = [
    "Agent",
    "AgentContext",
    "agent_entries",
    "agent_entry",
    "agent_names",
    "make_agent",
    "register_agent",
]
