"""Rendering the report: JSON (the source of truth) and Markdown from a jinja2 template."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from clinbench.report.build import TEST_NAMES

#: How the effect size of each primary test is labelled in the tables (both carry the
#: small-sample correction: g_z = J(n - 1) d_z).
EFFECT_NAMES = {"paired": "g_z", "welch": "Hedges' g"}


def _num(digits: int):
    def fmt(value: Any) -> str:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return "-"
        return f"{value:.{digits}f}"

    return fmt


def _interval(s: dict[str, Any] | None) -> str:
    """``[lo, hi]`` to 3 decimals; empty when the interval is undefined (one seed)."""
    if not s or s.get("lo") is None or s.get("hi") is None:
        return ""
    return f"[{_num(3)(s['lo'])}, {_num(3)(s['hi'])}]"


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
    """A proportion as ``value [lo, hi] (k/n)``, a mean as ``value [lo, hi]``; a mean
    whose interval has zero width (the same value in every trial) says so."""
    if not c or c.get("value") is None:
        return "-"
    if c["kind"] == "rate":
        return f"{c['value']:.3f} [{c['lo']:.3f}, {c['hi']:.3f}] ({c['k']}/{c['n']})"
    if c.get("lo") is None:
        return f"{c['value']:.1f}"
    if c["lo"] == c["hi"]:
        return f"{c['value']:.1f} (no spread)"
    return f"{c['value']:.1f} [{c['lo']:.1f}, {c['hi']:.1f}]"


def _rank(span: list[int] | None) -> str:
    """A rank range as ``2`` or ``2-4``."""
    if not span:
        return "-"
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def _diff(q: dict[str, Any]) -> str:
    """A pair's mean difference with the primary test's interval; a zero-width interval
    (identical scores on every seed) is said in words."""
    text = _num(3)(q["mean_diff"])
    if q["status"] != "tested":
        return text
    if q["diff_lo"] is not None and q["diff_lo"] == q["diff_hi"]:
        return f"{text} (no spread)"
    return f"{text} [{_num(3)(q['diff_lo'])}, {_num(3)(q['diff_hi'])}]"


def _tost(e: dict[str, Any] | None) -> str:
    """``p (Holm p)`` of the equivalence test, or why there is none."""
    if not e:
        return "-"
    if not e.get("testable"):
        return "not testable"
    if e.get("identical"):
        return "identical"
    return f"{_pvalue(e['p'])} ({_pvalue(e.get('p_holm'))})"


def _interaction(i: dict[str, Any] | None) -> str:
    if not i:
        return "-"
    if not i.get("testable"):
        return "not testable"
    return _pvalue(i["p"]) + (" (interacts)" if i["significant"] else "")


def _mark(q: dict[str, Any]) -> str:
    """What the tests say about a pair: significant, level, or why untested."""
    marks = []
    if q.get("significant"):
        marks.append("significant")
    if q.get("equivalent"):
        marks.append("level")
    if q.get("interaction") and q["interaction"].get("significant"):
        marks.append("interaction: exploratory")
    if not marks and q.get("note"):
        marks.append(q["note"])
    return "; ".join(marks)


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
        iv=_interval,
        est=_estimate,
        needed=_needed,
        oc=_characteristic,
        rank=_rank,
        diff=_diff,
        tost=_tost,
        interaction=_interaction,
        verdict_mark=_mark,
        g3=lambda v: f"{v:.3g}",
    )
    return env


def render_markdown(report: dict[str, Any]) -> str:
    """The Markdown report; runs of blank lines the template's optional sections leave
    are folded into one (no code blocks in it, so nothing else changes)."""
    from clinbench.studies import study_named

    studies = []
    for name, record in report.get("studies", {}).items():
        study = study_named(name)
        if study is not None:  # a study no installed family knows is left out
            studies.append({"title": study.title, "text": study.markdown(record["results"])})
    template = environment().get_template("benchmark_report.md.j2")
    text = template.render(
        r=report,
        studies=studies,
        p=report["protocol"],
        v=report["provenance"],
        names=TEST_NAMES,
        effect_names=EFFECT_NAMES,
    )
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


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
