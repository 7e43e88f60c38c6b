"""Which agents exist and where they come from: built-ins, entry points, spec strings.

An agent is named on ``--agents`` in one of three ways:

- a built-in name (``heuristic``): a class in :mod:`clinbench.agents` decorated with
  :func:`register_agent`;
- an entry-point name: an installed package declares
  ``[project.entry-points."clinbench.agents"] mymethod = "mypkg.agents:MyMethod"``
  (clinbench declares its optional ``ppo`` and ``maskable_ppo`` the same way);
- a spec string, ``mypkg.agents:MyMethod`` or ``path/to/file.py:MyMethod``, which needs no
  packaging; the agent's name in results is the class's ``name``.

Every worker resolves an agent by the same string (:attr:`AgentEntry.ref`), never by a
pickled class, so plugins load under loky, dask and ray alike. :attr:`AgentEntry.code`
identifies a plugin's code (distribution and version, plus a hash of its package's
sources) for the cell hash: editing a plugin re-runs its cells and nothing else.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import os
import pkgutil
import sys
import traceback
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.agents.variants import FamilyVariants, family_variants, parameters

#: The entry-point group plugins declare their agents in.
ENTRY_POINT_GROUP = "clinbench.agents"
#: The six baselines of the benchmark, in table order (``grpo`` is their common parent,
#: registered for ablations but not swept by default).
BASELINES: tuple[str, ...] = ("heuristic", "random", "hcapo", "mira", "klong", "memexrl")
#: clinbench's optional reference learners (entry points), listed in this order after
#: the built-ins; other plugins follow by name.
REFERENCE_LEARNERS: tuple[str, ...] = ("ppo", "maskable_ppo")


class AgentLoadError(ValueError):
    """An agent that cannot be loaded or is not installed (the CLI exits 2 with it).

    ``details`` holds the traceback of the plugin's own import error, if any
    (``clinbench --debug`` prints it)."""

    def __init__(self, message: str, details: str | None = None):
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class AgentEntry:
    """One loadable agent: its name, how to load it, where it comes from, whether it can run."""

    name: str
    #: what a worker resolves: the name (built-in, entry point) or the spec string
    ref: str
    #: "clinbench", "<distribution> <version>", or the module / file of a spec string
    source: str
    description: str
    learning: bool
    envs: tuple[str, ...]
    #: the class, or None when it is unavailable
    factory: type[Agent] | None
    #: why it cannot run and how to fix it (None when it can)
    unavailable: str | None = None
    #: identity of the code outside clinbench's own cell code ("" for built-ins)
    code: str = ""
    #: the traceback of a plugin's import error (shown with ``clinbench --debug``)
    details: str | None = field(default=None, compare=False, repr=False)

    def require(self) -> type[Agent]:
        """The class, or AgentLoadError saying why it cannot run."""
        if self.factory is None or self.unavailable:
            raise AgentLoadError(
                f"agent {self.name!r} is unavailable: {self.unavailable}", self.details
            )
        return self.factory


_BUILTIN: dict[str, type[Agent]] = {}
#: Built-in names with one class per environment family (e.g. ``heuristic``).
_VARIANTS: dict[str, dict[str, type[Agent]]] = {}


def register_agent(cls: type[Agent]) -> type[Agent]:
    """Class decorator of the built-in agents: add ``cls`` under ``cls.name``.

    Two classes may share a name when they play disjoint environment families (a
    family's own ``heuristic``): the name then builds the class of the context's family
    (:class:`FamilyVariants`). Only for clinbench's own agents; plugins declare an
    entry point instead."""
    if cls.__module__.split(".")[0] != "clinbench":
        raise AgentLoadError(
            f"register_agent is for clinbench's own agents; declare {cls.__qualname__} in the "
            f"'{ENTRY_POINT_GROUP}' entry-point group instead (docs/agents.md)"
        )
    old = _BUILTIN.get(cls.name, cls)
    if old is cls:
        _BUILTIN[cls.name] = cls
        return cls
    variants = _VARIANTS.setdefault(cls.name, {f: old for f in old.envs})
    if "*" in cls.envs or "*" in variants or set(cls.envs) & set(variants):
        raise AgentLoadError(f"two built-in agents are named {cls.name!r} for the same family")
    variants.update(dict.fromkeys(cls.envs, cls))
    _BUILTIN[cls.name] = family_variants(cls.name, variants)
    return cls


def _load_builtin() -> None:
    import clinbench.agents.grpo
    import clinbench.agents.hcapo
    import clinbench.agents.heuristic
    import clinbench.agents.klong
    import clinbench.agents.memexrl
    import clinbench.agents.mira
    import clinbench.agents.random_agent  # noqa: F401

    # each environment family's own agents: the sub-packages but the shared core
    here = [str(Path(__file__).parent)]
    for m in pkgutil.iter_modules(here):
        if m.ispkg and m.name != "core":
            importlib.import_module(f"clinbench.agents.{m.name}")


# ---------------------------------------------------------------------- code identity
def _digest(files: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _site_dir(path: Path) -> bool:
    return path.name in ("site-packages", "dist-packages")


def source_digest(cls: type) -> str:
    """A hash of the plugin's sources: every ``.py`` file of its top-level package (all
    portions of a namespace package), or for a single-file module or a ``file.py:Class``
    spec, the file and every module loaded from its folder (its helpers)."""
    top = sys.modules[cls.__module__.split(".")[0]]
    paths = [Path(p).resolve() for p in getattr(top, "__path__", [])]
    if paths:
        h = hashlib.sha256()
        for root in sorted(paths):
            h.update(_digest(list(root.rglob("*.py")), root).encode())
        return h.hexdigest()[:12]
    path = Path(inspect.getfile(cls)).resolve()
    folder = path.parent
    files = {path}
    if not _site_dir(folder):
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if file and file.endswith(".py") and Path(file).resolve().parent == folder:
                files.add(Path(file).resolve())
    return _digest(sorted(files), folder)


@cache
def _packages_distributions(path: tuple[str, ...]) -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _distribution_of(module: str) -> str:
    """``"<distribution> <version>"`` of an installed top-level module, else ""."""
    names = _packages_distributions(tuple(sys.path)).get(module.split(".")[0], [])
    for name in names:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:  # pragma: no cover - stale metadata
            continue
    return ""


#: Modules of ``clinbench/agents/`` that only resolve names to the classes whose code is
#: hashed (the registry imports every agent: the scan does not follow them).
_NAMING_MODULES = ("registry", "__init__")


@cache
def _agents_folder() -> Path:
    return Path(__file__).resolve().parent


def _module_file(module: str) -> Path | None:
    """The source file of a ``clinbench.agents`` module (package or not), else None (the
    package ``clinbench.agents`` itself is the shared API: None)."""
    if not module.startswith("clinbench.agents."):
        return None
    rel = Path(*module.split(".")[2:])
    folder = _agents_folder()
    for path in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package_of(path: Path) -> str | None:
    """The dotted package a clinbench source file belongs to (for relative imports)."""
    root = _agents_folder().parent
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        return None
    parts = ["clinbench", *rel.parts[:-1]]
    return ".".join(parts)


def _own(path: Path) -> bool:
    """A module directly in ``clinbench/agents/`` that is one agent's code (a family's
    sub-package is family code, the shared API is cell code)."""
    from clinbench.sweep.cells import SHARED_AGENT_MODULES  # cell code: hashed there

    shared = (*SHARED_AGENT_MODULES, *_NAMING_MODULES)
    return path.parent == _agents_folder() and path.stem not in shared


#: Calls that build or resolve an agent by name (klong's teacher): a constant name,
#: positional or ``ref=``, is an agent the file uses.
_BY_NAME = ("make_agent", "agent_entry")


def _static_uses(
    path: Path, text: str | None = None
) -> tuple[frozenset[str], frozenset[str]]:
    """(clinbench.agents modules imported, agent names built by name, e.g.
    ``make_agent("heuristic", ...)``) by one source file (or ``text`` as if it were that
    file), read statically; relative imports are resolved against the file's package."""
    return _uses_in_source(_package_of(path), path.read_text() if text is None else text)


