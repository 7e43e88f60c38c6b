"""An example clinbench agent plugin (see ``docs/agents.md``)."""
