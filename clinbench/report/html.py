"""``clinbench report --html``: one static page a browser opens with nothing else.

The page is rendered from the report (the JSON's content) and the chart files of the
results folder: the verdict, each family's tables (sortable by a small inline script),
every chart embedded as an SVG data URI (so no file beside it is needed and the charts'
own ids cannot clash) and the provenance. It holds no date of its own, so from the same
report and charts it is byte-identical, and ``report --check`` compares a committed page.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from clinbench.report.render import EFFECT_NAMES, environment

HTML_NAME = "benchmark_report.html"


def chart_uris(charts: Path) -> list[tuple[str, str]]:
    """``(name, data URI)`` of each SVG chart, in the order ``charts.json`` lists them
    (the order they are drawn in), then any other SVG by name."""
    if not charts.is_dir():
        return []
    listed: list[str] = []
    versions = charts / "charts.json"
    if versions.exists():
        try:
            listed = list(json.loads(versions.read_text()).get("charts", []))
        except (json.JSONDecodeError, AttributeError):
            listed = []
    svgs = {p.stem: p for p in charts.glob("*.svg")}
    order = [n for n in listed if n in svgs] + sorted(n for n in svgs if n not in listed)
    return [
        (n, "data:image/svg+xml;base64," + base64.b64encode(svgs[n].read_bytes()).decode())
        for n in order
    ]


def render_html(report: dict[str, Any], charts: Path) -> str:
    """The page of ``report`` with the SVG charts of the folder ``charts``."""
    env = environment().overlay(autoescape=True)
    protocol = report["protocol"]

    def task_env(task: str) -> str:
        return (protocol.get("task_envs") or {}).get(task) or protocol["env"]

    def any_task(agent: str, tasks: list[str]) -> bool:
        return any(agent in report["per_task"].get(t, {}) for t in tasks)

    text = env.get_template("benchmark_report.html.j2").render(
        r=report,
        p=protocol,
        charts=chart_uris(charts),
        effect_names=EFFECT_NAMES,
        task_env=task_env,
        any_task=any_task,
    )
    return text.rstrip() + "\n"


def html_path(folder: Path) -> Path:
    return Path(folder) / HTML_NAME


def write_html(report: dict[str, Any], folder: Path) -> Path:
    """Write the page next to the Markdown report, with the folder's ``charts/``."""
    path = html_path(folder)
    path.write_text(render_html(report, Path(folder) / "charts"), encoding="utf-8")
    return path


def stale_html(report: dict[str, Any], folder: Path) -> list[Path]:
    """The committed page if it differs from a re-render (none when no page is there)."""
    path = html_path(folder)
    if not path.exists():
        return []
    fresh = render_html(report, Path(folder) / "charts")
    return [] if path.read_text(encoding="utf-8") == fresh else [path]