@lru_cache(maxsize=1024)
def _uses_in_source(package: str | None, source: str) -> tuple[frozenset[str], frozenset[str]]:
    """:func:`_static_uses` of ``source`` in ``package``, kept per text: planning a sweep
    asks for the same modules once per agent, and parsing them was most of its time."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                if package is None:
                    continue
                parent = package.split(".")
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            modules.add(base)
            modules.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", None
            )
            if func == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                modules.add(str(node.args[0].value))
            if func not in _BY_NAME:
                continue
            given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "ref")]
            names.update(str(a.value) for a in given if isinstance(a, ast.Constant))
    return frozenset(modules), frozenset(names)


def agent_source_files(
    classes: list[type] | tuple[type, ...] = (), files: list[Path] | tuple[Path, ...] = ()
) -> list[Path]:
    """The agent modules of ``clinbench/agents/*.py`` (the shared API left out) that the
    classes and source files run, found statically and transitively: each class's and
    its bases' modules, what each module imports from ``clinbench.agents``, and the
    built-in agents it builds by name (``make_agent("heuristic", ...)``, klong's
    teacher). A test traces the files each registered agent's cell executes against it."""
    seen: set[Path] = set()
    todo = list(files)

    def add_class(klass: type) -> None:
        for k in getattr(klass, "variants", {}).values() or [klass]:
            for base in k.__mro__:
                path = _module_file(base.__module__)
                if path is not None:
                    todo.append(path)

    for cls in classes:
        add_class(cls)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.parent == _agents_folder() and not _own(path):
            continue  # the shared API: cell code, and the registry imports every agent
        modules, names = _static_uses(path)
        todo += [f for m in modules if (f := _module_file(m)) is not None]
        for name in names:
            _load_builtin()
            if name in _BUILTIN:
                add_class(_BUILTIN[name])
    return sorted(p for p in seen if _own(p))


def plugin_code(cls: type[Agent]) -> str:
    """The code identity of an agent class. A built-in's: a hash of its own modules
    (:func:`agent_source_files`; the shared API and its family's package are the cell
    code of ``clinbench.sweep.cells``), so editing one agent re-runs its cells only;
    with the libraries it requires."""
    required = " ".join(f"{d}=={metadata.version(d)}" for d in getattr(cls, "requires", ()))
    if cls.__module__.startswith(("clinbench.agents.", "clinbench.env.")):
        return " ".join(p for p in (_agents_part(cls, [], "source"), required) if p)
    if cls.__module__.split(".")[0] == "clinbench":  # e.g. clinbench.llm: its own package
        folder = Path(inspect.getfile(cls)).resolve().parent
        source = _digest(sorted(folder.glob("*.py")), folder)
        agents = _agents_part(cls, sorted(folder.glob("*.py")))
        return " ".join(p for p in (f"source {source}", agents, required) if p)
    # a plugin built on a built-in agent (a subclass, or one it builds by name) runs
    # that agent's modules too
    agents = _agents_part(cls, [Path(inspect.getfile(cls)).resolve()])
    parts = [_distribution_of(cls.__module__), source_digest(cls), agents, required]
    return " ".join(p for p in parts if p)


def _agents_part(cls: type, files: list[Path], label: str = "agents") -> str:
    """``"<label> <digest>"`` of the agent modules ``cls`` and ``files`` use ("" if none)."""
    used = agent_source_files([cls], files)
    return f"{label} {_digest(used, _agents_folder())}" if used else ""


# ---------------------------------------------------------------------- discovery
def _missing_requirements(cls: type[Agent]) -> str | None:
    """The install hint when a library the class requires is not importable."""
    missing = [
        m for m in getattr(cls, "requires_modules", ()) if importlib.util.find_spec(m) is None
    ]
    if not missing:
        return None
    hint = getattr(cls, "install_hint", "")
    return f"needs {', '.join(missing)} (not installed){': ' + hint if hint else ''}"


def _entry(name: str, ref: str, source: str, cls: type[Agent]) -> AgentEntry:
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise AgentLoadError(f"agent {ref!r} is {cls!r}, not a subclass of clinbench.agents.Agent")
    unavailable = _missing_requirements(cls)
    return AgentEntry(
        name=name,
        ref=ref,
        source=source,
        description=getattr(cls, "description", "") or (inspect.getdoc(cls) or "").split("\n")[0],
        learning=bool(getattr(cls, "learning", False)),
        envs=tuple(getattr(cls, "envs", ("*",))),
        factory=cls,
        unavailable=unavailable,
        code="" if unavailable else plugin_code(cls),
    )


@cache
def _entry_points(path: tuple[str, ...]) -> tuple[metadata.EntryPoint, ...]:
    """The group's entry points for this ``sys.path`` (cached per path, so a package
    installed into a new path entry is found)."""
    return tuple(sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name))


def entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in _entry_points(tuple(sys.path))}


def _ep_source(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else ep.value


def _from_entry_point(ep: metadata.EntryPoint) -> AgentEntry:
    try:
        cls = ep.load()
    except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's
        return AgentEntry(
            ep.name,
            ep.name,
            _ep_source(ep),
            "",
            False,
            ("*",),
            None,
            unavailable=f"entry point {ep.name} = {ep.value!r} ({_ep_source(ep)}) "
            f"failed to import: "
            f"{type(exc).__name__}: {exc}",
            details=traceback.format_exc(),
        )
    return _entry(ep.name, ep.name, _ep_source(ep), cls)


#: Plugin files are imported as modules named this plus a hash of their path.
PLUGIN_MODULE_PREFIX = "clinbench_plugin_"


@cache
def load_plugin_file(path: str) -> Any:
    """Import a plugin file once per process, under a stable module name."""
    module_name = PLUGIN_MODULE_PREFIX + hashlib.sha256(path.encode()).hexdigest()[:10]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"cannot import {path!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def is_spec_string(ref: str) -> bool:
    return ":" in ref


def _from_spec_string(ref: str) -> AgentEntry:
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise AgentLoadError(
            f"agent spec {ref!r} must be 'module:Class' or 'path/to/file.py:Class'"
        )
    try:
        if target.endswith(".py"):
            path = Path(target).expanduser().resolve()
            if not path.is_file():
                raise AgentLoadError(f"agent spec {ref!r}: no such file {str(path)!r}")
            module, ref, source = load_plugin_file(str(path)), f"{path}:{attr}", str(path)
        else:
            # As ``python -m`` would: the working directory is importable (the console
            # script does not put it on sys.path; loky workers share the directory).
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.append(os.getcwd())
            module, source = importlib.import_module(target), f"module {target}"
        cls = getattr(module, attr)
    except AgentLoadError:
        raise
    except Exception as exc:
        raise AgentLoadError(
            f"agent spec {ref!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise AgentLoadError(
            f"agent class {ref!r} has no string attribute 'name' (its name in results)"
        )
    if _dist := _distribution_of(module.__name__):
        source = f"{source} ({_dist})"
    return _entry(name, ref, source, cls)


# ---------------------------------------------------------------------- the public API
def agent_entries() -> list[AgentEntry]:
    """Every known agent: built-ins (baselines first, in table order), then entry points.

    Entry points named like a built-in are reported as unavailable (a clash)."""
    _load_builtin()
    order = sorted(
        _BUILTIN, key=lambda n: (BASELINES.index(n) if n in BASELINES else len(BASELINES), n)
    )
    out = [_entry(n, n, "clinbench", _BUILTIN[n]) for n in order]
    eps = entry_points()
    order_eps = sorted(
        eps,
        key=lambda n: (
            REFERENCE_LEARNERS.index(n) if n in REFERENCE_LEARNERS else len(REFERENCE_LEARNERS),
            n,
        ),
    )
    for name, ep in ((n, eps[n]) for n in order_eps):
        if name in _BUILTIN:
            out.append(
                AgentEntry(
                    name,
                    name,
                    _ep_source(ep),
                    "",
                    False,
                    ("*",),
                    None,
                    unavailable=(
                        f"entry point {name!r} ({_ep_source(ep)}) clashes with the built-in agent"
                    ),
                )
            )
        else:
            out.append(_from_entry_point(ep))
    return out


def agent_names() -> list[str]:
    """Names of the agents that can run here (unavailable ones are left out)."""
    return [e.name for e in agent_entries() if e.unavailable is None]


def agent_entry(ref: str) -> AgentEntry:
    """The entry of a built-in name, an entry-point name or a spec string.

    Raises AgentLoadError (unknown names list the valid ones); the entry may still be
    unavailable (see :meth:`AgentEntry.require`)."""
    _load_builtin()
    if ref in _BUILTIN:
        return _entry(ref, ref, "clinbench", _BUILTIN[ref])
    if is_spec_string(ref):
        entry = _from_spec_string(ref)
        if entry.name in _BUILTIN or entry.name in entry_points():
            raise AgentLoadError(
                f"agent {ref!r} is named {entry.name!r}, which is already an agent; "
                "give its class another name"
            )
        return entry
    eps = entry_points()
    if ref in eps:
        return _from_entry_point(eps[ref])
    valid = [e.name for e in agent_entries() if e.unavailable is None]
    raise AgentLoadError(
        f"unknown agent {ref!r}; valid: {', '.join(valid)} "
        "(or a spec string 'module:Class' / 'file.py:Class')"
    )


def make_agent(ref: str, context: AgentContext, **config: Any) -> Agent:
    """Build agent ``ref`` from a task's public context; unknown names list the valid ones."""
    return agent_entry(ref).require()(context, **config)


def agent_parameters(entry: AgentEntry) -> dict[str, Any]:
    """The hyper-parameters an agent accepts and their defaults, read from the
    constructors along its class hierarchy (the context, the first argument after
    ``self``, and ``**config`` excluded)."""
    return parameters(entry.require())


def family_parameters(entry: AgentEntry, family: str, params: dict[str, Any]) -> dict[str, Any]:
    """The part of ``params`` the agent takes on ``family``: all of them, except for a
    name with one class per family, whose variant takes only its own."""
    cls = entry.factory
    if cls is None or not issubclass(cls, FamilyVariants) or family not in cls.variants:
        return dict(params)
    own = parameters(cls.variants[family])
    return {k: v for k, v in params.items() if k in own}
