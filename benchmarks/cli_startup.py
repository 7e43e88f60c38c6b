"""Start-up of the command line: ``clinbench --help`` and an argument error, as a ratio
to ``python -c pass`` (the interpreter's own start-up, so the figure travels between
machines better than seconds do).

    python benchmarks/cli_startup.py [--rounds 15] [--json]

Each command runs ``--rounds`` times in a fresh interpreter (this one, with the
repository first on ``PYTHONPATH``); the medians are reported. The target is 0.3 s for
``--help`` and for an argument error on a quiet machine. What the command line imports
before parsing is also listed: none of pandas, scipy, matplotlib, Hydra or the
environments should be among them (tests/test_cli_startup.py checks it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "import clinbench": ["-c", "import clinbench"],
    "clinbench --help": ["-m", "clinbench.cli.app", "--help"],
    "clinbench sweep --help": ["-m", "clinbench.cli.app", "sweep", "--help"],
    "clinbench sweep --seeds x (exit 2)": ["-m", "clinbench.cli.app", "sweep", "--seeds", "x"],
}
HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "hydra", "omegaconf", "gymnasium", "joblib")


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    env.pop("PYTHONSTARTUP", None)
    return env


def median_seconds(args: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], capture_output=True, env=_env(), check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def heavy_modules() -> list[str]:
    code = (
        "import sys, clinbench.cli.app\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True
    )
    return out.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    seconds = {name: median_seconds(cmd, args.rounds) for name, cmd in COMMANDS.items()}
    base = seconds["python -c pass"]
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "rounds": args.rounds,
        "median_seconds": {k: round(v, 4) for k, v in seconds.items()},
        "ratio_to_python": {k: round(v / base, 2) for k, v in seconds.items()},
        "heavy_modules_imported_by_the_cli": heavy_modules(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"median of {args.rounds} fresh interpreters (load average {result['load_average']}):")
    for name, s in seconds.items():
        print(f"  {name:38s} {s * 1000:7.1f} ms  {s / base:5.1f}x python -c pass")
    heavy = result["heavy_modules_imported_by_the_cli"]
    print(f"heavy modules imported by the CLI: {' '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
