"""Charts of a results folder, in sync with ``docs/images/`` (``clinbench charts``).

``render_all`` writes every chart as SVG and PNG into ``<results>/charts/`` and mirrors
them into the docs folder; ``check`` renders into a temporary folder and lists every
committed file that differs or is missing. ``charts.json`` records the library
versions that rendered the files, so a failed check can say when they differ.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from clinbench.charts.data import ChartData, ChartDataError, load_chart_data
from clinbench.charts.figures import charts_for
from clinbench.charts.style import DOUBLE_COLUMN, FORMATS, save, style

VERSIONS_FILE = "charts.json"
REPO = Path(__file__).resolve().parents[2]
#: The committed canonical results and the docs folder mirrored from them.
CANONICAL_RESULTS = REPO / "data" / "sweep_results"
DOCS_IMAGES = REPO / "docs" / "images"


def default_docs(results: Path) -> Path | None:
    """``docs/images`` for the canonical results folder; other folders are not mirrored."""
    return DOCS_IMAGES if Path(results).resolve() == CANONICAL_RESULTS else None


RENDER_LIBRARIES = ("matplotlib", "seaborn", "numpy", "pandas", "scipy", "pillow", "fonttools")


def render_versions() -> dict[str, str | None]:
    out = {}
    for name in RENDER_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def render_into(data: ChartData, folder: Path, jobs: int | None = None) -> list[Path]:
    """Every chart, both formats, plus the versions file, into ``folder``."""
    charts = charts_for(data)
    paths = draw(data, folder, [(name, name, DOUBLE_COLUMN) for name in charts], FORMATS, jobs=jobs)
    versions = Path(folder).resolve() / VERSIONS_FILE
    listing = {"libraries": render_versions(), "charts": list(charts)}
    versions.write_text(json.dumps(listing, indent=2) + "\n")
    return [*paths, versions]


#: A figure to draw: (chart name, file stem, width in inches).
Figure = tuple[str, str, float]


def draw(
    data: ChartData,
    folder: Path,
    figures: list[Figure],
    formats: tuple[str, ...],
    paper: bool = False,
    jobs: int | None = None,
) -> list[Path]:
    """Draw ``figures`` into ``folder`` in each of ``formats``, in the screen or paper style.

    The figures are independent files, so ``jobs`` processes (default: the cores, at
    most :data:`MAX_JOBS`) draw them side by side; each file is the same bytes as one
    process draws (style and hash salt are per figure). Slowest first, so the last
    figure does not start alone. Returns the paths in the order of ``figures``.
    """
    # absolute: worker processes are reused and keep the directory they started in
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(figures)), key=lambda i: -SLOW.get(figures[i][0], 0.0))
    jobs = min(len(figures), jobs or min(MAX_JOBS, os.cpu_count() or 1))
    if jobs > 1:
        from joblib import Parallel, delayed

        done = Parallel(n_jobs=jobs, backend="loky", batch_size=1)(
            delayed(_draw)(data, figures[i], folder, formats, paper) for i in order
        )
    else:
        charts = charts_for(data)
        done = [
            _draw(data, figures[i], folder, formats, paper, charts[figures[i][0]]) for i in order
        ]
    by_index = dict(zip(order, done, strict=True))
    return [p for i in range(len(figures)) for p in by_index[i]]


#: Seconds a chart took to render on the canonical results (an AMD EPYC, one core):
#: the order the processes take them in. Charts not listed come after.
SLOW = {"seed_heatmap": 1.7, "agent_comparison": 1.6, "score_distribution": 1.3,
        "performance_profile": 1.2, "learning_curves": 1.2, "pairwise_significance": 1.1,
        "probability_of_improvement": 1.1}
#: More processes than this cost more in start-up than the charts save.
MAX_JOBS = 4


def _draw(
    data: ChartData,
    figure: Figure,
    folder: Path,
    formats: tuple[str, ...],
    paper: bool,
    chart=None,
) -> list[Path]:
    """One figure, each format (``chart`` looked up again in a worker process)."""
    name, stem, width = figure
    chart = chart or charts_for(data)[name]
    with style(paper=paper):
        return save(chart(data, width), folder, stem, formats)


def render_all(results: Path, docs: Path | None) -> list[Path]:
    """Render into ``<results>/charts`` and mirror into ``docs`` (if given)."""
    data = load_chart_data(results)
    out = results / "charts"
    paths = render_into(data, out)
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        for p in paths:
            shutil.copyfile(p, docs / p.name)
    return paths


def check(results: Path, docs: Path | None) -> list[str]:
    """Problems found: committed chart files that differ from a fresh render, or are missing."""
    data = load_chart_data(results)
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = render_into(data, Path(tmp))
        for folder in [results / "charts", *([docs] if docs is not None else [])]:
            for p in fresh:
                if p.name == VERSIONS_FILE:
                    continue
                committed = folder / p.name
                if not committed.exists():
                    problems.append(f"missing: {committed}")
                elif committed.read_bytes() != p.read_bytes():
                    problems.append(f"differs: {committed}")
            recorded = folder / VERSIONS_FILE
            if problems and recorded.exists():
                then = json.loads(recorded.read_text()).get("libraries", {})
                now = render_versions()
                changed = [
                    f"{k} {then.get(k)} -> {now.get(k)}" for k in now if then.get(k) != now.get(k)
                ]
                if changed:
                    problems.append(
                        f"{folder} was rendered with other versions: {', '.join(changed)}"
                    )
    return problems


__all__ = ["ChartDataError", "charts_for", "check", "default_docs", "render_all"]
