"""``clinbench dataset create | logged | list | info``: datasets of behaviour episodes,
and of a family's own logged decisions (``logged``: the portfolio sponsors').

A dataset is made like a sweep: each (task, behaviour agent) unit runs in parallel,
finished units are kept in a staging folder (run the same command again to resume
after a crash), and the same arguments give the same arrays. Datasets are written in
Minari's format (optional extra ``offline``); ``list`` and ``info`` read only their
metadata and need nothing extra.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clinbench.cli.argv import split_list
from clinbench.cli.common import (
    console,
    err_console,
    examples,
    fail,
    print_json,
    quote,
    resolve_task,
    writable_folder,
)

_DATA_DIR_HELP = "Datasets folder (default $MINARI_DATASETS_PATH, else data/datasets)."


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        name="dataset",
        help="Create, list and describe datasets of behaviour episodes (offline learning).",
        no_args_is_help=True,
        epilog=examples(
            "clinbench dataset create --env trial_design --agents heuristic,random "
            "--episodes 200 --noise 0.1 --name trial-mixed-v0",
            "clinbench dataset list",
            "clinbench dataset info trial-mixed-v0",
        ),
    )
    group.command(
        "create",
        epilog=examples(
            "clinbench dataset create --tasks hard_bench --agents heuristic,random,memexrl "
            "--episodes 100 --noise 0.1 --name recruitment-hard-v0",
            "clinbench dataset create --tasks effective_drug --agents heuristic --episodes 500 "
            "--name effective-heuristic-v0 --jobs 2",
        ),
    )(create_command)
    group.command(
        "logged",
        epilog=examples(
            "clinbench dataset logged --env portfolio --programs 45 --name portfolio-logged-45-v0",
            "clinbench dataset logged --env portfolio --programs 10000 --seed 1 "
            "--name portfolio-logged-10k-v0",
        ),
    )(logged_command)
    group.command("list")(list_command)
    group.command("info")(info_command)
    app.add_typer(group)


def create_command(
    name: Annotated[str, typer.Option("--name", help="Dataset name, e.g. recruitment-hard-v0.")],
    agents: Annotated[
        str, typer.Option("--agents", help="Behaviour agents: 'heuristic,random,memexrl'.")
    ],
    episodes: Annotated[
        int, typer.Option("--episodes", min=1, help="Episodes per task and behaviour agent.")
    ],
    env: Annotated[
        str | None, typer.Option("--env", help="Environment family (all its tasks).")
    ] = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Tasks: 'easy_bench,medium_bench' (one family).")
    ] = None,
    noise: Annotated[
        float,
        typer.Option("--noise", min=0.0, max=1.0, help="Epsilon: chance of a uniform action."),
    ] = 0.0,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of every stream.")] = 0,
    behaviour_steps: Annotated[
        int | None,
        typer.Option(
            "--behaviour-steps",
            min=0,
            help="Training environment steps of a learning behaviour agent "
            "(default: the family's protocol budget).",
        ),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel jobs.")] = (
        os.cpu_count() or 1
    ),
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help=_DATA_DIR_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing dataset.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Play behaviour agents on training worlds and write a Minari dataset."""
    from clinbench.offline import INSTALL_HINT, available
    from clinbench.offline.dataset import DatasetError, DatasetSpec, check_name, create

    try:
        check_name(name)
    except DatasetError as exc:
        fail(str(exc))
    family, task_names = _tasks(env, tasks)
    refs = split_list(agents)
    params = _behaviour_params(refs, family)
    if not available():  # before any work (the arguments checked first, whatever is installed)
        fail(f"datasets need Minari (the optional extra 'offline'): {INSTALL_HINT}")
    spec = DatasetSpec(
        name=name,
        env=family,
        tasks=tuple(task_names),
        agents=tuple(refs),
        episodes=episodes,
        noise=noise,
        seed=seed,
        behaviour_train_steps=behaviour_steps,
        agent_params=params,
    )
    root = writable_folder(_root(data_dir), "datasets folder")
    columns = (TextColumn("[bold]dataset"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, disable=quiet) as progress:
        bar = progress.add_task("units", total=len(spec.units()))
        try:
            meta = create(
                spec, root, jobs=jobs, force=force, on_unit=lambda *_: progress.advance(bar)
            )
        except DatasetError as exc:
            fail(str(exc))
    console.print(
        f"dataset {name}: {meta['episodes']} episodes, {meta['transitions']} transitions, "
        f"in {quote(root / name)}"
    )
    _scores_table(meta)


def logged_command(
    name: Annotated[str, typer.Option("--name", help="Dataset name, e.g. portfolio-logged-45-v0.")],
    env: Annotated[str, typer.Option("--env", help="Environment family with logged decisions.")],
    programs: Annotated[
        int, typer.Option("--programs", min=1, help="Programs (decision makers' units) to log.")
    ],
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the world.")] = 0,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help=_DATA_DIR_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing dataset.")] = False,
) -> None:
    """Write a family's own logged decisions (the portfolio sponsors') as a Minari dataset."""
    from clinbench.logged import create_logged
    from clinbench.offline import INSTALL_HINT, available
    from clinbench.offline.dataset import DatasetError

    if not available():
        fail(f"datasets need Minari (the optional extra 'offline'): {INSTALL_HINT}")
    root = writable_folder(_root(data_dir), "datasets folder")
    try:
        meta = create_logged(name, env, programs, seed, root, force=force)
    except DatasetError as exc:
        fail(str(exc))
    console.print(
        f"dataset {name}: {meta['episodes']} episodes, {meta['transitions']} decisions, "
        f"{meta['records']} records, in {quote(root / name)}"
    )


