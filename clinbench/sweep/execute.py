"""Running a sweep through joblib, the one execution seam, with resume and failures.

Backends: ``loky`` (local processes), ``sequential`` (this process), ``dask`` (joblib's
dask backend on a ``dask.distributed`` cluster: an existing scheduler address or a
``LocalCluster``) and ``ray`` (optional). Records stream back as cells finish and are
written by this process, atomically, so workers need no shared file system and a
killed sweep loses only the cells in flight.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joblib import Parallel, delayed, parallel_config
from omegaconf import OmegaConf
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from clinbench import evaluation_key
from clinbench.config import ConfigError, SweepConfig
from clinbench.evaluation_key import PUBLIC, EvaluationKey
from clinbench.numerics import (
    PINNED_KERNEL,
    PINNED_NUMPY,
    blas_kernel,
    numpy_simd,
    pin_worker_environment,
)
from clinbench.sweep.cells import Cell, code_id, expand, expected_cost, run_cell_record
from clinbench.sweep.provenance import config_hash, manifest
from clinbench.sweep.store import (
    CorruptCell,
    cell_path,
    read_cell,
    remove_stale_temps,
    write_json_atomic,
)
from clinbench.sweep.tidy import write_tidy


@dataclass
class SweepOutcome:
    """What a sweep did: counts, failures (with tracebacks) and corrupt files seen."""

    total: int
    ran: int
    resumed: int
    failed: list[dict[str, Any]] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    stopped_early: bool = False
    wall_seconds: float = 0.0
    outputs: dict[str, Path] = field(default_factory=dict)
    #: the records of the sweep's cells, in report order
    records: list[dict[str, Any]] = field(default_factory=list)
    #: the results files of the families' studies that failed (``clinbench.studies``)
    failed_studies: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.failed_studies and not self.stopped_early


@contextlib.contextmanager
def backend(cfg: SweepConfig) -> Iterator[int]:
    """Configure joblib for the chosen backend; yields the number of jobs."""
    lc = cfg.launcher
    if lc.backend == "sequential":
        with parallel_config(backend="sequential"):
            yield 1
        return
    if lc.backend == "loky":
        with parallel_config(backend="loky", initializer=exit_with, initargs=(os.getpid(),)):
            yield lc.jobs or os.cpu_count() or 1
        return
    if lc.backend == "dask":
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ConfigError("the dask backend needs dask[distributed]") from None
        if lc.scheduler in (None, "", "local"):
            workers = lc.jobs or os.cpu_count() or 1
            with (
                LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster),
                parallel_config(backend="dask"),
            ):
                yield workers
        else:
            try:
                client = Client(lc.scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(
                    f"cannot reach the dask scheduler {lc.scheduler!r}: {exc}"
                ) from None
            with client, parallel_config(backend="dask"):
                yield lc.jobs or max(1, sum(client.nthreads().values()))
        return
    if lc.backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError:
            raise ConfigError(
                'the ray backend needs ray: pip install -c constraints.txt -e ".[ray]"'
            ) from None
        ray.init(address=lc.scheduler, ignore_reinit_error=True, include_dashboard=False)
        register_ray()
        try:
            with parallel_config(backend="ray"):
                yield lc.jobs or int(ray.cluster_resources().get("CPU", 1))
        finally:
            ray.shutdown()
        return
    raise ConfigError(f"unknown backend {lc.backend!r}")


def plan(
    cfg: SweepConfig,
    resume: bool,
    retry_failed: bool,
    key: EvaluationKey = PUBLIC,
    isolate: bool = False,
    keep: frozenset[str] = frozenset(),
) -> tuple[list[Cell], list[str], dict[str, dict[str, Any]], list[str]]:
    """Which cells to run; (cells, their hashes, records reused, corrupt-file messages).
    ``keep``: hashes whose files are reused even without ``resume`` (a grid's cells that
    an earlier point of the same grid computed)."""
    runs = cfg.results / "runs"
    cells = expand(cfg, key, isolate)
    hashes = [c.hash for c in cells]
    reused: dict[str, dict[str, Any]] = {}
    corrupt: list[str] = []
    for h in hashes:
        path = cell_path(runs, h)
        if (not resume and h not in keep) or not path.exists():
            continue
        try:
            record = read_cell(path, h)
        except CorruptCell as exc:
            corrupt.append(str(exc))
            continue
        if record["status"] == "failed" and retry_failed:
            continue
        reused[h] = record
    return cells, hashes, reused, corrupt


def run_sweep(
    cfg: SweepConfig,
    *,
    resume: bool = True,
    retry_failed: bool = False,
    fail_fast: bool = False,
    console: Console | None = None,
    show_progress: bool = True,
    key: EvaluationKey = PUBLIC,
    isolate: bool = False,
    loggers: tuple[str, ...] = (),
    outputs: bool = True,
    keep: frozenset[str] = frozenset(),
) -> SweepOutcome:
    """Run (or resume) the sweep of ``cfg`` and rebuild its tidy outputs and manifest.

    ``key`` derives every world (``clinbench.evaluation_key``): a held-out key is kept
    in the results folder (owner-only) before any cell runs, so a resume reuses it; the
    manifest and the cell files record only its commitment. ``isolate`` evaluates each
    trained agent in a process of its own. ``loggers`` (``clinbench.sweep.logs``) get
    every learning cell's curve and final scalars once the cells are done. Without
    ``outputs`` only the cells run (and ``outcome.records`` holds them): a grid's point,
    whose tables the grid writes; ``keep`` as in ``plan``."""
    console = console or Console(stderr=True)
    started = dt.datetime.now(dt.UTC)
    t0 = time.perf_counter()
    runs = cfg.results / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stale = remove_stale_temps(runs) + remove_stale_temps(cfg.results)
    if stale:
        console.print(f"removed {len(stale)} temporary file(s) left by an interrupted sweep")
    kernel = blas_kernel()
    pin_worker_environment()  # workers get the pinned kernels whatever this process loaded
    if kernel not in (None, PINNED_KERNEL) and cfg.launcher.backend == "sequential":
        console.print(
            f"[yellow]warning:[/] OpenBLAS runs its {kernel} kernel, not {PINNED_KERNEL}, in this "
            "process, "
            "which computes the cells (backend sequential): learning agents may not reproduce the "
            "canonical "
            f"numbers (import clinbench before numpy, or set OPENBLAS_CORETYPE={PINNED_KERNEL}; "
            "clinbench/numerics.py)"
        )
    if _unpinned_simd(numpy_simd()) and cfg.launcher.backend == "sequential":
        console.print(
            f"[yellow]warning:[/] numpy dispatches to {numpy_simd()}, not {PINNED_NUMPY}, in this "
            "process, which computes the cells (backend sequential): learning agents may not "
            "reproduce the canonical numbers (import clinbench before numpy, or set "
            "NPY_DISABLE_CPU_FEATURES; clinbench/numerics.py)"
        )
    keep_key(cfg.results, key)
    cells, hashes, records, corrupt = plan(cfg, resume, retry_failed, key, isolate, keep)
    for message in corrupt:
        console.print(f"[yellow]corrupt cell file, recomputing:[/] {message}")
    todo = sorted(
        (c for c, h in zip(cells, hashes, strict=True) if h not in records),
        key=lambda c: -expected_cost(c),
    )
    todo_hash = {id(c): h for c, h in zip(cells, hashes, strict=True)}
    outcome = SweepOutcome(total=len(cells), ran=0, resumed=len(records), corrupt=corrupt)
    used_jobs = 0  # jobs actually used (0 when every cell was resumed)
    for r in records.values():
        if r["status"] == "failed":
            outcome.failed.append(r)

    columns = (
        TextColumn("[bold]sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[failed]} failed"),
    )
    # a bar on a terminal; in a log (CI, nohup) a bar appears only at exit: a line per cell
    lines = ProgressLines(console, len(cells), len(records)) if show_progress else None
    bar_shown = show_progress and console.is_terminal
    with Progress(*columns, console=console, disable=not bar_shown) as progress:
        bar = progress.add_task(
            "cells", total=len(cells), completed=len(records), failed=len(outcome.failed)
        )
        try:
            if todo:
                with backend(cfg) as jobs:
                    used_jobs = min(jobs, len(todo))
                    tasks = (delayed(run_cell_record)(c.to_dict(), todo_hash[id(c)]) for c in todo)
                    stream = _stream(cfg.launcher.backend, used_jobs, tasks)
                    try:
                        for record in stream:
                            write_json_atomic(
                                cell_path(runs, record["hash"]), record, compact=True
                            )
                            records[record["hash"]] = record
                            outcome.ran += 1
                            if record["status"] == "failed":
                                outcome.failed.append(record)
                                k = record["key"]
                                progress.console.print(
                                    f"[red]failed:[/] {k['agent']} on {k['task']} seed {k['seed']}"
                                )
                            progress.update(bar, advance=1, failed=len(outcome.failed))
                            if lines is not None and not bar_shown:
                                lines.cell_done(len(outcome.failed))
                            if fail_fast and record["status"] == "failed":
                                outcome.stopped_early = True
                                break
                    finally:
                        if hasattr(stream, "close"):
                            stream.close()
        except KeyboardInterrupt:
            raise SweepInterrupted(len(records), len(cells), outcome.ran, runs) from None

    ordered = [records[h] for h in hashes if h in records]
    other = sorted(
        {r.get("blas_kernel") for r in ordered if r.get("blas_kernel") not in (None, PINNED_KERNEL)}
    )
    if other:
        console.print(
            f"[yellow]warning:[/] some cells ran with OpenBLAS kernel(s) {', '.join(other)}, not "
            f"{PINNED_KERNEL} "
            "(each cell file records its 'blas_kernel'; docs/scaling.md says how to pin it on "
            "workers)"
        )
    simd = sorted(
        {str(r.get("numpy_simd")) for r in ordered if _unpinned_simd(r.get("numpy_simd"))}
    )
    if simd:
        console.print(
            f"[yellow]warning:[/] some cells ran with numpy dispatching to {' / '.join(simd)}, "
            f"not {PINNED_NUMPY} (each cell file records its 'numpy_simd'; docs/scaling.md says "
            "how to pin it on workers)"
        )
    outcome.records = ordered
    if not outputs:  # a point of a grid (clinbench.sweep.grid writes the grid's outputs)
        outcome.wall_seconds = time.perf_counter() - t0
        return outcome
    outcome.outputs = write_tidy(ordered, cfg.results)
    if loggers:
        from clinbench.sweep.logs import write_logs

        outcome.outputs.update(write_logs(ordered, cfg.results, loggers))
    outcome.wall_seconds = time.perf_counter() - t0
    resolved = OmegaConf.to_yaml(OmegaConf.create(cfg.raw))
    (cfg.results / "config.yaml").write_text(resolved)
    write_json_atomic(
        cfg.results / "manifest.json",
        manifest(
            code={env: code_id(env) for env in cfg.envs},
            config_hash=config_hash(resolved),
            backend=cfg.launcher.backend,
            jobs=used_jobs,
            started=started.isoformat(timespec="seconds"),
            finished=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            wall_seconds=round(outcome.wall_seconds, 3),
            grid={
                "env": cfg.env,
                "envs": cfg.envs,
                "task_envs": dict(cfg.task_envs),
                "tasks": list(cfg.tasks),
                "agents": list(cfg.agents),
                "seeds": list(cfg.protocol.seeds),
            },
            protocol={
                "train_steps": cfg.protocol.train_steps,
                "budget_scale": cfg.protocol.budget_scale,
                "train_steps_by_family": {
                    env: cfg.protocol.training_steps(env) for env in cfg.envs
                },
                "eval_episodes": cfg.protocol.eval_episodes,
                "eval_episodes_by_family": {
                    env: cfg.protocol.evaluation_episodes(env) for env in cfg.envs
                },
                "curve_points": cfg.protocol.curve_points,
                "curve_episodes": cfg.protocol.curve_episodes,
                "curve_episodes_by_family": {
                    env: cfg.protocol.validation_episodes(env) for env in cfg.envs
                },
                "select_checkpoint": cfg.protocol.select_checkpoint,
                "oc_episodes": cfg.protocol.oc_episodes,
                "null_episodes": cfg.protocol.null_episodes,
            },
            evaluation={**key.about(), "isolated_agents": isolate},
            counts={
                "total": outcome.total,
                "ran": outcome.ran,
                "resumed": outcome.resumed,
                "failed": len(outcome.failed),
                "corrupt": len(corrupt),
            },
            cells=[
                {
                    "hash": h,
                    **c.key,
                    "status": records[h]["status"] if h in records else "missing",
                    "seconds": round(records[h]["timing"].get("total_seconds", 0.0), 3)
                    if h in records
                    else None,
                }
                for c, h in zip(cells, hashes, strict=True)
            ],
        ),
    )
    outcome.outputs["manifest"] = cfg.results / "manifest.json"
    from clinbench.studies import run_studies

    local_jobs = 1 if cfg.launcher.backend == "sequential" else cfg.launcher.jobs or os.cpu_count()
    runs = run_studies(  # on this machine, whatever the cells' backend
        cfg.results, cfg.envs, cfg.protocol.seeds, local_jobs or 1, size=cfg.studies,
        resume=resume, say=console.print if show_progress else lambda _: None,
    )
    for path in runs.done:
        outcome.outputs[f"study {path.stem}"] = path
    outcome.failed_studies = runs.failed
    return outcome


def _stream(backend_name: str, jobs: int, tasks: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """The cells' records as they finish (joblib's unordered generator). Ray's joblib
    backend returns no generator, so there the cells go in rounds of ``jobs`` (the costly
    first), each round's records written as it ends: a killed sweep still loses only the
    cells in flight."""
    if backend_name != "ray":
        return Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks)
    return _rounds(jobs, tasks)


def _rounds(jobs: int, tasks: Iterator[Any]) -> Iterator[dict[str, Any]]:
    while batch := list(itertools.islice(tasks, jobs)):
        yield from Parallel(n_jobs=jobs, return_as="list")(batch)


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: what was kept (every finished cell is on disk) and where."""

    def __init__(self, kept: int, total: int, ran: int, runs: Path) -> None:
        super().__init__(f"{kept} of {total} cells kept in {runs}")
        self.kept, self.total, self.ran, self.runs = kept, total, ran, runs


