"""The clinical-development portfolio family (``portfolio``): an oncology drug program's
trial portfolio, planned every six months from date-gated evidence (docs/environments.md,
Part III). Importing the package registers the family and its online tasks.
"""

from clinbench.env.portfolio import registration  # noqa: F401
