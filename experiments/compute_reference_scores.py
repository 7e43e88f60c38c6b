"""Recompute the normalisation references and write them as constants.

    python experiments/compute_reference_scores.py          # writes the module
    python experiments/compute_reference_scores.py --check  # exit 1 if it is stale

Each reference is the mean score over the same 100 fixed world seeds
(``REFERENCE_SEEDS``) of ``random`` and of the oracle reference planner.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clinbench.env.recruitment.tasks import TASK_VERSION, TASKS
from clinbench.references.recruitment import REFERENCE_SEEDS, reference_means

TARGET = Path(__file__).resolve().parents[1] / "clinbench/references/recruitment_scores.py"


def render() -> str:
    """The Python source of the constants module."""
    lines = [
        '"""Normalisation references per task (generated: do not edit by hand).',
        "",
        "Regenerate with ``python experiments/compute_reference_scores.py``; the means are",
        (
            f"over world seeds {REFERENCE_SEEDS[0]}..{REFERENCE_SEEDS[-1]} "
            f"({len(REFERENCE_SEEDS)} seeds)."
        ),
        '"""',
        "",
        f"TASK_VERSION = {TASK_VERSION}",
        "",
        "REFERENCE_SCORES: dict[str, dict[str, float]] = {",
    ]
    for task in TASKS:
        means = reference_means(task)
        lines.append(f"    {task!r}: {{")
        for name, value in means.items():
            lines.append(f"        {name!r}: {value!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the stored module is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: rerun without --check", file=sys.stderr)
            return 1
        print("reference scores are current")
        return 0
    TARGET.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
