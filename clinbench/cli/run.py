"""``clinbench run``: play one episode and show it step by step.

The episode follows the sweep's contract and streams: the agent is built from the
task's public context, trained (if asked) on the training worlds of the sweep's stream
for cell seed ``seed``, and plays the first evaluation world of cell seed ``seed`` under
the public evaluation key, reset with the acting seed a sweep cell would give it there
(``clinbench.protocol``): the world is derived from the key, never ``seed`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from clinbench.cli.common import (
    console,
    err_console,
    examples,
    fail,
    print_json,
    resolve_agent,
    resolve_task,
)
from clinbench.serve import remote_address

if TYPE_CHECKING:  # imported where used: the command line's help must not wait for them
    from clinbench.env.family import Family
    from clinbench.episode import Episode


def register(app: typer.Typer) -> None:
    app.command(
        "run",
        epilog=examples(
            "clinbench run --agent heuristic --task easy_bench --seed 1",
            "clinbench run -a random -t recruitment/hard_bench -s 7 --every 10",
            "clinbench run -a heuristic -t easy_bench -s 1 --fixed-world",
            "clinbench run -a heuristic -t easy_bench -s 1 --json | jq .score",
            "clinbench run --agent hcapo --task easy_bench --seed 1 --train-steps 2000",
            "clinbench run -a heuristic -t hard_bench -s 1 --remote ws://127.0.0.1:7860",
        ),
    )(run_command)


def run_command(
    agent: Annotated[
        str, typer.Option("--agent", "-a", help="Agent name (see [bold]clinbench agents[/]).")
    ],
    task: Annotated[
        str,
        typer.Option(
            "--task", "-t", help="Task name or id, e.g. easy_bench or recruitment/easy_bench."
        ),
    ],
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            "-s",
            min=0,
            help="Cell seed (>= 0): the episode plays its first evaluation world (public key).",
        ),
    ],
    fixed_world: Annotated[
        bool,
        typer.Option(
            "--fixed-world", help="Play the canonical world (seed 0); the seed varies only luck."
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (summary and every step) only.")
    ] = False,
    every: Annotated[
        int | None,
        typer.Option(
            "--every",
            min=1,
            metavar="K",
            help="Show every K-th time only (default: every step but no-ops).",
        ),
    ] = None,
    train_steps: Annotated[
        int,
        typer.Option(
            "--train-steps",
            min=0,
            metavar="N",
            help="Train a learning agent for N environment steps on training worlds "
            "first (the sweep's streams for this seed), then play its best trained checkpoint "
            "on the validation worlds, as a sweep cell does; ignored by agents that do not learn.",
        ),
    ] = 0,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote",
            metavar="URL",
            help="Play on the task served at ws://host:port (clinbench serve; extra serve).",
        ),
    ] = None,
) -> None:
    """Play one episode of an agent on a task and show it step by step, then the score."""
    env_id = resolve_task(task)
    entry = resolve_agent(agent)
    agent_name = entry.name
    if getattr(entry.factory, "offline", False):
        fail(
            f"{agent_name!r} is an offline agent: it learns from a dataset, in a sweep "
            f"(clinbench sweep --agents {agent_name} --dataset NAME; docs/offline.md)"
        )
    if remote is not None:
        try:
            remote = remote_address(remote)
        except ValueError as exc:
            fail(f"--remote: {exc}")
    try:
        episode = play(
            entry.ref,
            env_id,
            seed,
            fixed_world=fixed_world,
            train_steps=train_steps,
            agent_name=agent_name,
            remote=remote,
        )
    except ConnectionError as exc:
        fail(str(exc))
    if as_json:
        record = episode_record(agent_name, env_id, seed, fixed_world, episode)
        record["train_steps"] = train_steps
        print_json(record)
        return
    world = " (fixed world)" if fixed_world else ""
    title = f"{agent_name} on {env_id}, seed {seed}{world}"
    from clinbench.env import spec
    from clinbench.env.registry import family

    fam = family(spec(env_id).env)
    console.print(_step_table(fam, episode.steps_log, every, title))
    _print_summary(fam, episode)


def play(
    agent_ref: str,
    env_id: str,
    seed: int,
    *,
    fixed_world: bool = False,
    train_steps: int = 0,
    agent_name: str | None = None,
    remote: str | None = None,
) -> Episode:
    """Build the environment and the agent (train it if asked), then play one episode."""
    from clinbench.agents.context import AgentContext
    from clinbench.agents.registry import make_agent
    from clinbench.env.registry import family
    from clinbench.episode import play_episode
    from clinbench.evaluation_key import PUBLIC
    from clinbench.protocol import EVALUATION, CellWorlds, Protocol, make_env

    agent_name = agent_name or agent_ref
    cell = CellWorlds(PUBLIC, seed, agent_name, env_id)
    env = make_env(env_id, remote=remote)
    try:
        agent = make_agent(agent_ref, AgentContext.of(env))
    except ValueError as exc:  # the agent does not play this environment family
        fail(str(exc))
    if train_steps and not agent.learning:
        err_console.print(f"note: {agent_name!r} does not learn; --train-steps ignored")
    elif train_steps:
        # the sweep's protocol: its learning curve on the validation worlds, and the
        # best trained checkpoint there is the one that plays
        protocol = Protocol(
            train_steps=train_steps, curve_episodes=family(env_id.split("/")[0]).curve_episodes
        )
        with err_console.status(f"training {agent_name} for {train_steps} environment steps"):
            agent, _, _ = cell.train(env, agent, protocol, remote)
    options = {"fixed_world": True} if fixed_world else None
    (world,), (agent_seed,) = cell.worlds(EVALUATION, 1), cell.acting_seeds(EVALUATION, 1)
    return play_episode(env, agent, world, agent_seed=agent_seed, options=options, record=True)


def episode_record(
    agent: str, task: str, seed: int, fixed_world: bool, episode: Episode
) -> dict[str, Any]:
    """The ``--json`` output: the summary and the per-step records."""
    return {
        "agent": agent,
        "task": task,
        "seed": seed,
        "fixed_world": fixed_world,
        "score": episode.score,
        "return": episode.ret,
        "score_parts": episode.score_parts,
        "terminated_by": episode.terminated_by,
        **episode.metrics,
        "steps": episode.steps_log,
    }


def shown_steps(
    steps: list[dict[str, Any]], every: int | None = None, noop: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The steps worth a row: every K-th time, or else every step that is not a no-op
    (a valid action of a type in ``noop``, which only passes time).

    The last step is always shown, so the table ends where the episode ended.
    """
    if every is None:
        keep = [s for s in steps if not is_noop(s, noop)]
    else:
        keep = [s for s in steps if s["time"] % every == 0]
    if steps and (not keep or keep[-1] is not steps[-1]):
        keep.append(steps[-1])
    return keep


