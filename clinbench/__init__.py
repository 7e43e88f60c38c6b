"""clinbench: a benchmark for long-horizon decision agents on simulated clinical trials."""

import importlib
import sys

from clinbench.numerics import pin_blas_kernel

pin_blas_kernel()  # before anything imports numpy (clinbench/numerics.py says why)

__version__ = "0.1.0"

# Importing the package registers the Gymnasium ids (as ``import minigrid`` does), so
# ``gym.make("clinbench:clinbench/Recruitment-easy_bench-v2")`` needs no other import.
# Registering means loading every environment (numpy, scipy, gymnasium: half a second),
# which the command line's help and argument errors must not wait for; so when
# Gymnasium is not loaded yet, the ids are registered the moment it is.
if "gymnasium" in sys.modules:
    import clinbench.env  # noqa: F401
else:
    from clinbench._after_import import after_import

    after_import("gymnasium", "clinbench.env")


def __getattr__(name: str):
    """``clinbench.env`` and the other sub-packages without importing them first."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
