"""The reference benchmark's command line, on clinbench's sweep.

    python experiments/full_sweep.py --seeds 1 7 21 42 123 --steps 5400 --eval-episodes 5

A thin wrapper: every argument goes to ``clinbench sweep`` unchanged (flags and Hydra
overrides alike), so it runs exactly the same code path.
"""

from __future__ import annotations

import sys

from clinbench.cli.app import app


def main(argv: list[str] | None = None) -> None:
    app(["sweep", *(sys.argv[1:] if argv is None else argv)], prog_name="full_sweep.py")


if __name__ == "__main__":
    main()
