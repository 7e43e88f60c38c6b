"""Run an import right after a given module is first imported (a post-import hook)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, trigger: str, then: str) -> None:
        self.trigger, self.then = trigger, then

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if name != self.trigger:
            return None
        sys.meta_path.remove(self)  # once, and no recursion into the real lookup below
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module
        then = self.then

        def exec_module(module: ModuleType) -> None:
            run(module)
            importlib.import_module(then)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def after_import(trigger: str, then: str) -> None:
    """Import ``then`` as soon as ``trigger`` is imported (now, if it already is)."""
    if trigger in sys.modules:
        importlib.import_module(then)
    elif not any(isinstance(f, _AfterImport) and f.trigger == trigger for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(trigger, then))
