"""Rendering the report: JSON (the source of truth) and Markdown from a jinja2 template."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from clinbench.report.build import TEST_NAMES

#: How the effect size of each primary test is labelled in the tables.
EFFECT_NAMES = {"paired": "d_z", "welch": "Hedges' g"}


def _num(digits: int):
    def fmt(value: Any) -> str:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return "-"
        return f"{value:.{digits}f}"

    return fmt


def _pvalue(value: Any) -> str:
    if value is None:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _ci(s: dict[str, Any]) -> str:
    """A Student-t interval of a summary; marked when missing or of zero width."""
    if s.get("lo") is None or s.get("hi") is None:
        return "- (fewer than 3 seeds)" if s.get("n", 0) < 3 else "-"
    text = f"[{_num(3)(s['lo'])}, {_num(3)(s['hi'])}]"
    return text + " (no spread)" if s["lo"] == s["hi"] else text


def _vci(s: dict[str, Any] | None) -> str:
    """``value [lo, hi]``; a zero-width interval is said in words, not printed."""
    if not s:
        return "-"
    value = _num(2)(s.get("value"))
    if s.get("no_spread"):
        return f"{value} (no spread)"
    if s.get("lo") is None or s.get("hi") is None:
        return value
    if s.get("zero_width"):
        return f"{value} (≥ 95 % of resamples agree)"
    return f"{value} [{_num(2)(s['lo'])}, {_num(2)(s['hi'])}]"


def _estimate(e: dict[str, Any] | None) -> str:
    """An effect size with its interval, and the method when it is not the exact one."""
    if not e or e.get("value") is None:
        return "-"
    text = f"{_num(2)(e['value'])} [{_num(2)(e.get('lo'))}, {_num(2)(e.get('hi'))}]"
    return text if e.get("method") == "noncentral t" else f"{text} ({e.get('method')})"


def _needed(s: dict[str, Any] | None) -> str:
    if not s:
        return "-"
    return " / ".join("-" if s.get(k) is None else str(s[k]) for k in ("alpha", "holm"))


def _characteristic(c: dict[str, Any] | None) -> str:
    """A proportion as ``value [lo, hi] (k/n)``, a mean as ``value [lo, hi]``."""
    if not c or c.get("value") is None:
        return "-"
    if c["kind"] == "rate":
        return f"{c['value']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] ({c['k']}/{c['n']})"
    if c.get("lo") is None:
        return f"{c['value']:.1f}"
    return f"{c['value']:.1f} [{c['lo']:.1f}, {c['hi']:.1f}]"


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("clinbench.report", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(
        f1=_num(1),
        f2=_num(2),
        f3=_num(3),
        signed3=lambda v: f"{v:+.3f}",
        pv=_pvalue,
        ci=_ci,
        vci=_vci,
        est=_estimate,
        needed=_needed,
        oc=_characteristic,
    )
    return env


def render_markdown(report: dict[str, Any]) -> str:
    template = environment().get_template("benchmark_report.md.j2")
    return (
        template.render(
            r=report,
            p=report["protocol"],
            v=report["provenance"],
            names=TEST_NAMES,
            effect_names=EFFECT_NAMES,
        ).rstrip()
        + "\n"
    )


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + "\n"


def report_paths(folder: Path) -> dict[str, Path]:
    return {"json": folder / "benchmark_report.json", "md": folder / "benchmark_report.md"}


def write_report(report: dict[str, Any], folder: Path) -> dict[str, Path]:
    paths = report_paths(folder)
    paths["json"].write_text(render_json(report))
    paths["md"].write_text(render_markdown(report))
    return paths


def stale_report_files(report: dict[str, Any], folder: Path) -> list[Path]:
    """Report files in ``folder`` that differ from what ``report`` renders to."""
    paths = report_paths(folder)
    fresh = {"json": render_json(report), "md": render_markdown(report)}
    return [p for k, p in paths.items() if not p.exists() or p.read_text() != fresh[k]]
