"""The OpenBLAS kernel is pinned, so learning agents give the same numbers on any x86-64 CPU."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from clinbench.numerics import (
    NUMPY_OFF,
    PINNED_KERNEL,
    PINNED_NUMPY,
    _cpu_has_avx2_fma,
    numpy_simd,
)

x86_avx2 = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not _cpu_has_avx2_fma(),
    reason="the pinned kernel needs an x86-64 CPU with AVX2 and FMA",
)


PINS = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")


def kernel_in_fresh_process(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in PINS} | env
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
    # numpy's own SIMD dispatch is pinned too: every cell and the manifest record it
    simd = {read_cell(p)["numpy_simd"] for p in (tmp_path / "runs").glob("*.json")}
    assert simd == ({PINNED_NUMPY} if _has_x86_v3() else {numpy_simd()})
    machine = json.loads((tmp_path / "manifest.json").read_text())["machine"]
    assert machine["numpy_simd"] == numpy_simd() and "cpu" in machine


SHOW_SIMD = "from clinbench.numerics import numpy_simd; print(numpy_simd())"


def _has_x86_v3() -> bool:
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return "X86_V3" in __cpu_dispatch__


@x86_avx2
def test_importing_clinbench_first_pins_numpys_dispatch_to_avx2():
    if not _has_x86_v3():
        pytest.skip("this numpy build has no X86_V3 target")
    assert kernel_in_fresh_process(f"import clinbench, numpy; {SHOW_SIMD}") == PINNED_NUMPY
    # importing numpy first leaves numpy's own choice (AVX-512 where the CPU has it)
    unpinned = kernel_in_fresh_process(f"import numpy, clinbench; {SHOW_SIMD}").split()
    assert PINNED_NUMPY in unpinned and not set(unpinned) & {"X86_V2"}


@x86_avx2
def test_a_users_own_numpy_dispatch_choice_wins():
    show = f"import clinbench, numpy, os; {SHOW_SIMD}"
    # numpy refuses to load with both variables set: clinbench must not add the other one
    enabled = kernel_in_fresh_process(show, NPY_ENABLE_CPU_FEATURES="X86_V3")
    assert enabled == kernel_in_fresh_process(
        f"import numpy; {SHOW_SIMD}", NPY_ENABLE_CPU_FEATURES="X86_V3"
    )
    code = "import clinbench, os; print(os.environ['NPY_DISABLE_CPU_FEATURES'])"
    assert kernel_in_fresh_process(code, NPY_DISABLE_CPU_FEATURES="X86_V4") == "X86_V4"
    assert kernel_in_fresh_process(code) == NUMPY_OFF


def test_numpy_simd_names_the_targets_numpy_dispatches_to():
    """What a cell records changes when numpy's dispatch does (here: switched off)."""
    show = f"import numpy, clinbench; {SHOW_SIMD}"
    default = kernel_in_fresh_process(show)
    from numpy._core._multiarray_umath import __cpu_dispatch__

    assert set(default.split()) <= set(__cpu_dispatch__)
    if not default:
        pytest.skip("numpy dispatches to no SIMD target on this CPU")
    top = default.split()[-1]
    assert top not in kernel_in_fresh_process(show, NPY_DISABLE_CPU_FEATURES=top).split()


@x86_avx2
def test_a_sweep_warns_when_numpy_dispatched_above_the_pin(tmp_path):
    """A user's own ``NPY_DISABLE_CPU_FEATURES`` (here: nothing off) wins, and the sweep
    says its cells may not reproduce the canonical numbers."""
    unpinned = kernel_in_fresh_process(SHOW_SIMD, NPY_DISABLE_CPU_FEATURES="")
    if unpinned == PINNED_NUMPY or PINNED_NUMPY not in unpinned.split():
        pytest.skip("numpy dispatches to nothing above the pinned level on this CPU")
    environ = {k: v for k, v in os.environ.items() if k not in PINS}
    out = subprocess.run(
        [sys.executable, "-m", "clinbench.cli.app", "sweep", "preset=smoke", "agents=[random]",
         "tasks=[easy_bench]", "protocol.seeds=[1]", "--backend", "sequential", "--quiet",
         "--no-report", "--results", str(tmp_path)],
        capture_output=True, text=True, env=environ | {"NPY_DISABLE_CPU_FEATURES": "",
                                                       "COLUMNS": "200"}, check=True,
    )  # fmt: skip
    assert f"not {PINNED_NUMPY}, in this process" in out.stderr
    assert "some cells ran with numpy dispatching to" in out.stderr
    from clinbench.sweep.store import read_cell

    assert {read_cell(p)["numpy_simd"] for p in (tmp_path / "runs").glob("*.json")} == {unpinned}
