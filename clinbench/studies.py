"""A family's study: an evaluation that is not a grid of cells, run by the sweep and
shown in its report.

Some tasks do not fit a cell (one agent, one task, one seed, scored on worlds): the
portfolio family's offline prediction task fits each learner on one split's training
programs and scores every predictor on the held-out programs, pooled over the seeds,
with paired tests over programs. A family registers such a study here
(:func:`register_study`, from its registration module); ``clinbench sweep`` runs it
once the cells are done, for the sweep's seeds, whenever the sweep holds one of the
family's tasks, and keeps its results in ``<results>/studies/<name>.json``;
``clinbench report`` renders its section into ``benchmark_report.{md,json}`` and
``clinbench charts`` its charts. A study whose seeds and code are unchanged is resumed,
as a cell is. This module knows no family by name.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import clinbench
from clinbench.sweep.store import write_json_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the folder of a results folder that holds the studies' results
FOLDER = "studies"
#: what a sweep's ``studies`` key may say: run them at full size, quickly, or not at all
SIZES = ("full", "quick", "off")


@dataclass(frozen=True)
class Study:
    """What the generic layers need of a study."""

    #: file name and key of its results (``studies/<name>.json``, report ``studies.<name>``)
    name: str
    #: the environment family whose tasks bring it into a sweep
    family: str
    #: heading of its report section
    title: str
    #: its results (plain JSON data) for the sweep's seeds, over ``jobs`` processes, at
    #: a size of :data:`SIZES` (``quick``: a smaller version in seconds, for smoke runs)
    run: Callable[[Sequence[int], int, str], dict[str, Any]]
    #: its report section (Markdown, without the heading)
    markdown: Callable[[dict[str, Any]], str]
    #: chart name -> figure(results, width)
    charts: Mapping[str, Callable[[dict[str, Any], float], Figure]] = field(
        default_factory=dict
    )
    #: modules whose sources, with the family's cell code, make its code identity
    modules: tuple[str, ...] = ()


#: family -> "module:attribute" of its Study (imported when used)
_STUDIES: dict[str, str] = {}


def register_study(family: str, study: str) -> None:
    """Register ``family``'s study, ``"module:attribute"`` (its registration module calls
    this; the module is imported only when the study is used)."""
    _STUDIES[family] = study


def studies_of(families: Sequence[str]) -> list[Study]:
    """The studies of ``families`` (every registered family's study is found)."""
    from clinbench.env.registry import families as registered

    registered()  # the registry's scan imports every family, which registers its study
    out = []
    for fam in families:
        if fam in _STUDIES:
            module, _, attr = _STUDIES[fam].partition(":")
            out.append(getattr(importlib.import_module(module), attr))
    return out


def study_named(name: str) -> Study | None:
    from clinbench.env.registry import families as registered

    return next((s for s in studies_of(registered()) if s.name == name), None)


def code_id(study: Study) -> str:
    """clinbench's version and a hash of the study's modules and its family's cell code."""
    from clinbench.sweep.cells import cell_code_files

    root = Path(clinbench.__file__).parent
    files = cell_code_files(study.family)
    files += [
        Path(importlib.import_module(m).__file__).resolve().relative_to(root).as_posix()
        for m in study.modules
    ]
    digest = hashlib.sha256()
    for rel in sorted(set(files)):
        digest.update(rel.encode())
        digest.update((root / rel).read_bytes())
    return f"{clinbench.__version__}+{digest.hexdigest()[:12]}"


class StudyRuns(NamedTuple):
    """What :func:`run_studies` left: the results files of the studies run or resumed,
    and those of the studies that failed."""

    done: list[Path]
    failed: list[Path]


def path(results: Path, name: str) -> Path:
    return Path(results) / FOLDER / f"{name}.json"


def run_studies(
    results: Path,
    families: Sequence[str],
    seeds: Sequence[int],
    jobs: int,
    size: str = "full",
    resume: bool = True,
    say: Callable[[str], None] = print,
) -> StudyRuns:
    """Run (or resume) the studies of ``families`` for ``seeds`` at ``size`` (``off``:
    none); their results files, done and failed.

    A results file is written whole (``write_json_atomic``): an interrupted study leaves
    the previous one or none. A study that raises is kept as a failure (its
    traceback under ``"traceback"``, no ``"results"``), as a failing cell is: the other
    studies and the report go on, and the next sweep runs it again."""
    if size not in SIZES:
        raise ValueError(f"unknown study size {size!r}; valid: {', '.join(SIZES)}")
    written: list[Path] = []
    failed: list[Path] = []
    if size == "off":
        return StudyRuns(written, failed)
    for study in studies_of(families):
        target = path(results, study.name)
        identity = {"seeds": [int(s) for s in seeds], "size": size, "code": code_id(study)}
        if resume and target.exists():
            kept = read_record(target) or {}
            if {k: kept.get(k) for k in identity} == identity and "results" in kept:
                say(f"{study.name}: resumed ({target})")
                written.append(target)
                continue
        say(f"{study.name}: running ({study.title}; seeds {' '.join(map(str, seeds))})")
        t0 = time.perf_counter()
        record: dict[str, Any] = {"study": study.name, "family": study.family, **identity}
        try:
            record["results"] = study.run(list(identity["seeds"]), jobs, size)
        except Exception:  # noqa: BLE001 - kept, as a failing cell is; the sweep goes on
            record.update(status="failed", traceback=traceback.format_exc())
        seconds = time.perf_counter() - t0
        record["seconds"] = round(seconds, 1)
        write_json_atomic(target, record)
        if "results" in record:
            say(f"{study.name}: done in {seconds:.0f} s ({target})")
            written.append(target)
        else:
            last = record["traceback"].strip().splitlines()[-1]
            say(f"{study.name}: failed after {seconds:.0f} s: {last} (traceback in {target})")
            failed.append(target)
    return StudyRuns(written, failed)


def load_studies(
    results: Path, families: Sequence[str], seeds: Sequence[int] | None = None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The kept results of ``families``' studies in a results folder that a report may
    show (name -> record), and why the others may not: failed, unreadable, run for
    other seeds than ``seeds`` (when given) or by other code than this checkout's."""
    out, problems = {}, []
    for study in studies_of(families):
        target = path(results, study.name)
        if not target.exists():
            continue
        record = read_record(target)
        if record is None:
            problems.append(f"study {study.name}: {target} is unreadable; left out "
                            "(the next sweep runs it again)")
        elif "results" not in record:
            last = str(record.get("traceback", "")).strip().splitlines()[-1:] or ["?"]
            problems.append(f"study {study.name} failed: {last[0]} (traceback in {target})")
        elif seeds is not None and sorted(record.get("seeds") or []) != sorted(map(int, seeds)):
            problems.append(f"study {study.name} was run for seeds {record.get('seeds')}, "
                            f"the cells for {sorted(int(s) for s in seeds)}; left out")
        elif record.get("code") != code_id(study):
            problems.append(f"study {study.name} was run by other code ({record.get('code')}, "
                            f"this checkout {code_id(study)}); left out: run the sweep again")
        else:
            out[study.name] = record
    return out, problems


def read_record(target: Path) -> dict[str, Any] | None:
    """A study's results file, or ``None`` if it is not a readable record."""
    try:
        record = json.loads(target.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(record, dict) or ("results" in record
                                        and not isinstance(record["results"], dict)):
        return None
    return record
