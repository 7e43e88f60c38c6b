"""Bit-identical numbers across machines: one OpenBLAS kernel, one numpy SIMD level.

OpenBLAS picks its compute kernels for the CPU it finds when numpy loads it, and the
kernels round differently: on an AVX-512 machine (kernel "SkylakeX") the learning
agents' matrix products differ in the last bits from an AVX2 machine ("Haswell", "Zen"),
and training amplifies that into different policies (measured: hcapo on easy_bench,
seed 1, scores 0.20 with the Haswell kernel and 0.03 with SkylakeX). clinbench therefore
asks OpenBLAS for the Haswell kernel, which every x86-64 CPU with AVX2 and FMA runs, by
setting ``OPENBLAS_CORETYPE`` before numpy is imported. That only works if ``clinbench``
is imported first (the CLI always does); a user's own ``OPENBLAS_CORETYPE`` wins, and
cluster workers started elsewhere need it in their environment (docs/scaling.md).

torch (the optional stable-baselines3 agents) dispatches its CPU kernels the same way
(AVX-512 where it finds it), so clinbench also pins torch's kernels to AVX2
(``ATEN_CPU_CAPABILITY``) and asks MKL for AVX2 results (``MKL_CBWR``); each cell
records the capability torch ran with (:func:`torch_capability`).

numpy's own ufuncs dispatch the same way: on an AVX-512 CPU, ``exp`` and ``log`` run
AVX-512 code that rounds differently from the AVX2 code (measured: the learning agents'
recruitment cells and the dose-finding observation's ``prob_better`` change in the last
bits, and training amplifies that). clinbench switches numpy's AVX-512 targets off
(``NPY_DISABLE_CPU_FEATURES``), so every x86-64 CPU with AVX2 and FMA dispatches to the
same ``X86_V3`` code; each cell records what numpy dispatched to (:func:`numpy_simd`).
"""

from __future__ import annotations

import os
import platform
import sys

#: The OpenBLAS kernel the canonical results were computed with.
PINNED_KERNEL = "Haswell"
#: torch's CPU capability (and MKL's reproducibility branch) of the canonical results.
PINNED_TORCH = "AVX2"
#: numpy's dispatch targets above AVX2 + FMA (``X86_V3``), switched off for the same reason.
NUMPY_OFF = "X86_V4 AVX512_ICL AVX512_SPR"
#: What numpy dispatches to with them off, on any CPU that runs the pinned kernels.
PINNED_NUMPY = "X86_V3"


def _cpu_has_avx2_fma() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def pin_worker_environment() -> None:
    """Put the pins in ``os.environ`` for worker processes started from now on, even if
    this process loaded numpy before clinbench (its own kernel is then fixed already)."""
    if platform.machine().lower() in ("x86_64", "amd64") and _cpu_has_avx2_fma():
        os.environ.setdefault("OPENBLAS_CORETYPE", PINNED_KERNEL)
        os.environ.setdefault("ATEN_CPU_CAPABILITY", PINNED_TORCH.lower())
        os.environ.setdefault("MKL_CBWR", PINNED_TORCH)
        _pin_numpy_simd()


def _pin_numpy_simd() -> None:
    # numpy refuses to load with both variables set, so a user's own choice of either wins.
    if "NPY_ENABLE_CPU_FEATURES" not in os.environ:
        os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", NUMPY_OFF)


def pin_blas_kernel() -> None:
    """Set ``OPENBLAS_CORETYPE``, ``ATEN_CPU_CAPABILITY``, ``MKL_CBWR`` and
    ``NPY_DISABLE_CPU_FEATURES`` (each unless already set) on x86-64 CPUs that can run
    the pinned kernels."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not _cpu_has_avx2_fma():
        return
    if "torch" not in sys.modules:
        os.environ.setdefault("ATEN_CPU_CAPABILITY", PINNED_TORCH.lower())
        os.environ.setdefault("MKL_CBWR", PINNED_TORCH)
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_CORETYPE", PINNED_KERNEL)
        _pin_numpy_simd()


def blas_kernel() -> str | None:
    """The kernel OpenBLAS runs in this process (``None`` without OpenBLAS)."""
    from threadpoolctl import threadpool_info

    kernels = [
        i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"
    ]
    return kernels[0] if kernels else None


def torch_capability() -> str | None:
    """The CPU capability torch dispatches to in this process (``None`` if torch is not loaded)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return str(torch.backends.cpu.get_cpu_capability())


def numpy_simd() -> str:
    """The SIMD targets numpy's own ufuncs dispatch to in this process (those of its
    ``__cpu_dispatch__`` this CPU has and has not switched off): :data:`PINNED_NUMPY`
    when the pin is in force on an AVX2 + FMA CPU, e.g. ``"X86_V3 X86_V4 AVX512_ICL"``
    on an AVX-512 CPU without it. Each cell records it."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # pragma: no cover  (numpy < 2)
        return ""
    return " ".join(t for t in __cpu_dispatch__ if __cpu_features__.get(t))


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo``), for the manifest."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next((line for line in f if line.startswith("model name")), "")
    except OSError:
        return None
    return line.partition(":")[2].strip() or None
