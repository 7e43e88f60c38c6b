"""clinbench agents: the registry and the baselines (see ``docs/agents.md``)."""

from clinbench.agents.base import Agent, agent_entries, agent_names, make_agent, register_agent

__all__ = ["Agent", "agent_entries", "agent_names", "make_agent", "register_agent"]
