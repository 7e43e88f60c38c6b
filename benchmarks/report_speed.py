"""Time of ``clinbench report`` (statistics, JSON, Markdown; charts separately).

    python benchmarks/report_speed.py [--results data/sweep_results]

Reports into a temporary copy of the results folder, so the committed files are not
touched; the default folder is the canonical 6-agent x 3-task x 5-seed grid.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from clinbench.charts import render_all
from clinbench.report import make_report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=Path("data/sweep_results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        shutil.copytree(args.results, folder)
        t0 = time.perf_counter()
        report, _ = make_report(folder, reproducible=True)
        t1 = time.perf_counter()
        render_all(folder, None)
        t2 = time.perf_counter()
    p = report["protocol"]
    print(
        f"grid: {len(p['agents'])} agents x {len(p['tasks'])} tasks x {len(p['seeds'])} seeds, "
        f"{p['bootstrap_reps']} bootstrap replicates"
    )
    print(f"report (statistics + JSON + Markdown): {t1 - t0:.2f} s")
    print(f"charts (9 charts, SVG + PNG):          {t2 - t1:.2f} s")


if __name__ == "__main__":
    main()
