"""``clinbench charts`` and ``clinbench export``: files, determinism, staleness, paper format.

One smoke sweep with its report and charts is built per module; tests that change a
results folder work on a copy. Nothing is written into the repository's ``docs/``.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import clinbench
from clinbench.charts import CANONICAL_RESULTS, default_docs
from clinbench.charts.figures import CHARTS as GENERIC_CHARTS
from clinbench.charts.style import DOUBLE_COLUMN, SINGLE_COLUMN, style
from clinbench.cli.app import app
from clinbench.env.recruitment.charts import CHARTS as RECRUITMENT_CHARTS

# A wide terminal, so that file names in messages are not folded across lines.
runner = CliRunner(env={"COLUMNS": "300"})
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TABLE_ROW = re.compile(r"^(.*) \\\\$")
NUMBER = rb"(-?[\d.]+)"
MEDIA_BOX = re.compile(rb"/MediaBox\s*\[\s*" + rb"\s+".join([NUMBER] * 4) + rb"\s*\]")

#: what a recruitment results folder renders: the generic charts, then the family's
CHARTS = {**GENERIC_CHARTS, **RECRUITMENT_CHARTS}


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path."""
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in paths}


@pytest.fixture(scope="module")
def smoke(smoke_results) -> Path:
    """Smoke results with their report and charts (shared, read-only)."""
    return smoke_results


@pytest.fixture(scope="module")
def report(smoke) -> dict:
    return json.loads((smoke / "benchmark_report.json").read_text())


@pytest.fixture
def copy(smoke, tmp_path) -> Path:
    return Path(shutil.copytree(smoke, tmp_path / "results"))


