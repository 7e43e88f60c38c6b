"""Every ```bash and ```python block of README.md and docs/*.md runs, or says why it
cannot run here in an HTML comment right before it: ``<!-- skip-snippet: reason -->``
(full-protocol sweeps, servers, clusters, API keys, extras).

A file's Python blocks run in order in one interpreter, as a reader runs them (a later
block may use an earlier one's names). A bash block runs with ``bash -e`` from the
repository, ``clinbench`` and ``python`` being this interpreter, and ``/tmp/`` a
temporary folder of the test's own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "py": "python"}
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
MARK = re.compile(r"^<!--\s*skip-snippet:(.*?)-->\s*$")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    language: str
    code: str
    skip: str | None  # the reason given, when marked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(page: Path) -> list[Snippet]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        language = LANGUAGES.get(m.group(1).lower())
        if language is None:
            continue
        before = text[: m.start()].rstrip("\n").splitlines()
        mark = MARK.match(before[-1].strip()) if before else None
        line = text.count("\n", 0, m.start()) + 1
        found.append(Snippet(page, line, language, m.group(2), mark and mark.group(1).strip()))
    return found


ALL = [s for page in PAGES for s in snippets(page)]


def _env(tmp_path: Path) -> dict[str, str]:
    """``clinbench`` and ``python`` on PATH as this interpreter with this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, args in (("clinbench", '-m clinbench.cli.app "$@"'), ("python", '"$@"')):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args}\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP", "COLUMNS")}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def test_every_snippet_runs_or_says_why_not():
    assert len(ALL) >= 10  # the pages were found
    for s in ALL:
        if s.skip is not None:
            assert len(s.skip) >= 5, f"{s.where}: a skip-snippet marker needs its reason"
    for page in PAGES:  # a marker stands right before a snippet, or it marks nothing
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if "skip-snippet" in line:
                assert MARK.match(line.strip()), f"{page.name}:{i + 1}: malformed marker"
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                assert re.match(r"```(bash|sh|shell|python|py)\b", nxt), (
                    f"{page.name}:{i + 1}: the marker is not right before a bash/python block"
                )


def test_the_readme_example_steps_after_reset():
    """The README's first Python example (it once indexed an empty list at reset)."""
    readme = [s for s in ALL if s.page.name == "README.md" and s.language == "python"]
    assert readme and readme[0].skip is None
    assert "available_patients[0]" in readme[0].code


PYTHON_PAGES = sorted({s.page for s in ALL if s.language == "python" and s.skip is None})


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.name)
def test_python_snippets_run(page, tmp_path):
    blocks = [s for s in snippets(page) if s.language == "python" and s.skip is None]
    program = "\n".join(
        f"print('--- snippet {s.where}', flush=True)\n"
        f"exec(compile({s.code!r}, {s.where!r}, 'exec'))"
        for s in blocks
    )
    run = subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-4000:]}"


BASH = [s for s in ALL if s.language == "bash" and s.skip is None]


@pytest.mark.slow
@pytest.mark.parametrize("snippet", BASH, ids=lambda s: s.where)
def test_bash_snippets_run(snippet, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = snippet.code.replace("/tmp/", f"{scratch}/")
    run = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert run.returncode == 0, f"{snippet.where}\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
