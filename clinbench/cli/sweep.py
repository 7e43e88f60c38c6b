"""``clinbench sweep``: run every selected agent on every task for every seed.

Flags are sugar for Hydra overrides of ``conf/config.yaml``; any override can follow
as a trailing argument (``preset=smoke``, ``agent.hcapo.omega=0``). The configuration
is validated before any work: bad input exits 2 naming the valid choices.
"""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from clinbench import evaluation_key
from clinbench.cli.argv import split_list
from clinbench.cli.common import (
    console,
    err_console,
    examples,
    fail,
    quote,
    writable_folder,
)

if TYPE_CHECKING:  # imported where used: the command line's help must not wait for them
    from clinbench.config import SweepConfig
    from clinbench.sweep.execute import SweepInterrupted


class Backend(str, Enum):
    loky = "loky"
    sequential = "sequential"
    dask = "dask"
    ray = "ray"


def register(app: typer.Typer) -> None:
    app.command(
        "sweep",
        context_settings={"allow_extra_args": False},
        epilog=examples(
            "clinbench sweep --seeds 1 7 21 42 123",
            "clinbench sweep --seeds 1,7,21 --agents heuristic,hcapo --tasks easy_bench --jobs 2",
            "clinbench sweep preset=smoke --results /tmp/smoke",
            "clinbench sweep --agents hcapo agent.hcapo.omega=0 --results /tmp/hcapo_omega0",
            "clinbench sweep --backend dask --scheduler tcp://10.0.0.5:8786",
            "clinbench sweep --held-out --isolate-agents --results results/claim",
            "clinbench sweep --agents hcapo,klong --log tensorboard,mlflow --results /tmp/watch",
            "clinbench sweep -m protocol.eval_episodes=3,5 agent.hcapo.omega=0,0.5 "
            "--results /tmp/grid",
            "clinbench sweep env=trial_design --agents heuristic,bc,rwbc,iql "
            "--dataset trial-mixed-v0 --split worlds,unseen=null_world",
        ),
    )(sweep_command)


def overrides_from_flags(
    seeds: str | None,
    agents: str | None,
    tasks: str | None,
    steps: int | None,
    eval_episodes: int | None,
    jobs: int | None,
    backend: Backend | None,
    scheduler: str | None,
    dataset: str | None = None,
    split: str | None = None,
    data_dir: Path | None = None,
) -> list[str]:
    """Hydra overrides equivalent to the command-line flags (flags left unset add none).
    ``--results`` is not among them: a path is not Hydra syntax (see ``_with_results``)."""
    if seeds is not None:
        values = split_list(seeds)
        if not values:
            fail("the seed list is empty; give at least one seed, e.g. --seeds 1 7 21")
        for v in values:
            if not v.lstrip("-").isdigit():
                fail(f"seeds must be integers, got {v!r} (e.g. --seeds 1 7 21 or --seeds 1,7,21)")
    pairs = [
        ("launcher", backend.value if backend is not None else None),
        ("protocol.seeds", _hydra_list(seeds)),
        ("agents", _hydra_list(agents)),
        ("tasks", _hydra_list(tasks)),
        ("protocol.train_steps", steps),
        ("protocol.eval_episodes", eval_episodes),
        ("launcher.jobs", jobs),
        ("launcher.scheduler", scheduler),
        ("offline.dataset", dataset),
        ("offline.splits", _hydra_quoted_list(split)),
        ("offline.data_dir", data_dir),
    ]
    return [f"{key}={value}" for key, value in pairs if value is not None]


def _hydra_quoted_list(value: str | None) -> str | None:
    """``"worlds, unseen=null_world"`` -> ``"['worlds','unseen=null_world']"`` ('=' and '+'
    are Hydra syntax outside quotes)."""
    if value is None:
        return None
    return "[" + ",".join(f"'{v}'" for v in split_list(value)) + "]"


def _hydra_list(value: str | None) -> str | None:
    """``"a, b"`` -> ``"[a,b]"`` (None stays None)."""
    return None if value is None else f"[{','.join(split_list(value))}]"