def _root(data_dir: Path | None) -> Path:
    from clinbench.offline.dataset import data_dir as default

    return default(data_dir)


def _tasks(env: str | None, tasks: str | None) -> tuple[str, list[str]]:
    """(family, task names) of ``--env`` / ``--tasks``: one family."""
    from clinbench.env import env_ids

    ids = env_ids()
    families = sorted({i.split("/", 1)[0] for i in ids})
    if tasks:
        chosen = [resolve_task(t) for t in split_list(tasks)]
    elif env:
        if env not in families:
            fail(f"unknown environment {env!r}; valid: {', '.join(families)}")
        chosen = [i for i in ids if i.startswith(env + "/")]
    else:
        fail(f"give --env (one of {', '.join(families)}) or --tasks")
    fams = {c.split("/", 1)[0] for c in chosen}
    if len(fams) != 1 or (env and fams != {env}):
        fail(f"a dataset holds one environment family; got tasks of {', '.join(sorted(fams))}")
    if len(set(chosen)) != len(chosen):
        fail("tasks must not repeat")
    return fams.pop(), [c.split("/", 1)[1] for c in chosen]


def _behaviour_params(refs: list[str], family: str) -> dict[str, dict]:
    """Each behaviour agent's parameters from ``conf/agent/`` (as a sweep would use)."""
    from omegaconf import OmegaConf

    from clinbench.agents.registry import AgentLoadError, agent_entry, family_parameters
    from clinbench.config import ConfigError, compose

    if not refs or len(set(refs)) != len(refs):
        fail("give distinct behaviour agents, e.g. --agents heuristic,random")
    try:
        conf = compose([])
    except ConfigError as exc:
        fail(str(exc))
    params = {}
    for ref in refs:
        try:
            entry = agent_entry(ref)
            entry.require()
        except AgentLoadError as exc:
            fail(str(exc))
        if getattr(entry.factory, "offline", False):
            fail(f"{ref!r} is an offline agent; behaviour agents play environments")
        if "*" not in entry.envs and family not in entry.envs:
            fail(f"agent {ref!r} plays {', '.join(entry.envs)}, not {family}")
        raw = OmegaConf.to_container(conf.agent[entry.name]) if entry.name in conf.agent else {}
        params[ref] = family_parameters(entry, family, dict(raw or {}))
    return params


