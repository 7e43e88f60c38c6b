"""Helpers several test files share (importable: the tests folder is on ``sys.path``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import numpy as np


def load_script(path: Path) -> ModuleType:
    """A script outside the package (``experiments/*.py``, ``benchmarks/*.py``) as a
    module, without running its ``main``."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clinbench_sources_run(call: Callable[[], Any]) -> set[str]:
    """The clinbench sources (relative to the package) whose functions ``call`` runs, as
    the profiler sees them: what a code identity must cover."""
    import clinbench

    root = Path(clinbench.__file__).resolve().parent
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return {
        Path(f).resolve().relative_to(root).as_posix()
        for f in seen
        if Path(f).resolve().is_relative_to(root)
    }


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, arrays by dtype, shape and bits."""
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, MappingProxyType)):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and np.isnan(a):
        return bool(np.isnan(b))
    return a == b


def synthetic_manifest(grid: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest of a hand-made results folder (report tests): ``grid`` and ``cells``
    as given, provenance fields filled with placeholders."""
    return {
        "grid": grid,
        "cells": cells,
        "protocol": {"train_steps": 0, "eval_episodes": 2, "curve_points": 1},
        "code": "test",
        "clinbench_version": "test",
        "config_hash": "test",
        "git": {"sha": None, "dirty": False},
        "machine": {"machine": "test", "cores": 1, "python": "3"},
        "backend": "sequential",
        "jobs": 1,
        "libraries": {},
        "started": "-",
        "finished": "-",
        "wall_seconds": 0.0,
    }


def rliable_library() -> Any:
    """``rliable.library`` under the pinned stack. rliable 1.2.0 requires arch < 8, and
    arch 7.2.0 calls pandas' private ``deprecate_kwarg`` with the pandas-2 signature,
    which pandas 3.1 changed (a warning class first): give it that class, then import."""
    from pandas.util import _decorators

    original = _decorators.deprecate_kwarg
    if getattr(original, "clinbench_shim", False) is False:

        def shim(*args, **kwargs):
            if args and isinstance(args[0], str):
                args = (FutureWarning, *args)
            return original(*args, **kwargs)

        shim.clinbench_shim = True
        _decorators.deprecate_kwarg = shim
    import importlib

    return importlib.import_module("rliable.library")
