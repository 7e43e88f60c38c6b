"""The ``clinbench`` command line: help, listings, one episode, and bad input."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess

import pytest
import typer
from typer.testing import CliRunner

from clinbench import __version__
from clinbench.agents.context import AgentContext
from clinbench.agents.registry import agent_entries, agent_names, make_agent
from clinbench.cli import common
from clinbench.cli.app import COMMANDS, app
from clinbench.cli.run import describe_action, shown_steps
from clinbench.cli.tasks import main_params
from clinbench.env import EnvSpec, env_ids, make, spec
from clinbench.env.recruitment import Action, ActionType
from clinbench.env.registry import family
from clinbench.episode import play_episode
from clinbench.evaluation_key import PUBLIC
from clinbench.protocol import EVALUATION, CellWorlds

# A wide terminal, so that table cells are not folded across lines.
runner = CliRunner(env={"COLUMNS": "200"})


def invoke(*args: str):
    return runner.invoke(app, list(args))


def run_json(*args: str) -> dict:
    result = invoke("run", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def reference(agent: str, env_id: str, seed: int, fixed_world: bool = False):
    env = make(env_id)
    options = {"fixed_world": True} if fixed_world else None
    cell = CellWorlds(PUBLIC, seed, agent, env_id)
    (world,), (agent_seed,) = cell.worlds(EVALUATION, 1), cell.acting_seeds(EVALUATION, 1)
    return play_episode(
        env,
        make_agent(agent, AgentContext.of(env)),
        world,
        agent_seed=agent_seed,
        options=options,
        record=True,
    )


def as_json(data):
    return json.loads(json.dumps(data))


# --------------------------------------------------------------------------- help
def test_root_help_lists_every_command():
    result = invoke("--help")
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.stdout
    assert "Examples" in result.stdout


def test_no_arguments_shows_help():
    result = invoke()
    assert "Usage" in result.output
    for name in COMMANDS:
        assert name in result.output


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert __version__ in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_shows_an_example(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "Examples" in result.stdout
    assert f"clinbench {command}" in result.stdout


# --------------------------------------------------------------------------- tasks
def test_tasks_table_shows_every_task_and_family():
    result = invoke("tasks")
    assert result.exit_code == 0
    for env_id in env_ids():
        s = spec(env_id)
        assert s.task in result.stdout
        assert s.env in result.stdout


def test_tasks_json_matches_the_registry():
    result = invoke("tasks", "--json")
    assert result.exit_code == 0
    records = json.loads(result.stdout)
    assert [r["id"] for r in records] == env_ids()
    for r in records:
        s = spec(r["id"])
        assert (r["env"], r["task"], r["version"], r["description"]) == (
            s.env,
            s.task,
            s.version,
            s.description,
        )
        main = {
            "recruitment": ("pool_size", "n_sites", "budget", "target", "screen_cost"),
            "trial_design": ("budget", "max_weeks", "max_looks", "mcid", "ae_threshold"),
            "portfolio": ("horizon", "decision_months", "portfolio_cap", "cutoff_month"),
        }[s.env]
        for name in main:
            value = getattr(s.params, name)
            assert r["params"][name] == (list(value) if isinstance(value, tuple) else value)
        if s.env == "recruitment":  # derived parameters
            assert r["params"]["world_types"] == list(s.params.world_types)
            assert r["params"]["event_rate_per_day"] == pytest.approx(
                sum(s.params.event_rates.values())
            )
        elif s.env == "trial_design":
            assert r["params"]["planned_patients"] == s.params.planned_patients


@dataclasses.dataclass(frozen=True)
class _ToyParams:
    name: str
    description: str
    doses: tuple[float, ...]
    cohort_size: int
    table: dict


def test_main_params_of_a_family_that_declares_none_lists_its_plain_fields(monkeypatch):
    from clinbench.env import registry
    from clinbench.env.family import Family

    monkeypatch.setitem(registry._FAMILIES, "toy_family", Family("toy_family", 1))
    params = _ToyParams("t", "toy", (0.1, 0.3), 3, {"a": 1})
    shown = main_params(EnvSpec("toy_family", "t", 1, params, "toy"))
    assert shown == {"doses": [0.1, 0.3], "cohort_size": 3}


# --------------------------------------------------------------------------- agents
def test_agents_table_shows_every_agent():
    result = invoke("agents")
    assert result.exit_code == 0
    for entry in agent_entries():
        assert entry.name in result.stdout
        if entry.unavailable is None:  # (a long description wraps: its first words)
            assert " ".join(entry.description.split()[:3]) in result.stdout
    if any(e.unavailable for e in agent_entries()):  # e.g. ppo without the sb3 extra
        assert "unavailable:" in result.stdout


def test_agents_json_matches_the_registry():
    result = invoke("agents", "--json")
    assert result.exit_code == 0
    records = json.loads(result.stdout)
    assert [r["name"] for r in records] == [e.name for e in agent_entries()]
    assert [r["name"] for r in records if r["available"]] == agent_names()
    for r, entry in zip(records, agent_entries(), strict=True):
        assert r["learning"] is entry.learning
        assert r["description"] == entry.description


# --------------------------------------------------------------------------- run
# every agent that plays recruitment on its own (llm needs an endpoint: tests/test_llm_agent.py)
LOCAL = [
    e.name
    for e in agent_entries()
    if getattr(e.factory, "deterministic", True) and not getattr(e.factory, "offline", False)
    and ("*" in e.envs or "recruitment" in e.envs)
]


@pytest.mark.parametrize("agent", [a for a in agent_names() if a != "fixed_design" and a in LOCAL])
@pytest.mark.parametrize("task", ["easy_bench", "hard_bench"])
def test_run_json_is_the_episode_play_episode_gives(agent, task):
    out = run_json("--agent", agent, "--task", task, "--seed", "3")
    ref = reference(agent, f"recruitment/{task}", 3)
    assert (out["agent"], out["task"], out["seed"]) == (agent, f"recruitment/{task}", 3)
    assert out["score"] == ref.score
    assert out["score_parts"] == as_json(ref.score_parts)
    assert out["terminated_by"] == ref.terminated_by
    assert out["steps"] == as_json(ref.steps_log)
    assert len(out["steps"]) == ref.steps
    # The per-day rewards telescope to the final score.
    assert sum(s["reward"] for s in out["steps"]) == pytest.approx(out["score"], abs=1e-9)


def test_run_accepts_the_task_name_or_its_id():
    short = run_json("-a", "heuristic", "-t", "easy_bench", "-s", "1")
    full = run_json("-a", "heuristic", "-t", "recruitment/easy_bench", "-s", "1")
    assert short == full


def test_run_fixed_world_plays_the_canonical_world():
    out = run_json("-a", "heuristic", "-t", "medium_bench", "-s", "5", "--fixed-world")
    fixed = reference("heuristic", "recruitment/medium_bench", 5, fixed_world=True)
    drawn = reference("heuristic", "recruitment/medium_bench", 5)
    assert out["fixed_world"] is True
    assert out["score"] == fixed.score
    assert out["steps"] == as_json(fixed.steps_log)
    assert out["steps"] != as_json(drawn.steps_log)


def test_run_table_ends_with_the_score_and_how_the_episode_ended():
    ref = reference("heuristic", "recruitment/easy_bench", 1)
    result = invoke("run", "-a", "heuristic", "-t", "easy_bench", "-s", "1", "--every", "10")
    assert result.exit_code == 0, result.output
    assert f"{ref.score:.4f}" in result.stdout
    assert f"Ended by {ref.terminated_by}" in result.stdout
    shown = len(shown_steps(ref.steps_log, 10))
    assert f"{shown} of {ref.steps} steps shown" in result.stdout
    assert f"Net enrolled {ref.metrics['net_enrolled']}" in result.stdout


def _step(time: int, action_type: str, error: str | None = None) -> dict:
    return {"time": time, "action": {"action_type": action_type}, "error": error}


def test_shown_steps_hide_valid_noops_or_sample_every_kth_time():
    steps = [_step(d, "plan_next_phase" if d % 2 else "screen_patient") for d in range(10)]
    steps[3]["error"] = "invalid_target_phase"
    noop = family("recruitment").noop_actions
    default = [s["time"] for s in shown_steps(steps, noop=noop)]
    assert default == [0, 2, 3, 4, 6, 8, 9]  # even days, the invalid plan, the last day
    assert [s["time"] for s in shown_steps(steps, noop=frozenset())] == list(range(10))
    assert [s["time"] for s in shown_steps(steps, every=4)] == [0, 4, 8, 9]
    assert [s["time"] for s in shown_steps(steps, every=3)] == [0, 3, 6, 9]
    assert shown_steps([]) == []


def test_describe_action_names_the_arguments_not_the_free_text():
    action = Action(
        ActionType.ALLOCATE_TO_SITE, patient_id="P-1001", site_id="site_A", plan_summary="why"
    )
    text = family("recruitment").text_fields
    assert describe_action(action.to_dict(), text) == "allocate_to_site P-1001 site_A"


# --------------------------------------------------------------------------- bad input
def assert_usage_error(result, *expected: str):
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    for text in expected:
        assert text in result.stderr


def test_run_unknown_agent_names_the_valid_agents():
    result = invoke("run", "-a", "no_such_agent", "-t", "easy_bench", "-s", "1", "--json")
    assert_usage_error(result, "no_such_agent", *agent_names())


def test_run_unknown_task_names_the_valid_tasks():
    result = invoke("run", "-a", "heuristic", "-t", "no_such_task", "-s", "1", "--json")
    assert_usage_error(result, "no_such_task", *env_ids())


@pytest.mark.parametrize(
    "args", [["-s", "-1"], ["-s", "one"], ["-s", "1", "--every", "0"], []], ids=str
)
def test_run_bad_seed_or_every_is_a_usage_error(args):
    result = invoke("run", "-a", "heuristic", "-t", "easy_bench", *args, "--json")
    assert_usage_error(result, "Usage")


def test_a_task_name_in_several_environments_is_ambiguous(monkeypatch, capsys):
    monkeypatch.setattr(common, "env_ids", lambda: ["a/x", "b/x", "b/y"])
    assert common.resolve_task("b/x") == "b/x"
    assert common.resolve_task("y") == "b/y"
    with pytest.raises(typer.Exit) as exit_info:
        common.resolve_task("x")
    assert exit_info.value.exit_code == 2
    assert "a/x, b/x" in capsys.readouterr().err


# --------------------------------------------------------------------------- script
@pytest.mark.skipif(shutil.which("clinbench") is None, reason="console script not installed")
def test_console_script_runs():
    done = subprocess.run(
        ["clinbench", "--help"], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "run" in done.stdout