def is_noop(step: dict[str, Any], noop: frozenset[str]) -> bool:
    """A valid action that only passes time (an invalid one is worth seeing)."""
    return step["action"].get("action_type") in noop and step["error"] is None


def describe_action(action: dict[str, Any], text_fields: frozenset[str] = frozenset()) -> str:
    """``action_type`` followed by its arguments, e.g. ``allocate_to_site P-1003 site_A``;
    an action without a type (a dose-finding look) as its set fields,
    ``n_next_cohort=48 drop_arm=high`` (free-text fields left out)."""
    if "action_type" in action:
        args = (str(v) for k, v in action.items() if k != "action_type" and k not in text_fields)
        return " ".join([str(action["action_type"]), *args])
    return " ".join(
        f"{k}={v}" for k, v in action.items() if v not in (None, False) and k not in text_fields
    )


def _step_table(fam: Family, steps: list[dict[str, Any]], every: int | None, title: str) -> Table:
    rows = shown_steps(steps, every, fam.noop_actions)
    unit = fam.time_unit
    which = f"every {every} {unit}s" if every else "no-ops hidden"
    table = Table(
        title=title,
        caption=f"{len(rows)} of {len(steps)} steps shown ({which})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column(unit, justify="right")
    table.add_column("action", overflow="fold")
    table.add_column("outcome", overflow="fold")
    table.add_column("reward", justify="right")
    for header in fam.step_columns.values():
        table.add_column(header, justify="right")
    for s in rows:
        table.add_row(
            str(s["time"]),
            escape(describe_action(s["action"], fam.text_fields)),
            _outcome(s),
            _signed(s["reward"]),
            *(_number(s[key]) for key in fam.step_columns),
        )
    return table


def _number(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.4g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def _signed(reward: float) -> str:
    """The reward to 4 decimals, ``0`` when it rounds to zero (no ``-0.0000``)."""
    return "0" if abs(reward) < 5e-5 else f"{reward:+.4f}"


def _outcome(step: dict[str, Any]) -> str:
    """The error code in red, else the outcome (``ok`` when it only echoes an argument)."""
    error, outcome = step["error"], step["outcome"]
    if error is not None:
        return f"[red]error: {escape(str(error))}[/]"
    if outcome is None:
        return "-"
    return "ok" if outcome in step["action"].values() else escape(str(outcome))


def _print_summary(fam: Family, episode: Episode) -> None:
    parts = Table.grid(padding=(0, 2))
    parts.add_column()
    parts.add_column(justify="right")
    for name, value in episode.score_parts.items():
        label = f"[bold]{name}[/]" if name == "score" else fam.score_part_labels.get(name, name)
        parts.add_row(label, f"{value:.4f}")
    parts.add_row("return (sum of rewards)", f"{episode.ret:.4f}")
    console.print(parts)
    last = episode.steps_log[-1]["time"] if episode.steps_log else 0
    console.print(
        f"Ended by [bold]{episode.terminated_by}[/] at {fam.time_unit} {last} "
        f"after {episode.steps} steps."
    )
    metrics = (f"{fam.metric(k).label} {_number(v)}" for k, v in episode.metrics.items())
    console.print("; ".join(metrics).capitalize() + ".")