def sweep_command(
    overrides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Hydra overrides, e.g. preset=smoke agent.hcapo.omega=0.", show_default=False
        ),
    ] = None,
    seeds: Annotated[
        str | None, typer.Option("--seeds", help="Seeds: '1 7 21' or '1,7,21'.")
    ] = None,
    agents: Annotated[
        str | None, typer.Option("--agents", help="Agents: 'heuristic hcapo' or comma list.")
    ] = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Tasks: 'easy_bench hard_bench' or comma list.")
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(
            "--steps",
            min=0,
            help="Training budget per learning cell, in environment steps, the same for "
            "every learning agent (default: each family's).",
        ),
    ] = None,
    eval_episodes: Annotated[
        int | None, typer.Option("--eval-episodes", min=1, help="Evaluation episodes per cell.")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Parallel jobs (default: number of cores)."),
    ] = None,
    backend: Annotated[
        Backend | None, typer.Option("--backend", help="Execution backend (default loky).")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Dask scheduler address (tcp://HOST:PORT) or 'local'."),
    ] = None,
    results: Annotated[
        Path | None, typer.Option("--results", help="Results folder (default data/sweep_results).")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset", help="Dataset the offline agents learn from (clinbench dataset)."
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            help="Splits of the offline agents: worlds, task, behaviour=A+B, unseen=METRIC.",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", help="Datasets folder (default $MINARI_DATASETS_PATH or data/datasets)."
        ),
    ] = None,
    no_resume: Annotated[
        bool, typer.Option("--no-resume", help="Recompute cells that already have a file.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run failed cells again.")
    ] = False,
    fail_fast: Annotated[
        bool, typer.Option("--fail-fast", help="Stop at the first failing cell.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No announcement or progress bar.")
    ] = False,
    no_report: Annotated[
        bool, typer.Option("--no-report", help="Do not write the report at the end.")
    ] = False,
    held_out: Annotated[
        bool,
        typer.Option(
            "--held-out",
            help="Evaluate on worlds of a fresh secret key (its commitment is recorded; the "
            "report reveals it). Default: the public key.",
        ),
    ] = False,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help=f"A held-out evaluation key (hex) to use (or ${evaluation_key.KEY_VARIABLE}).",
        ),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option(
            "--log",
            help="Write each learning cell's curve (environment-step axis) and final scalars "
            "to <results>/logs/: tensorboard, mlflow, or both (comma list; extras of the same "
            "names).",
        ),
    ] = None,
    multirun: Annotated[
        bool,
        typer.Option(
            "--multirun",
            "-m",
            help="Hydra multirun: comma lists, choice() and range() in the overrides make a "
            "grid, run into one results folder with a column per swept key (no report).",
        ),
    ] = False,
    isolate_agents: Annotated[
        bool,
        typer.Option(
            "--isolate-agents",
            help="Evaluate each trained agent in a process of its own (observations in, "
            "actions out over a pipe).",
        ),
    ] = False,
) -> None:
    """Run agents x tasks x seeds in parallel; resumable; writes tidy results and a manifest."""
    flag_overrides = overrides_from_flags(
        seeds,
        agents,
        tasks,
        steps,
        eval_episodes,
        jobs,
        backend,
        scheduler,
        dataset,
        split,
        data_dir,
    )
    loggers = _loggers(log)
    if multirun:
        from clinbench.cli.grid import run_grid_command

        if run_grid_command(
            overrides or [],
            flag_overrides,
            results,
            loggers=loggers,
            held_out=held_out,
            key_file=key_file,
            no_resume=no_resume,
            quiet=quiet,
            sweep={"retry_failed": retry_failed, "fail_fast": fail_fast, "isolate": isolate_agents},
        ):
            return
    # imported after the flags' own checks, so that their errors come at once
    from clinbench.config import ConfigError, compose, validate
    from clinbench.sweep import run_sweep
    from clinbench.sweep.execute import SweepInterrupted

    try:
        composed = compose([*(overrides or []), *flag_overrides])
        if results is not None:
            composed.results = _literal(results)
        cfg = validate(composed)
    except ConfigError as exc:
        fail(str(exc))
    writable_folder(cfg.results, "results folder")
    for name in cfg.idle_agents:
        err_console.print(
            f"note: {name!r} plays none of the selected tasks' environments; left out"
        )
    try:
        key = evaluation_key.for_sweep(
            cfg.results, held_out=held_out, key_file=key_file, resume=not no_resume
        )
    except evaluation_key.EvaluationKeyError as exc:
        fail(str(exc))
    if not quiet:
        _announce(cfg, key)
    try:
        outcome = run_sweep(
            cfg,
            resume=not no_resume,
            retry_failed=retry_failed,
            fail_fast=fail_fast,
            console=err_console,
            show_progress=not quiet,
            key=key,
            isolate=isolate_agents,
            loggers=loggers,
        )
    except ConfigError as exc:
        fail(str(exc))
    except SweepInterrupted as stop:
        _interrupted(stop)
    _print_means(outcome.outputs["sweep_results"], cfg)
    console.print(
        f"{outcome.total} cells: {outcome.ran} run, {outcome.resumed} resumed, "
        f"{len(outcome.failed)} failed, {len(outcome.corrupt)} corrupt file(s) recomputed; "
        f"{outcome.wall_seconds:.1f} s. Results in {cfg.results}/"
    )
    if outcome.failed:
        for record in outcome.failed:
            k = record["key"]
            last = record.get("traceback", "").strip().splitlines()[-1:] or ["?"]
            err_console.print(
                f"[red]failed[/] {k['agent']} / {k['task']} / seed {k['seed']}: {last[0]}"
            )
        err_console.print(
            "full tracebacks are in the cell files (runs/<hash>.json, key 'traceback')"
        )
    for path in outcome.failed_studies:
        err_console.print(f"[red]failed[/] study {path.stem}: its traceback is in {path}")
    if not no_report and outcome.total > len(outcome.failed):
        from clinbench.cli.report import run_report

        run_report(cfg.results)
    if not outcome.ok:
        raise typer.Exit(1)


