"""Recompute the normalisation references of every environment family and write them.

    python experiments/compute_reference_scores.py                 # writes the modules
    python experiments/compute_reference_scores.py --check         # exit 1 if one is stale
    python experiments/compute_reference_scores.py --family trial_design

Each reference is the mean score over the same 100 fixed world seeds
(``REFERENCE_SEEDS``) of ``random`` and of the family's oracle reference planner
(``PLANNER`` in ``clinbench/references/<family>.py``), written to the module its
``Family.references`` names.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from clinbench.env.registry import env_ids, families, family, spec
from clinbench.references import REFERENCE_SEEDS, reference_means

ROOT = Path(__file__).resolve().parents[1]


def target(name: str) -> Path:
    """The file of the family's stored references."""
    return ROOT / (family(name).references.replace(".", "/") + ".py")


def with_references() -> list[str]:
    return [f for f in families() if family(f).references]


def render(name: str) -> str:
    """The Python source of the family's constants module."""
    planner = importlib.import_module(f"clinbench.references.{name}").PLANNER
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
        f"TASK_VERSION = {family(name).task_version}",
        "",
        "REFERENCE_SCORES: dict[str, dict[str, float]] = {",
    ]
    for env_id in env_ids():
        if spec(env_id).env != name:
            continue
        means = reference_means(env_id, planner)
        lines.append(f"    {spec(env_id).task!r}: {{")
        for key, value in means.items():
            lines.append(f"        {key!r}: {value!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a stored module is stale")
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    args = parser.parse_args(argv)
    names = args.family or with_references()
    unknown = sorted(set(names) - set(with_references()))
    if unknown:
        parser.error(f"no references for {unknown}; valid: {', '.join(with_references())}")
    stale = 0
    for name in names:
        text, path = render(name), target(name)
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} is stale: rerun without --check", file=sys.stderr)
                stale += 1
            continue
        path.write_text(text)
        print(text)
    if args.check and not stale:
        print("reference scores are current")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
