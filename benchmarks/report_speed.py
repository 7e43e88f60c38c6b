"""Time of ``clinbench report`` (statistics, JSON, Markdown; charts separately).

    python benchmarks/report_speed.py [--results data/sweep_results] [--repeat 3]
    python benchmarks/report_speed.py --limit 16    # exit 1 if the report takes longer
    python benchmarks/report_speed.py --export      # + paper figures: one process vs the pool
    python benchmarks/report_speed.py --per-chart   # CPU seconds of each chart, one process

Reports into a temporary copy of the results folder, so the committed files are not
touched; the default folder is the canonical grid (8 agents x 8 tasks x 5 seeds). The
report's time is the median over ``--repeat`` runs of wall and CPU time (CPU time is
steadier on a shared machine).

Measured on the canonical grid, 50,000 bootstrap replicates, on a shared 2-core
machine (three runs each, alternating): before the per-family report (one aggregate
over all tasks) 6.9 / 8.4 / 7.6 s CPU; with per-family aggregates, equivalence tests,
rank ranges and disagreements 6.6 / 7.3 / 6.8 s (the seeds-needed search now brackets
by doubling instead of bisecting from 100,000). The limit the report must stay within
is twice the former: ``--limit 16``. On this round's canonical grid (7 agents x 6 tasks x
5 seeds, 40 / 480 evaluation episodes per cell, an AMD EPYC with a test run sharing it):
5.7 s CPU, charts 14.8 s.

``--export`` also times ``clinbench export``'s figures (every chart at both widths, PDF)
drawn by one process and by the default pool (``clinbench.charts.draw``), in alternating
rounds, and checks that both give the same files. Each pool round starts new worker
processes, as a ``clinbench export`` command does (their start-up and imports count).

``--per-chart`` draws each chart of the folder in this process, built and saved as SVG
and PNG as ``clinbench charts`` does, and prints its CPU seconds and their total; with
``PYTHONPATH`` at another checkout it times that checkout's charts, so two versions can
be run in alternation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from clinbench.charts import MAX_JOBS, render_all
from clinbench.charts.data import load_chart_data
from clinbench.charts.export import export_figures
from clinbench.report import make_report


def time_export(folder: Path, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds of ``export_figures`` with one process and with the default pool, per
    round (alternating); exits if the two give different files."""
    from joblib.externals.loky import get_reusable_executor

    data = load_chart_data(folder)
    one, pool = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for jobs, times in ((1, one), (None, pool)):
                get_reusable_executor().shutdown(wait=True)  # a cold pool, as a command has
                out = Path(tmp) / f"{r}-{jobs}"
                t0 = time.perf_counter()
                export_figures(data, out, "pdf", jobs=jobs)
                times.append(time.perf_counter() - t0)
            a, b = (
                {f.name: f.read_bytes() for f in (Path(tmp) / f"{r}-{j}").iterdir()}
                for j in (1, None)
            )
            if a != b:
                sys.exit(f"round {r}: the pool drew other files than one process")
    return one, pool


def time_charts(folder: Path) -> dict[str, float]:
    """CPU seconds of each chart of ``folder``, built and saved (SVG and PNG) here."""
    from clinbench.charts.figures import charts_for
    from clinbench.charts.style import DOUBLE_COLUMN, FORMATS, save, style

    data = load_chart_data(folder)
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, chart in charts_for(data).items():
            c0 = time.process_time()
            with style(paper=False):
                save(chart(data, DOUBLE_COLUMN), Path(tmp), name, FORMATS)
            seconds[name] = time.process_time() - c0
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=Path("data/sweep_results"))
    parser.add_argument("--repeat", type=int, default=1, help="report runs (median reported)")
    parser.add_argument("--limit", type=float, help="exit 1 if the median CPU time exceeds it")
    parser.add_argument("--no-charts", action="store_true", help="time the report only")
    parser.add_argument(
        "--export", action="store_true", help="time the paper figures, one process vs the pool"
    )
    parser.add_argument(
        "--per-chart", action="store_true", help="only the CPU seconds of each chart, one process"
    )
    args = parser.parse_args()
    if args.per_chart:
        seconds = time_charts(args.results)
        for name, s in seconds.items():
            print(f"{name:32s} {s:6.2f} s CPU")
        print(f"{'all ' + str(len(seconds)) + ' charts':32s} {sum(seconds.values()):6.2f} s CPU")
        return 0
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        shutil.copytree(args.results, folder)
        for _ in range(max(1, args.repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            report, _ = make_report(folder, reproducible=True)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        t1 = time.perf_counter()
        if not args.no_charts:
            render_all(folder, None)
        t2 = time.perf_counter()
        exported = time_export(folder, max(1, args.repeat)) if args.export else None
    p = report["protocol"]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(
        f"grid: {len(p['agents'])} agents x {len(p['tasks'])} tasks x {len(p['seeds'])} seeds, "
        f"{p['bootstrap_reps']} bootstrap replicates"
    )
    print(f"report (statistics + JSON + Markdown): {wall:.2f} s wall, {cpu:.2f} s CPU")
    if not args.no_charts:
        print(f"charts (SVG + PNG):                    {t2 - t1:.2f} s")
    if exported is not None:
        one, pool = (statistics.median(t) for t in exported)
        rounds = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in zip(*exported, strict=True))
        print(
            f"export figures (PDF, both widths):     one process {one:.2f} s, "
            f"pool of {min(MAX_JOBS, os.cpu_count() or 1)} {pool:.2f} s "
            f"({one / pool:.2f}x; rounds {rounds}), same bytes"
        )
    if args.limit is not None and cpu > args.limit:
        print(f"the report took {cpu:.2f} s CPU, over the limit of {args.limit} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
