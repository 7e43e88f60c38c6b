"""Recompute the normalisation references of every environment family and write them.

    python experiments/compute_reference_scores.py                 # writes the modules
    python experiments/compute_reference_scores.py --check         # exit 1 if one is stale (CI)
    python experiments/compute_reference_scores.py --family trial_design
    python experiments/compute_reference_scores.py --seeds-count 20 --output /tmp/refs

Each reference is the mean score over the same fixed world seeds (``REFERENCE_SEEDS``:
``REFERENCE_WORLDS`` = 1,000 per task by default, ``--seeds-count`` for fewer) of
``random`` and of the family's oracle reference planner (``PLANNER`` in
``clinbench/references/<family>.py``), with its standard error and the number of
worlds, written to the module its ``Family.references`` names (or into ``--output``),
with the code identity that computed them (``CODE``,
:func:`clinbench.references.reference_code`): the test suite checks that identity, CI
recomputes the numbers. ``--jobs`` computes the tasks side by side (the same numbers).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from clinbench.env.registry import env_ids, families, family, spec
from clinbench.references import (
    REFERENCE_WORLDS,
    reference_code,
    reference_scores,
    reference_seeds,
)

ROOT = Path(__file__).resolve().parents[1]


def target(name: str) -> Path:
    """The file of the family's stored references."""
    return ROOT / (family(name).references.replace(".", "/") + ".py")


def with_references() -> list[str]:
    return [f for f in families() if family(f).references]


def render(name: str, count: int = REFERENCE_WORLDS, jobs: int = 1) -> str:
    """The Python source of the family's constants module, over ``count`` worlds per task
    (``jobs`` processes compute its tasks side by side)."""
    planner = importlib.import_module(f"clinbench.references.{name}").PLANNER
    seeds = reference_seeds(count)
    tasks = [i for i in env_ids() if spec(i).env == name]
    if jobs > 1:
        from joblib import Parallel, delayed

        computed = Parallel(n_jobs=min(jobs, len(tasks)), backend="loky")(
            delayed(reference_scores)(env_id, planner, seeds) for env_id in tasks
        )
    else:
        computed = [reference_scores(env_id, planner, seeds) for env_id in tasks]
    lines = [
        '"""Normalisation references per task (generated: do not edit by hand).',
        "",
        "Regenerate with ``python experiments/compute_reference_scores.py``. Each reference",
        f"is a policy's mean score over world seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} worlds),",
        "with its standard error (``<policy>_se``) and the number of worlds (``worlds``):",
        "0 on the normalised scale is random's mean on these worlds, 1 the planner's.",
        '"""',
        "",
        f"TASK_VERSION = {family(name).task_version}",
        "#: clinbench's version and a hash of the sources that computed these numbers",
        f"CODE = {reference_code(name)!r}",
        "",
        "REFERENCE_SCORES: dict[str, dict[str, float]] = {",
    ]
    for env_id, scores in zip(tasks, computed, strict=True):
        lines.append(f"    {spec(env_id).task!r}: {{")
        for key, s in scores.items():
            lines.append(f"        {key!r}: {s['mean']!r},")
        for key, s in scores.items():
            lines.append(f"        {key + '_se'!r}: {s['se']!r},")
        lines.append(f"        'worlds': {len(seeds)},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a stored module is stale")
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument(
        "--seeds-count",
        type=int,
        default=REFERENCE_WORLDS,
        help=f"reference worlds per task (default {REFERENCE_WORLDS})",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="processes computing tasks side by side (default 1)"
    )
    parser.add_argument(
        "--output", type=Path, help="write <family>_scores.py into this folder instead"
    )
    args = parser.parse_args(argv)
    if args.seeds_count < 2:
        parser.error("--seeds-count must be at least 2 (a standard error needs two worlds)")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    names = args.family or with_references()
    unknown = sorted(set(names) - set(with_references()))
    if unknown:
        parser.error(f"no references for {unknown}; valid: {', '.join(with_references())}")
    stale = 0
    for name in names:
        text = render(name, args.seeds_count, args.jobs)
        path = args.output / target(name).name if args.output else target(name)
        if args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} is stale: rerun without --check", file=sys.stderr)
                stale += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(text)
    if args.check and not stale:
        print("reference scores are current")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
