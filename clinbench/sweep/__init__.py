"""The sweep: every selected agent on every task for every seed, in parallel, resumable.

``cells`` expands the grid and runs one cell, ``store`` writes and reads cell files,
``execute`` is the joblib seam (loky, sequential, dask, ray), ``tidy`` rebuilds the
CSVs from the cell files and ``provenance`` writes the manifest.
"""

from clinbench.sweep.execute import SweepOutcome, run_sweep

__all__ = ["SweepOutcome", "run_sweep"]
