"""The ``llm`` agent: a language model over an OpenAI-compatible endpoint (extra ``llm``).

:mod:`clinbench.llm.agent` is the agent, :mod:`clinbench.llm.tools` the tool schemas
generated from a family's action type and :mod:`clinbench.llm.render` the compact
observation text. It enters the registry through the ``clinbench.agents`` entry-point
group, like any plugin.
"""
