"""The OpenBLAS kernel is pinned, so learning agents give the same numbers on any x86-64 CPU."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from clinbench.numerics import PINNED_KERNEL, _cpu_has_avx2_fma, numpy_simd

x86_avx2 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not _cpu_has_avx2_fma(),
    reason="the pinned kernel needs an x86-64 CPU with AVX2 and FMA",
)


def kernel_in_fresh_process(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"} | env
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True
    )
    return out.stdout.strip()


SHOW = "from clinbench.numerics import blas_kernel; print(blas_kernel())"


@x86_avx2
def test_importing_clinbench_first_pins_the_kernel():
    assert kernel_in_fresh_process(f"import clinbench, numpy; {SHOW}") == PINNED_KERNEL


@x86_avx2
def test_a_users_own_choice_wins():
    assert (
        kernel_in_fresh_process(f"import clinbench, numpy; {SHOW}", OPENBLAS_CORETYPE="Sandybridge")
        == "Sandybridge"
    )


@x86_avx2
def test_sweep_workers_run_the_pinned_kernel(tmp_path):
    from clinbench.config import load
    from clinbench.sweep import run_sweep
    from clinbench.sweep.store import read_cell

    cfg = load(
        [
            "preset=smoke",
            "agents=[hcapo]",
            "tasks=[easy_bench]",
            "protocol.seeds=[1,2]",
            f"results={tmp_path}",
        ]
    )
    assert run_sweep(cfg, show_progress=False).ok
    kernels = {read_cell(p)["blas_kernel"] for p in (tmp_path / "runs").glob("*.json")}
    assert kernels == {PINNED_KERNEL}
    # numpy's own SIMD dispatch is not pinned: every cell and the manifest record it
    simd = {read_cell(p)["numpy_simd"] for p in (tmp_path / "runs").glob("*.json")}
    assert simd == {numpy_simd()}
    machine = json.loads((tmp_path / "manifest.json").read_text())["machine"]
    assert machine["numpy_simd"] == numpy_simd() and "cpu" in machine


def test_numpy_simd_names_the_targets_numpy_dispatches_to():
    """What a cell records changes when numpy's dispatch does (here: switched off)."""
    show = "import clinbench; from clinbench.numerics import numpy_simd; print(numpy_simd())"
    default = kernel_in_fresh_process(show)
    from numpy._core._multiarray_umath import __cpu_dispatch__

    assert default == numpy_simd()
    assert set(default.split()) <= set(__cpu_dispatch__)
    if not default:
        pytest.skip("numpy dispatches to no SIMD target on this CPU")
    top = default.split()[-1]
    assert top not in kernel_in_fresh_process(show, NPY_DISABLE_CPU_FEATURES=top).split()
