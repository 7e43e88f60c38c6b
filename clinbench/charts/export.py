"""Paper export: every chart at single- and double-column width, and LaTeX tables.

Figures use the paper style (smaller type) and, as PDF, embed their fonts as TrueType
(``pdf.fonttype`` 42), which publishers require. Tables use booktabs; the highest
entry of each column is bold (a description, not a test), and a dagger marks entries
significantly below it after Holm (the report's primary test and families; one
aggregate table per environment family).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from clinbench.charts import CANONICAL_RESULTS, draw
from clinbench.charts.data import ChartData, load_chart_data
from clinbench.charts.figures import charts_for
from clinbench.charts.style import DOUBLE_COLUMN, SINGLE_COLUMN

WIDTHS = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}
DAGGER = r"$^\dagger$"


def export_figures(data: ChartData, out: Path, fmt: str, jobs: int | None = None) -> list[Path]:
    """Every chart at each width of :data:`WIDTHS`, in the paper style, drawn side by side
    in ``jobs`` processes (:func:`clinbench.charts.draw`)."""
    figures = [
        (name, f"{name}_{label}", width)
        for name in charts_for(data)
        for label, width in WIDTHS.items()
    ]
    return draw(data, out, figures, (fmt,), paper=True, jobs=jobs)


def _tex(name: str) -> str:
    return name.replace("_", r"\_")


def _worse_than_best(report: dict[str, Any], family: str, best: str) -> set[str]:
    fam = next((f for f in report["families"] if f["name"] == family), None)
    worse = set()
    for p in fam["pairs"] if fam else []:
        if best in (p["a"], p["b"]) and p["significant"]:
            other = p["b"] if p["a"] == best else p["a"]
            best_higher = (p["mean_diff"] > 0) == (p["a"] == best)
            if best_higher:
                worse.add(other)
    return worse


def _table(columns: list[str], rows: list[list[str]], caption: str, label: str) -> str:
    spec = "l" + "r" * (len(columns) - 1)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{caption}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(columns) + r" \\",
        r"\midrule",
        *(" & ".join(r) + r" \\" for r in rows),
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def per_task_table(report: dict[str, Any]) -> str:
    agents, tasks = report["protocol"]["agents"], report["protocol"]["tasks"]
    best = {
        t: max(report["per_task"][t], key=lambda a: report["per_task"][t][a]["mean"]) for t in tasks
    }
    pairs = {t: next((f["m"] for f in report["families"] if f["name"] == t), 0) for t in tasks}
    worse = {t: _worse_than_best(report, t, best[t]) for t in tasks}
    rows = []
    for a in agents:
        row = [_tex(a)]
        for t in tasks:
            s = report["per_task"][t].get(a)
            if s is None:
                row.append("--")
                continue
            half = (s["hi"] - s["mean"]) if s["hi"] is not None else None
            cell = f"{s['mean']:.3f}" + (rf" $\pm$ {half:.3f}" if half is not None else "")
            if a == best[t]:
                cell = rf"\textbf{{{cell}}}"
            if a in worse[t]:
                cell += DAGGER
            row.append(cell)
        rows.append(row)
    n = len(report["protocol"]["seeds"])
    caption = (
        f"Mean score per task over {n} seeds $\\pm$ half-width of the Student-t 95\\% interval. "
        f"Bold: highest mean per task (not a test); {DAGGER}: significantly below it "
        f"({report['protocol']['test_name']}, "
        f"Holm over each task's pairs ({', '.join(str(pairs[t]) for t in tasks)}), "
        f"$\\alpha = {report['protocol']['alpha']}$; "
        "exploratory)."
    )
    return _table(["Agent", *(_tex(t) for t in tasks)], rows, caption, "tab:clinbench-per-task")


def _cell(v: dict[str, Any]) -> str:
    if v.get("no_spread"):
        return f"{v['value']:.2f} (no spread)"
    if v.get("lo") is None or v.get("hi") is None:
        return f"{v['value']:.2f}"
    if v.get("zero_width"):
        return f"{v['value']:.2f}*"
    return f"{v['value']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]"


def family_table(report: dict[str, Any], env: str, agg: dict[str, Any]) -> str:
    """One environment family's aggregate: mean (the tested statistic) and rliable's
    secondary figures; bold the highest value per column, a dagger on agents
    significantly below the highest mean in the family's confirmatory family."""
    rows_in = agg.get("agents", {})
    agents = [a for a in report["protocol"]["agents"] if a in rows_in]
    stats = [
        ("mean", "Mean", max),
        ("iqm", "IQM", max),
        ("median", "Median", max),
        ("optimality_gap", "Optimality gap", min),
    ]
    best = {k: pick(agents, key=lambda a, k=k: rows_in[a][k]["value"]) for k, _, pick in stats}
    worse = _worse_than_best(report, env, best["mean"])
    rows = []
    for a in agents:
        row = [_tex(a) + (DAGGER if a in worse else "")]
        for k, _, _ in stats:
            cell = _cell(rows_in[a][k])
            row.append(rf"\textbf{{{cell}}}" if a == best[k] else cell)
        rows.append(row)
    caption = (
        f"{_tex(env)}: aggregate over its tasks ({', '.join(_tex(t) for t in agg['tasks'])}) "
        "of normalised scores (0 and 1: random's and the reference planner's mean scores on "
        "the reference worlds). Mean: mean over seeds of the per-seed mean over tasks, with "
        "its Student-t 95\\% interval (the tested statistic). IQM, median, optimality gap: "
        "rliable's secondary figures with stratified bootstrap 95\\% intervals "
        f"({report['protocol']['bootstrap_reps']} replicates; * where the interval has zero "
        "width: at least 95\\% of resamples agree). Bold: highest value per column (not a "
        f"test); {DAGGER}: significantly below the highest mean "
        f"({report['protocol']['test_name']}, Holm within the family, confirmatory)."
    )
    return _table(
        ["Agent", *(c for _, c, _ in stats)], rows, caption, f"tab:clinbench-aggregate-{env}"
    )


