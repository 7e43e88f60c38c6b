"""clinbench: a benchmark for long-horizon decision agents on simulated clinical trials."""

from clinbench.numerics import pin_blas_kernel

pin_blas_kernel()  # before anything imports numpy (clinbench/numerics.py says why)

__version__ = "0.1.0"

# Importing the package registers the Gymnasium ids (as ``import minigrid`` does), so
# ``gym.make("clinbench:clinbench/Recruitment-easy_bench-v2")`` needs no other import.
import clinbench.env  # noqa: F401
