"""The generic layers know no environment by name (spec trial_design_env.md section 9).

Every environment family plugs in through its :class:`~clinbench.env.family.Family`
hooks. These tests read the sources of the generic modules and fail on any identifier,
key or import naming a registered family, its tasks, its observation fields or its
episode metrics. Prose (docstrings, help examples, messages: strings with a space) and
comments may mention them; code may not.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

import clinbench
from clinbench.env import spec
from clinbench.env.registry import env_ids, families, family

ROOT = Path(clinbench.__file__).parent
#: The layers every environment family shares.
GENERIC = [
    *ROOT.glob("*.py"),
    *(ROOT / "env").glob("*.py"),
    *(ROOT / "references").glob("__init__.py"),
    *(
        f
        for layer in ("sweep", "stats", "report", "charts", "cli", "serve")
        for f in (ROOT / layer).rglob("*.py")
    ),
]


def family_words() -> dict[str, set[str]]:
    """Per family, the names that would show a generic module knows it."""
    out: dict[str, set[str]] = {}
    for name in families():
        fam = family(name)
        words = {name, *fam.observation_fields, *(m.name for m in fam.episode_metrics)}
        words |= set(fam.step_columns) | set(fam.noop_actions)
        words |= {spec(i).task for i in env_ids() if spec(i).env == name}
        out[name] = words
    return out


def code_tokens(source: str) -> list[tuple[int, str]]:
    """(line, text) of the names and the identifier-like strings of ``source``."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            out.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING:
            body = re.sub(r"^[a-zA-Z]*['\"]+|['\"]+$", "", tok.string)
            if " " not in body and "\n" not in body:  # a key or a module path, not prose
                out += [(tok.start[0], w) for w in re.split(r"[^A-Za-z0-9_]+", body) if w]
    return out


def test_the_generic_module_list_is_not_empty():
    assert len(GENERIC) > 30
    assert ROOT / "episode.py" in GENERIC and ROOT / "env" / "checker.py" in GENERIC


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_generic_module_names_no_environment(path):
    words = family_words()
    hits = [
        f"line {line}: {text!r} ({fam})"
        for line, text in code_tokens(path.read_text())
        for fam, names in words.items()
        if text in names
    ]
    assert not hits, f"{path.relative_to(ROOT)} knows an environment by name: " + "; ".join(hits)


def test_the_scan_would_catch_a_family_name():
    source = (
        'x = FIELDS["recruitment"]  # recruitment\n"a recruitment"\n'
        "import clinbench.env.recruitment\n"
    )
    tokens = [t for _, t in code_tokens(source)]
    assert tokens.count("recruitment") == 2  # the key and the import, not the comment or prose
    assert "clinbench.env.recruitment" in imported_modules(source)


def imported_modules(source: str) -> list[str]:
    """Every module an ``import`` or ``from ... import`` statement of ``source`` names."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return out


@pytest.mark.parametrize("path", GENERIC, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_generic_module_imports_no_family_package(path):
    """A family is reached only through the registry (``Family`` hooks, module paths)."""
    packages = {f"clinbench.env.{d.name}" for d in (ROOT / "env").iterdir() if d.is_dir()}
    packages |= {f"clinbench.references.{p.stem}" for p in (ROOT / "references").glob("*.py")}
    packages -= {"clinbench.env.__pycache__", "clinbench.references.__init__"}
    bad = [
        m
        for m in imported_modules(path.read_text())
        if any(m == p or m.startswith(p + ".") for p in packages)
    ]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
