"""The clinical-development portfolio family (``portfolio``): an oncology drug program's
trial portfolio, planned every six months from date-gated evidence (docs/environments.md,
Part III).

Not registered yet: registering it is ``clinbench.env.portfolio.registration`` (and
``clinbench.agents.portfolio.registration`` for its agents), which nothing imports, so
the sweep, the CLI and the default configuration do not see it. This file imports
nothing, so the registry's package scan loads no code of this family.
"""
