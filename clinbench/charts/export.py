"""Paper export: every chart at single- and double-column width, and LaTeX tables.

Figures use the paper style (smaller type) and, as PDF, embed their fonts as TrueType
(``pdf.fonttype`` 42), which publishers require. Tables use booktabs; the best entry
of each column is bold, and a dagger marks entries significantly worse than that best
after Holm (the report's primary test and families).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clinbench.charts.data import ChartData, load_chart_data
from clinbench.charts.figures import charts_for
from clinbench.charts.style import DOUBLE_COLUMN, SINGLE_COLUMN, save, style

WIDTHS = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}
DAGGER = r"$^\dagger$"


def export_figures(data: ChartData, out: Path, fmt: str) -> list[Path]:
    paths: list[Path] = []
    with style(paper=True):
        for name, chart in charts_for(data).items():
            for label, width in WIDTHS.items():
                paths += save(chart(data, width), out, f"{name}_{label}", (fmt,))
    return paths


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
        f"Bold: best per task; {DAGGER}: significantly worse than the best "
        f"({report['protocol']['test_name']}, "
        f"Holm over each task's {len(agents) * (len(agents) - 1) // 2} pairs, "
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


def aggregate_table(report: dict[str, Any]) -> str:
    agg = (report["aggregate"] or {}).get("agents", {})
    agents = [a for a in report["protocol"]["agents"] if a in agg]
    stats = [
        ("mean", "Mean", max),
        ("iqm", "IQM", max),
        ("median", "Median", max),
        ("optimality_gap", "Optimality gap", min),
    ]
    best = (
        {k: pick(agents, key=lambda a, k=k: agg[a][k]["value"]) for k, _, pick in stats}
        if agents
        else {}
    )
    worse = _worse_than_best(report, "aggregate", best["mean"]) if agents else set()
    rows = []
    for a in agents:
        row = [_tex(a) + (DAGGER if a in worse else "")]
        for k, _, _ in stats:
            cell = _cell(agg[a][k])
            row.append(rf"\textbf{{{cell}}}" if a == best[k] else cell)
        rows.append(row)
    caption = (
        "Aggregate over tasks of normalised scores (0 = random, 1 = reference planner). Mean: "
        "mean over seeds of the per-seed mean over tasks, with its Student-t 95\\% interval (the "
        "tested statistic). IQM, median, optimality gap: rliable's secondary figures with "
        f"stratified bootstrap 95\\% intervals ({report['protocol']['bootstrap_reps']} replicates; "
        "* where the interval has zero width: at least 95\\% of resamples agree). "
        f"Bold: best per column; {DAGGER}: significantly worse than the best mean "
        f"({report['protocol']['test_name']}, Holm, confirmatory)."
    )
    return _table(["Agent", *(c for _, c, _ in stats)], rows, caption, "tab:clinbench-aggregate")


README = """# Paper exports

Generated by `clinbench export` from the committed results in `data/sweep_results/`;
regenerate with `clinbench export --format {fmt} --out reports/`.

- `figures/<chart>_single.{fmt}`: {single} in wide, for one column of a two-column paper.
- `figures/<chart>_double.{fmt}`: {double} in wide, across both columns.
- `tables/per_task.tex`, `tables/aggregate.tex`: booktabs tables; the best entry per
  column is bold and a dagger marks entries significantly worse than that best after
  Holm's correction.

PDF figures embed their fonts as TrueType. In LaTeX:

```latex
\\usepackage{{booktabs}}   % for the tables
\\usepackage{{graphicx}}

\\input{{reports/tables/per_task.tex}}
\\input{{reports/tables/aggregate.tex}}

\\begin{{figure}}[t]
  \\centering
  \\includegraphics[width=\\columnwidth]{{reports/figures/agent_comparison_single.{fmt}}}
  \\caption{{Mean score per task and aggregate mean of normalised scores.}}
\\end{{figure}}

\\begin{{figure*}}[t]
  \\centering
  \\includegraphics[width=\\textwidth]{{reports/figures/learning_curves_double.{fmt}}}
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
    readme.write_text(
        README.format(fmt=fmt, single=SINGLE_COLUMN, double=DOUBLE_COLUMN, charts=names)
    )
    return [*paths, readme]
