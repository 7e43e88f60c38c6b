"""The clinical-development portfolio family (``portfolio``): an oncology drug program's
trial portfolio, planned every six months from date-gated evidence.

Not registered yet: nothing here calls :func:`clinbench.env.registry.register`, so the
sweep, the CLI and the default configuration do not see it. Import its modules directly
(``clinbench.env.portfolio.simulator``, ``.offline``, ...). This file imports nothing, so
the registry's package scan loads no code of this family.
"""