def list_command(
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help=_DATA_DIR_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of a table.")] = False,
) -> None:
    """The datasets in the data folder."""
    from clinbench.offline.dataset import metadata, names

    root = _root(data_dir)
    metas = [metadata(n, root) for n in names(root)]
    if as_json:
        print_json([_summary(m) for m in metas])
        return
    if not metas:
        console.print(f"no datasets in {root} (clinbench dataset create ...)")
        return
    table = Table(title=f"datasets in {quote(root)}")
    for col in ("name", "env", "tasks", "behaviour", "noise", "episodes", "transitions"):
        table.add_column(col)
    for m in metas:
        s = _summary(m)
        table.add_row(
            s["name"],
            s["env"],
            ", ".join(s["tasks"]),
            ", ".join(s["agents"]),
            str(s["noise"]),
            str(s["episodes"]),
            str(s["transitions"]),
        )
    # a terminal's width folds the table to fit; a pipe or a file gets it whole
    (console if console.is_terminal else Console(highlight=False, width=100_000)).print(table)


def _summary(meta: dict) -> dict:
    if "spec" not in meta:  # a family's own logged decisions (``dataset logged``)
        return {
            "name": meta["name"], "env": meta["family"], "tasks": [meta.get("task", "")],
            "agents": ["logged decisions"], "noise": 0.0, "episodes": meta["episodes"],
            "transitions": meta["transitions"],
        }
    spec = meta["spec"]
    return {
        "name": meta["name"],
        "env": spec["env"],
        "tasks": spec["tasks"],
        "agents": spec["agents"],
        "noise": spec["noise"],
        "episodes": meta["episodes"],
        "transitions": meta["transitions"],
    }


def info_command(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help=_DATA_DIR_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="All metadata as JSON.")] = False,
) -> None:
    """A dataset's metadata: what it was made from, its size and its behaviour scores."""
    from clinbench.offline.dataset import DatasetError, metadata

    root = _root(data_dir)
    try:
        meta = metadata(name, root)
    except DatasetError as exc:
        fail(str(exc))
    if as_json:
        print_json(meta)
        return
    load = (
        f"MINARI_DATASETS_PATH={quote(root)} python -c "
        + quote(f"import minari; minari.load_dataset({name!r})")
    )
    if "spec" not in meta:  # a family's own logged decisions (``dataset logged``)
        for label, value in (
            ("name", meta["name"]),
            ("folder", quote(root / name)),
            ("logged decisions of", f"{meta['family']} ({meta.get('task', '')})"),
            ("programs / seed", f"{meta['programs']} / {meta['seed']}"),
            ("episodes / decisions", f"{meta['episodes']} / {meta['transitions']}"),
            ("records", str(meta.get("records", ""))),
            ("clinbench", meta["clinbench_version"]),
            ("created", meta["created"]),
            ("digest", meta["digest"]),
            ("load it", load),
        ):
            console.print(f"[bold]{label}:[/] {escape(value)}")
        return
    spec = meta["spec"]
    for label, value in (
        ("name", meta["name"]),
        ("folder", quote(root / name)),
        ("environments", ", ".join(meta["env_ids"])),
        ("task versions", ", ".join(f"{t} {v}" for t, v in meta["task_versions"].items())),
        ("behaviour agents", ", ".join(spec["agents"])),
        ("noise (epsilon)", str(spec["noise"])),
        ("seed", str(spec["seed"])),
        ("episodes per task and agent", str(spec["episodes"])),
        ("episodes / transitions", f"{meta['episodes']} / {meta['transitions']}"),
        ("clinbench", f"{meta['clinbench_version']} (code {meta['code']})"),
        ("created", meta["created"]),
        ("digest", meta["digest"]),
        ("load it", load),
    ):
        console.print(f"[bold]{label}:[/] {escape(value)}")
    _scores_table(meta)


def _scores_table(meta: dict) -> None:
    table = Table(title="mean behaviour score per task (training worlds)")
    cols = [*meta["spec"]["agents"], "mixture"]
    table.add_column("task")
    for c in cols:
        table.add_column(c, justify="right")
    for task, scores in meta["behaviour_scores"].items():
        table.add_row(task, *(f"{scores[c]:.3f}" for c in cols))
    console.print(table)
