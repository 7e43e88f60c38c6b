"""Sweep wall time with one and two jobs, and the speed-up.

    python benchmarks/sweep_speed.py                 # the default sweep (minutes)
    python benchmarks/sweep_speed.py preset=smoke    # any sweep overrides pass through

Each run is a fresh ``clinbench sweep --no-resume`` in its own temporary folder, timed
from outside (process start to exit, so it includes imports, the progress bar and
writing the tidy files). The two runs must give byte-identical ``sweep_results.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_sweep(jobs: int, overrides: list[str], folder: Path) -> float:
    cmd = [
        sys.executable,
        "-m",
        "clinbench.cli.app",
        "sweep",
        "--no-resume",
        "--quiet",
        "--jobs",
        str(jobs),
        "--results",
        str(folder),
        *overrides,
    ]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "overrides", nargs="*", help="sweep flags / Hydra overrides, e.g. preset=smoke"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one, two = Path(tmp, "jobs1"), Path(tmp, "jobs2")
        t2 = timed_sweep(2, args.overrides, two)
        t1 = timed_sweep(1, args.overrides, one)
        same = (one / "sweep_results.csv").read_bytes() == (two / "sweep_results.csv").read_bytes()
        cells = json.loads((two / "manifest.json").read_text())["counts"]["total"]
    result = {
        "machine": f"{platform.machine()} {platform.processor()}".strip(),
        "cores": os.cpu_count(),
        "cells": cells,
        "jobs1_seconds": round(t1, 1),
        "jobs2_seconds": round(t2, 1),
        "speedup": round(t1 / t2, 2),
        "cells_per_second_jobs2": round(cells / t2, 3),
        "identical_results": same,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:24s} {v}")
    if not same:
        sys.exit("results differ between --jobs 1 and --jobs 2")


if __name__ == "__main__":
    main()