class ProgressLines:
    """``sweep: 12/117 cells (0 failed), 40 s elapsed, eta 5 min``, one line per finished
    cell, for output that is not a terminal."""

    def __init__(self, console: Console, total: int, done: int) -> None:
        self.console, self.total, self.done, self.resumed = console, total, done, done
        self.t0 = time.perf_counter()

    def cell_done(self, failed: int) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / (self.done - self.resumed) * (self.total - self.done)
        self.console.print(
            f"sweep: {self.done}/{self.total} cells ({failed} failed), "
            f"{_duration(elapsed)} elapsed, eta {_duration(eta)}",
            markup=False,
            highlight=False,
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def exit_with(parent: int) -> None:
    """Initializer of loky's workers: end the worker when the sweep's process ``parent``
    is gone. After a kill -9 of the sweep they would otherwise wait for work until their
    idle timeout (minutes), and loky's resource trackers with them. A worker ignores
    Ctrl-C (the terminal sends it to the whole process group): the sweep's process
    stops the pool and says what it kept, without a traceback from each worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() == parent:
        threading.Thread(target=_watch, args=(parent,), daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def keep_key(results: Path, key: EvaluationKey) -> None:
    """Store a held-out key in ``results``; drop a stale one under the public key (the
    report would otherwise reveal a key that no cell used)."""
    path = results / evaluation_key.KEY_FILE
    if key.mode == "held_out":
        evaluation_key.store(results, key)
    elif path.exists():
        path.unlink()


def _unpinned_simd(simd: str | None) -> bool:
    """numpy dispatched above the pinned level (a cell file without the field is not)."""
    return simd is not None and PINNED_NUMPY in simd.split() and simd != PINNED_NUMPY
