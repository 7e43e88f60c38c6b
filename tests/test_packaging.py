"""What a user installs: the configs inside the package, the licence, the citation, the
typing marker, and one version that the tag, the package and ``clinbench --version``
agree on. (.ci/install_check builds the wheel and the sdist and runs a sweep from each.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import clinbench
from clinbench.config import config_dir

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(clinbench.__file__).resolve().parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_configs_ship_inside_the_package(monkeypatch):
    """The sweep's configs are package data, found without a clone; a clone edits the
    same files as conf/."""
    monkeypatch.delenv("CLINBENCH_CONF_DIR", raising=False)
    assert config_dir() == PACKAGE / "conf"
    assert (config_dir() / "config.yaml").is_file()
    globs = _pyproject()["tool"]["setuptools"]["package-data"]["clinbench"]
    assert "**/*.yaml" in globs and "py.typed" in globs
    if (ROOT / "conf").exists():
        assert (ROOT / "conf").resolve() == (PACKAGE / "conf").resolve()


def test_conf_dir_variable_still_overrides(tmp_path, monkeypatch):
    shutil.copytree(PACKAGE / "conf", tmp_path / "conf")
    monkeypatch.setenv("CLINBENCH_CONF_DIR", str(tmp_path / "conf"))
    assert config_dir() == tmp_path / "conf"


def test_licence_is_mit_and_declared_as_spdx():
    project = _pyproject()["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    # PEP 639 (a string licence and license-files) needs setuptools 77
    requires = _pyproject()["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r[12:]) >= 77 for r in requires)


def test_typing_marker_is_in_the_package():
    assert (PACKAGE / "py.typed").is_file()


def test_citation_names_this_version_and_licence():
    """CITATION.cff's fields (cffconvert --validate checks the schema in .ci/install_check)."""
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert str(cff["version"]) == clinbench.__version__
    assert cff["license"] == "MIT"
    assert cff["authors"] and cff["title"].startswith("clinbench")


def test_changelog_has_this_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(clinbench.__version__)}\]", text, re.MULTILINE)


def test_cli_version_is_the_package_version():
    out = subprocess.run(
        [sys.executable, "-m", "clinbench.cli.app", "--version"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert out.strip() == f"clinbench {clinbench.__version__}"


def _git(*args: str) -> str | None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    run = subprocess.run(["git", *args], check=False, capture_output=True, text=True, cwd=ROOT)
    return run.stdout.strip() if run.returncode == 0 else None


def _version(tag: str) -> tuple[int, ...]:
    return tuple(int(p) for p in tag.removeprefix("v").split("."))


def test_tags_agree_with_the_package_version():
    """A tag on this commit is ``v<version>``; no tag is newer than the version; the
    changelog has a section for every tag."""
    tags = _git("tag", "--list", "v*")
    if not tags:
        pytest.skip("no git tags here (a shallow clone or an export)")
    tags = tags.split()
    for tag in tags:
        assert re.fullmatch(r"v\d+\.\d+\.\d+", tag), f"tag {tag} is not v<major.minor.patch>"
        assert _version(tag) <= _version(clinbench.__version__), (
            f"tag {tag} is newer than the package version {clinbench.__version__}"
        )
        assert f"## [{tag[1:]}]" in (ROOT / "CHANGELOG.md").read_text()
    here = (_git("tag", "--points-at", "HEAD", "--list", "v*") or "").split()
    for tag in here:
        assert tag == f"v{clinbench.__version__}"
