"""Bit-identical numbers across machines: one OpenBLAS kernel everywhere.

OpenBLAS picks its compute kernels for the CPU it finds when numpy loads it, and the
kernels round differently: on an AVX-512 machine (kernel "SkylakeX") the learning
agents' matrix products differ in the last bits from an AVX2 machine ("Haswell", "Zen"),
and training amplifies that into different policies (measured: hcapo on easy_bench,
seed 1, scores 0.20 with the Haswell kernel and 0.03 with SkylakeX). clinbench therefore
asks OpenBLAS for the Haswell kernel, which every x86-64 CPU with AVX2 and FMA runs, by
setting ``OPENBLAS_CORETYPE`` before numpy is imported. That only works if ``clinbench``
is imported first (the CLI always does); a user's own ``OPENBLAS_CORETYPE`` wins, and
cluster workers started elsewhere need it in their environment (docs/scaling.md).
"""

from __future__ import annotations

import os
import platform
import sys

#: The OpenBLAS kernel the canonical results were computed with.
PINNED_KERNEL = "Haswell"


def _cpu_has_avx2_fma() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def pin_blas_kernel() -> None:
    """Set ``OPENBLAS_CORETYPE`` (unless set) on x86-64 CPUs that can run the pinned kernel."""
    if "numpy" in sys.modules or "OPENBLAS_CORETYPE" in os.environ:
        return
    if platform.machine().lower() in ("x86_64", "amd64") and _cpu_has_avx2_fma():
        os.environ["OPENBLAS_CORETYPE"] = PINNED_KERNEL


def blas_kernel() -> str | None:
    """The kernel OpenBLAS runs in this process (``None`` without OpenBLAS)."""
    from threadpoolctl import threadpool_info

    kernels = [i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"]
    return kernels[0] if kernels else None
