"""``manifest.json``: where, when, with what code and libraries a sweep ran."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import clinbench
from clinbench.numerics import blas_kernel, cpu_model, numpy_simd

LIBRARIES = (
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "seaborn",
    "joblib",
    "hydra-core",
    "omegaconf",
    "gymnasium",
    "dask",
    "distributed",
    "typer",
    "rich",
    "jinja2",
    "threadpoolctl",
)


#: Generated artefacts, left out of the dirty check: a sweep writes into them.
GENERATED = ("data", "docs/images", "reports")


def git_state(root: Path) -> dict[str, Any]:
    """Commit sha and whether the sources have uncommitted changes (None outside git).

    Changes under the generated folders (``GENERATED``) do not count: a sweep into the
    canonical results folder rewrites them while it runs.
    """

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], check=False, cwd=root, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    status = git(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        *(f":(exclude){g}" for g in GENERATED),
    )
    return {"sha": sha, "dirty": None if status is None else bool(status)}


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "blas_kernel": blas_kernel(),
        "numpy_simd": numpy_simd(),
    }


def config_hash(resolved: str) -> str:
    return hashlib.sha256(resolved.encode()).hexdigest()[:16]


def manifest(**fields: Any) -> dict[str, Any]:
    root = Path(clinbench.__file__).resolve().parents[1]
    return {
        "clinbench_version": clinbench.__version__,
        "git": git_state(root),
        "libraries": library_versions(),
        "machine": machine(),
        **fields,
    }