def _loggers(log: str | None) -> tuple[str, ...]:
    """``--log``'s loggers, checked (known, extra installed) before any cell runs."""
    if log is None:
        return ()
    from clinbench.sweep.logs import LogError, check

    names = split_list(log)
    if not names:
        fail("--log needs a logger: tensorboard, mlflow (or both, comma-separated)")
    try:
        return check(names)
    except LogError as exc:
        fail(str(exc))


def _interrupted(stop: SweepInterrupted) -> NoReturn:
    """Ctrl-C: what was kept, where, and the command that resumes (exit 130, as shells do)."""
    args = [a for a in sys.argv[1:] if a != "--no-resume"]
    err_console.print(
        f"\ninterrupted: {stop.kept} of {stop.total} cells are kept in {quote(stop.runs)} "
        f"({stop.ran} finished in this run; cells in flight are lost). Resume with:\n"
        f"  clinbench {shlex.join(args)}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(130)


def _literal(results: Path) -> str:
    """``--results`` as a config value, set on the composed config rather than passed as an
    override: Hydra's grammar misreads unicode, ``=`` or quotes in a path. Interpolations
    of ``${results}`` (the llm agent's call log) still see it."""
    return str(results).replace("${", "\\${")


def _announce(cfg: SweepConfig, key: evaluation_key.EvaluationKey) -> None:
    pairs = sum(cfg.plays(a, t) for a in cfg.agents for t in cfg.tasks)
    n = pairs * len(cfg.protocol.seeds)
    every = "" if pairs == len(cfg.agents) * len(cfg.tasks) else " (each on its families' tasks)"
    err_console.print(
        f"{n} cells: agents {', '.join(cfg.agents)} x tasks {', '.join(cfg.tasks)}{every} x seeds "
        f"{' '.join(map(str, cfg.protocol.seeds))}; {_per_family(cfg, 'training_steps')} "
        f"training steps / {_per_family(cfg, 'evaluation_episodes')} evaluation episodes; "
        f"backend {cfg.launcher.backend}; "
        f"{key.mode.replace('_', '-')} evaluation key (commitment {key.commitment[:16]}...)"
    )


def _per_family(cfg: SweepConfig, what: str) -> str:
    """``10``, or ``recruitment 40, trial_design 480`` when the families differ."""
    values = {env: getattr(cfg.protocol, what)(env) for env in cfg.envs}
    if len(set(values.values())) == 1:
        return f"{next(iter(values.values())):,}"
    return ", ".join(f"{env} {v:,}" for env, v in values.items())


def _print_means(path: Path, cfg: SweepConfig) -> None:
    import pandas as pd
    from rich.table import Table

    frame = pd.read_csv(path)
    if frame.empty:
        return
    means = frame.groupby(["agent", "task"]).score.mean().unstack()
    table = Table(title="mean score (per cell mean over evaluation episodes, then over seeds)")
    table.add_column("agent")
    for task in cfg.tasks:
        table.add_column(task, justify="right")
    for agent in cfg.agents:
        if agent in means.index:
            table.add_row(
                agent,
                *(f"{means.loc[agent, t]:.3f}" if t in means.columns else "-" for t in cfg.tasks),
            )
    console.print(table)