def aggregate_table(report: dict[str, Any]) -> str:
    """One table per environment family with an aggregate (the report's headline)."""
    return "\n".join(
        family_table(report, env, agg)
        for env, agg in (report.get("aggregates") or {}).items()
        if agg.get("agents")
    )


README = """# Paper exports

Generated by `clinbench export` from the {source} in `{results}/`;
regenerate with `{command}`.

- `figures/<chart>_single.{fmt}`: {single} in wide, for one column of a two-column paper.
- `figures/<chart>_double.{fmt}`: {double} in wide, across both columns.
- `tables/per_task.tex`, `tables/aggregate.tex` (one table per environment family):
  booktabs tables; the highest entry per column is bold (a description, not a test)
  and a dagger marks entries significantly below it after Holm's correction.

PDF figures embed their fonts as TrueType. In LaTeX:

```latex
\\usepackage{{booktabs}}   % for the tables
\\usepackage{{graphicx}}

\\input{{{out}/tables/per_task.tex}}
\\input{{{out}/tables/aggregate.tex}}

\\begin{{figure}}[t]
  \\centering
  \\includegraphics[width=\\columnwidth]{{{out}/figures/agent_comparison_single.{fmt}}}
  \\caption{{Mean score per task and each family's aggregate mean of normalised scores.}}
\\end{{figure}}

\\begin{{figure*}}[t]
  \\centering
  \\includegraphics[width=\\textwidth]{{{out}/figures/learning_curves_double.{fmt}}}
  \\caption{{Learning curves.}}
\\end{{figure*}}
```

Charts: {charts}.
"""


def export(results: Path, out: Path, fmt: str = "pdf") -> list[Path]:
    """Write figures, tables and a README into ``out``."""
    data = load_chart_data(results)
    paths = export_figures(data, out / "figures", fmt)
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("per_task", per_task_table(data.report)),
        ("aggregate", aggregate_table(data.report)),
    ):
        path = tables / f"{name}.tex"
        path.write_text(text)
        paths.append(path)
    readme = out / "README.md"
    names = ", ".join(charts_for(data))
    canonical = Path(results).resolve() == CANONICAL_RESULTS
    command = "clinbench export" + ("" if canonical else f" --results {shlex.quote(str(results))}")
    readme.write_text(
        README.format(
            fmt=fmt,
            single=SINGLE_COLUMN,
            double=DOUBLE_COLUMN,
            charts=names,
            source="committed results" if canonical else "results",
            results=str(results).rstrip("/"),
            out=str(out).rstrip("/"),
            command=f"{command} --format {fmt} --out {shlex.quote(str(out))}/",
        )
    )
    return [*paths, readme]