@pytest.fixture(scope="module")
def paper(smoke, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("paper")
    result = invoke("export", "--results", smoke, "--out", out, "--format", "pdf")
    assert result.exit_code == 0, result.output
    return out


# --------------------------------------------------------------------------- charts
@pytest.mark.parametrize("name", list(CHARTS))
def test_every_chart_is_written_as_svg_and_png(smoke, name):
    png = (smoke / "charts" / f"{name}.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    root = ET.parse(smoke / "charts" / f"{name}.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert b"<dc:date>" not in (smoke / "charts" / f"{name}.svg").read_bytes()


def test_the_versions_file_lists_the_charts_and_libraries(smoke):
    versions = json.loads((smoke / "charts" / "charts.json").read_text())
    assert versions["charts"] == list(CHARTS)
    assert versions["libraries"]["matplotlib"] and versions["libraries"]["seaborn"]
    rendered = {p.name for p in (smoke / "charts").iterdir()}
    assert rendered == {"charts.json", *(f"{n}.{ext}" for n in CHARTS for ext in ("svg", "png"))}


@pytest.mark.slow
def test_regenerating_is_byte_identical(smoke, copy, tmp_path):
    shutil.rmtree(copy / "charts")
    docs = tmp_path / "docs"
    result = invoke("charts", "--results", copy, "--docs", docs)
    assert result.exit_code == 0, result.output
    assert tree(copy / "charts") == tree(smoke / "charts")
    assert tree(docs) == tree(smoke / "charts")  # the mirror holds the same files


def test_charts_rendered_side_by_side_are_the_bytes_one_process_renders(smoke, tmp_path):
    """``render_into`` spreads the charts over processes: each file must be what a single
    process writes, and the versions file must list the charts in their own order."""
    from clinbench.charts import render_into
    from clinbench.charts.data import load_chart_data

    data = load_chart_data(smoke)
    one = render_into(data, tmp_path / "one", jobs=1)
    two = render_into(data, tmp_path / "two", jobs=2)
    assert [p.name for p in one] == [p.name for p in two]
    assert tree(tmp_path / "one") == tree(tmp_path / "two")


def test_paper_figures_drawn_side_by_side_are_the_bytes_one_process_draws(
    smoke, paper, tmp_path
):
    """``clinbench export`` (the ``paper`` fixture: a pool of processes on a machine of
    more than one core) draws the PDFs one process draws, each chart at both widths."""
    from clinbench.charts.data import load_chart_data
    from clinbench.charts.export import WIDTHS, export_figures
    from clinbench.charts.figures import charts_for

    data = load_chart_data(smoke)
    one = export_figures(data, tmp_path, "pdf", jobs=1)
    assert [p.name for p in one] == [f"{c}_{w}.pdf" for c in charts_for(data) for w in WIDTHS]
    assert tree(tmp_path) == tree(paper / "figures")


def test_a_relative_folder_is_the_caller_s_after_a_change_of_directory(
    smoke, tmp_path, monkeypatch
):
    """The rendering processes outlive one call and keep their working directory: a
    relative folder must still mean the caller's current one."""
    from clinbench.charts import render_into
    from clinbench.charts.data import load_chart_data

    data = load_chart_data(smoke)
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        monkeypatch.chdir(tmp_path / where)
        paths = render_into(data, Path("out"), jobs=2)
        assert all(p.is_absolute() and p.exists() for p in paths)
        assert all(p.parent == tmp_path / where / "out" for p in paths)


def mirrored(copy: Path, tmp_path: Path) -> Path:
    """A docs folder mirroring the copy's charts, as ``clinbench charts --docs`` leaves it."""
    docs = tmp_path / "docs"
    shutil.copytree(copy / "charts", docs)
    return docs


@pytest.mark.slow
def test_check_passes_on_fresh_charts(copy, tmp_path):
    docs = mirrored(copy, tmp_path)
    result = invoke("charts", "--results", copy, "--docs", docs, "--check")
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output


@pytest.mark.slow
def test_check_names_an_altered_png(copy, tmp_path):
    docs = mirrored(copy, tmp_path)
    altered = docs / "seed_heatmap.png"
    altered.write_bytes(altered.read_bytes() + b"\0")
    result = invoke("charts", "--results", copy, "--docs", docs, "--check")
    assert result.exit_code == 1
    stale = [line for line in result.stderr.splitlines() if line.startswith("stale")]
    assert stale == [f"stale differs: {altered}"]


@pytest.mark.slow
def test_check_names_a_deleted_svg(copy, tmp_path):
    docs = mirrored(copy, tmp_path)
    deleted = copy / "charts" / "learning_curves.svg"
    deleted.unlink()
    result = invoke("charts", "--results", copy, "--docs", docs, "--check")
    assert result.exit_code == 1
    stale = [line for line in result.stderr.splitlines() if line.startswith("stale")]
    assert stale == [f"stale missing: {deleted}"]


def test_default_docs_is_only_for_the_canonical_results(smoke, tmp_path):
    repo = Path(clinbench.__file__).resolve().parents[1]
    assert CANONICAL_RESULTS == repo / "data" / "sweep_results"
    assert default_docs(CANONICAL_RESULTS) == repo / "docs" / "images"
    assert default_docs(CANONICAL_RESULTS / ".." / "sweep_results") == repo / "docs" / "images"
    assert default_docs(smoke) is None
    assert default_docs(tmp_path / "data" / "sweep_results") is None


def test_charts_without_a_report_exit_2_saying_to_run_it(copy):
    (copy / "benchmark_report.json").unlink()
    result = invoke("charts", "--results", copy)
    assert result.exit_code == 2
    assert "benchmark_report.json" in result.stderr and "clinbench report" in result.stderr
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- export
def test_export_writes_every_figure_table_and_readme(paper):
    for name in CHARTS:
        for width in ("single", "double"):
            assert (paper / "figures" / f"{name}_{width}.pdf").read_bytes().startswith(b"%PDF-")
    assert (paper / "tables" / "per_task.tex").exists()
    assert (paper / "tables" / "aggregate.tex").exists()
    assert "clinbench export" in (paper / "README.md").read_text()


@pytest.mark.parametrize("name", list(CHARTS))
def test_pdfs_embed_truetype_fonts(paper, name):
    for width in ("single", "double"):
        pdf = (paper / "figures" / f"{name}_{width}.pdf").read_bytes()
        assert b"/FontFile2" in pdf
        assert b"/Type3" not in pdf


def page_width(pdf: Path) -> float:
    """Width in inches of the (single) page of a PDF."""
    boxes = MEDIA_BOX.findall(pdf.read_bytes())
    assert len(boxes) == 1
    x0, _, x1, _ = (float(v) for v in boxes[0])
    return (x1 - x0) / 72


@pytest.mark.parametrize("name", list(CHARTS))
def test_column_widths(paper, name):
    single = page_width(paper / "figures" / f"{name}_single.pdf")
    double = page_width(paper / "figures" / f"{name}_double.pdf")
    # saved with a tight bounding box: a little off the figure width, never much wider
    assert single == pytest.approx(SINGLE_COLUMN, abs=0.3)
    assert double <= DOUBLE_COLUMN + 0.3
    assert double > single + 1.0


def table_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells of a booktabs table written by the export."""
    lines = text.splitlines()
    assert lines.count(r"\toprule") == lines.count(r"\midrule") == lines.count(r"\bottomrule") == 1
    top, mid, bottom = (
        lines.index(r"\toprule"),
        lines.index(r"\midrule"),
        lines.index(r"\bottomrule"),
    )
    assert top < mid < bottom
    header = TABLE_ROW.match(lines[top + 1]).group(1).split(" & ")
    body = [TABLE_ROW.match(line).group(1).split(" & ") for line in lines[mid + 1 : bottom]]
    return header, body


def significantly_worse(report: dict, family: str, best: str) -> set[str]:
    """Agents whose pair with ``best`` is Holm-significant in ``family``, ``best`` ahead."""
    fam = next(f for f in report["families"] if f["name"] == family)
    out = set()
    for q in fam["pairs"]:
        if best in (q["a"], q["b"]) and q["significant"]:
            other, lead = (q["b"], q["mean_diff"]) if q["a"] == best else (q["a"], -q["mean_diff"])
            if lead > 0:
                out.add(other)
    return out


def test_per_task_table_marks_the_best_and_the_significantly_worse(paper, report):
    header, body = table_rows((paper / "tables" / "per_task.tex").read_text())
    tasks, agents = report["protocol"]["tasks"], report["protocol"]["agents"]
    assert header == ["Agent", *(t.replace("_", r"\_") for t in tasks)]
    assert [row[0] for row in body] == agents
    for j, task in enumerate(tasks, start=1):
        column = {row[0]: row[j] for row in body}
        bold = [a for a, cell in column.items() if r"\textbf" in cell]
        means = report["per_task"][task]
        assert bold == [max(agents, key=lambda a: means[a]["mean"])]
        daggers = {a for a, cell in column.items() if r"\dagger" in cell}
        assert daggers == significantly_worse(report, task, bold[0])
        for a, cell in column.items():
            assert cell.replace(r"\textbf{", "").startswith(f"{means[a]['mean']:.3f}")


def test_aggregate_table_marks_the_best_and_the_significantly_worse(paper, report):
    header, body = table_rows((paper / "tables" / "aggregate.tex").read_text())
    assert header == ["Agent", "Mean", "IQM", "Median", "Optimality gap"]
    agg = report["aggregates"]["recruitment"]["agents"]  # the smoke run's one family
    columns = [("mean", max), ("iqm", max), ("median", max), ("optimality_gap", min)]
    for j, (key, pick) in enumerate(columns, start=1):
        bold = [row[0].replace(r"$^\dagger$", "") for row in body if r"\textbf" in row[j]]
        assert len(bold) == 1
        assert agg[bold[0]][key]["value"] == pick(v[key]["value"] for v in agg.values())
    best = max(agg, key=lambda a: agg[a]["mean"]["value"])  # the tested statistic decides
    daggers = {row[0].replace(r"$^\dagger$", "") for row in body if r"\dagger" in row[0]}
    assert daggers == significantly_worse(report, "recruitment", best)


@pytest.mark.slow
def test_export_is_byte_identical(smoke, paper, tmp_path):
    result = invoke("export", "--results", smoke, "--out", tmp_path, "--format", "pdf")
    assert result.exit_code == 0, result.output
    ours, theirs = tree(tmp_path), tree(paper)
    # the README names the folder it was written to (its LaTeX paths, its command)
    readme = theirs.pop("README.md").replace(str(paper).encode(), str(tmp_path).encode())
    assert ours.pop("README.md") == readme
    assert ours == theirs


def test_agent_colours_follow_the_report_order_not_the_installed_agents():
    from clinbench.charts.style import OKABE_ITO, agent_colors

    agents = ["heuristic", "random", "hcapo", "mira", "klong", "memexrl", "ppo", "maskable_ppo"]
    colours = agent_colors(agents)
    assert len(set(colours.values())) == len(OKABE_ITO) == len(agents)
    assert agent_colors(["my_plugin", "heuristic"]) == {
        "my_plugin": OKABE_ITO[0],
        "heuristic": OKABE_ITO[1],
    }


#: 16 agents: the registry's own, then plugins
SIXTEEN = [
    "heuristic", "random", "hcapo", "mira", "klong", "memexrl", "fixed_design", "grpo",
    "ppo", "maskable_ppo", "bc", "rwbc", "iql", "learned_reward", "llm", "my_plugin",
]  # fmt: skip


def test_colour_and_marker_never_repeat_up_to_16_agents():
    from matplotlib.colors import to_rgb

    from clinbench.charts.style import agent_colors, agent_markers

    colours, markers = agent_colors(SIXTEEN), agent_markers(SIXTEEN)
    assert len({to_rgb(c) for c in colours.values()}) == 16
    assert len(set(markers.values())) == 16
    assert colours["heuristic"] != colours["maskable_ppo"]
    assert markers["heuristic"] != markers["maskable_ppo"]
    # every prefix keeps its look: a subset in report order draws the same as the whole
    assert agent_colors(SIXTEEN[:9]) == {a: colours[a] for a in SIXTEEN[:9]}


def _runs(seed: int, runs: int = 5, tasks: int = 3) -> np.ndarray:
    """[run, task] normalised scores, ties included (as rounded real scores have)."""
    return np.round(np.random.default_rng(seed).normal(0.5, 0.3, (runs, tasks)), 1)


def test_profile_band_is_the_stratified_bootstrap_computed_directly():
    from clinbench.stats import performance_profile_ci

    scores, taus = _runs(3), np.linspace(-0.1, 1.1, 25)
    profile, lo, hi = performance_profile_ci(scores, taus, np.random.default_rng(9), reps=400)
    # the same draws by hand: per replicate, per task, runs with replacement
    gen, reps = np.random.default_rng(9), []
    for _ in range(0, 400, 250):
        size = min(250, 400 - len(reps))
        idx = [gen.integers(0, 5, size=(size, 5)) for _ in range(3)]
        for r in range(size):
            pooled = np.concatenate([scores[idx[t][r], t] for t in range(3)])
            reps.append([(pooled > tau).mean() for tau in taus])
    want_lo, want_hi = np.quantile(np.array(reps), [0.025, 0.975], axis=0)
    assert np.array_equal(profile, [(scores > tau).mean() for tau in taus])
    assert np.allclose(lo, want_lo) and np.allclose(hi, want_hi)
    assert np.all(lo <= profile) and np.all(profile <= hi)
    again = performance_profile_ci(scores, taus, np.random.default_rng(9), reps=400)
    assert all(np.array_equal(a, b) for a, b in zip(again, (profile, lo, hi), strict=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profile_band_agrees_with_rliable(seed):
    from shared_helpers import rliable_library

    from clinbench.stats import performance_profile_ci

    pytest.importorskip("rliable")
    library = rliable_library()
    scores, taus = _runs(seed, runs=10, tasks=3), np.linspace(-0.1, 1.1, 13)
    np.random.seed(seed)  # rliable draws from numpy's global generator
    try:
        points, cis = library.create_performance_profile({"a": scores}, taus, reps=4000)
    finally:
        np.random.seed(None)
    profile, lo, hi = performance_profile_ci(scores, taus, np.random.default_rng(seed), reps=4000)
    assert np.array_equal(profile, points["a"])
    # both are Monte Carlo percentiles of a distribution on a grid of 1/30: at most one
    # grid step apart where a quantile falls on a jump
    step = 1 / scores.size
    assert np.abs(lo - cis["a"][0]).max() <= step + 1e-12
    assert np.abs(hi - cis["a"][1]).max() <= step + 1e-12
    assert np.mean(np.isclose(lo, cis["a"][0])) >= 0.7


def test_performance_profile_draws_a_band_per_agent(smoke):
    from matplotlib.collections import PolyCollection

    from clinbench.charts import load_chart_data
    from clinbench.charts.figures import performance_profile

    data = load_chart_data(smoke)
    with style():
        fig = performance_profile(data, DOUBLE_COLUMN)
    ax = fig.axes[0]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert len(bands) == len(data.agents) == len(lines)
    for agent, line in lines.items():
        assert line.get_marker() == data.markers[agent]
        assert line.get_color() == data.colors[agent]


def _names_rows(ax) -> bool:
    """Whether a drawn heatmap panel shows its agents' names."""
    return any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())


def test_many_agents_move_the_profile_legend_under_its_panels_and_name_heatmap_rows_once():
    """The offline study's 19 agents (long names, one family): the performance profile's
    legend goes under the panels, the heatmap names the agents on its first panel only,
    the pairwise matrix keeps its significance marks but not its numbers, and
    matplotlib's layout keeps every panel (no collapsed axes); the canonical run's
    eight agents over three families keep a legend beside each panel, every panel's
    names and the matrix's numbers."""
    import warnings

    from clinbench.charts import load_chart_data
    from clinbench.charts.figures import (
        PROFILE_SIDE_LEGEND,
        pairwise_significance,
        performance_profile,
        seed_heatmap,
    )

    root = Path(clinbench.__file__).resolve().parents[1]
    many = load_chart_data(root / "data" / "offline_study" / "trial_design")
    few = load_chart_data(root / CANONICAL_RESULTS)
    assert len(many.agents) > PROFILE_SIDE_LEGEND >= len(few.agents)
    with style(), warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied" fails here
        fig = performance_profile(many, DOUBLE_COLUMN)
        fig.canvas.draw()
        assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == len(many.agents)
        assert all(ax.get_legend() is None for ax in fig.axes)
        heat = seed_heatmap(many, DOUBLE_COLUMN)
        heat.canvas.draw()
        assert [_names_rows(ax) for ax in heat.axes if ax.get_visible()] == [True, False, False]
        pairs = pairwise_significance(many, DOUBLE_COLUMN)
        pairs.canvas.draw()
        marks = {t.get_text() for t in pairs.axes[0].texts}
        assert marks == {"", "*"}  # the significance marks alone
        pairs = pairwise_significance(few, DOUBLE_COLUMN)
        assert any(re.fullmatch(r"-?\d+\.\d\*?", t.get_text()) for t in pairs.axes[0].texts)
        fig = performance_profile(few, DOUBLE_COLUMN)
        assert not fig.legends and all(ax.get_legend() is not None for ax in fig.axes)
        heat = seed_heatmap(few, DOUBLE_COLUMN)
        heat.canvas.draw()
        assert all(ax.get_yticklabels()[0].get_text() for ax in heat.axes if ax.get_visible())


def test_the_seed_heatmap_turns_its_seeds_upright_only_where_they_overlap():
    """The heatmaps skip seaborn's draw per panel (``heatmaps_without_overlap_check``):
    the seed heatmap checks its seed labels once, on the whole figure, and turns them
    upright where they would overlap (30 long seeds), not otherwise (the canonical five)."""
    from types import SimpleNamespace

    import matplotlib.pyplot as plt
    import pandas as pd

    from clinbench.charts.figures import seed_heatmap

    def data(seeds) -> SimpleNamespace:
        tasks, agents = ["a", "b", "c", "d"], ["heuristic", "random"]
        frame = pd.DataFrame(
            [{"task": t, "agent": a, "seed": s, "score": 0.5} for t in tasks for a in agents
             for s in seeds]
        )
        return SimpleNamespace(
            cell_scores=lambda: frame, tasks=tasks, agents=agents, seeds=list(seeds)
        )

    with style():
        few = seed_heatmap(data([1, 7, 21, 42, 123]), DOUBLE_COLUMN)
        many = seed_heatmap(data(range(100_000, 100_030)), DOUBLE_COLUMN)
    try:
        assert {t.get_rotation() for ax in few.axes for t in ax.get_xticklabels()} == {0.0}
        assert {t.get_rotation() for ax in many.axes for t in ax.get_xticklabels()} == {90.0}
    finally:
        plt.close(few)
        plt.close(many)
