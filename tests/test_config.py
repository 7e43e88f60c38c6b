"""Sweep configuration: composition, presets, overrides, validation, provenance, cell hashes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

import clinbench
from clinbench.cli.sweep import Backend, overrides_from_flags
from clinbench.config import ConfigError, available, config_dir, load
from clinbench.sweep import run_sweep
from clinbench.sweep.cells import expand

CONF = config_dir()
REPO = Path(clinbench.__file__).resolve().parents[1]


def conf_file(*parts: str) -> dict:
    """A file of conf/ as plain data, read without Hydra (the independent view)."""
    return OmegaConf.to_container(OmegaConf.load(CONF.joinpath(*parts)))


def flags(**kwargs) -> list[str]:
    """The overrides the CLI flags produce (only the given ones set)."""
    names = (
        "seeds",
        "agents",
        "tasks",
        "steps",
        "eval_episodes",
        "jobs",
        "backend",
        "scheduler",
    )
    return overrides_from_flags(*(kwargs.get(n) for n in names))


def hashes(*overrides: str) -> dict[tuple, str]:
    """Cell key -> cell hash of the smoke grid with ``overrides``."""
    cfg = load(["preset=smoke", *overrides])
    return {tuple(c.key.values()): c.hash for c in expand(cfg)}


# --------------------------------------------------------------------------- composition
def test_smoke_preset_sets_the_values_of_its_file():
    preset = conf_file("preset", "smoke.yaml")
    cfg = load(["preset=smoke"])
    assert cfg.protocol.train_steps == preset["protocol"]["train_steps"]
    assert cfg.protocol.eval_episodes == preset["protocol"]["eval_episodes"]
    assert cfg.protocol.curve_points == preset["protocol"]["curve_points"]
    assert list(cfg.protocol.seeds) == preset["protocol"]["seeds"]
    assert cfg.report.bootstrap_reps == preset["report"]["bootstrap_reps"]
    # the preset really changes something: the default protocol is different
    assert load([]).protocol != cfg.protocol


def test_default_config_is_the_files_in_conf():
    cfg = load([])
    top = conf_file("config.yaml")
    env = conf_file("env", "all.yaml")
    assert top["tasks"] == "${env.tasks}"  # the environment selection's tasks
    assert list(cfg.agents) == top["agents"] and list(cfg.tasks) == env["tasks"]
    assert cfg.env == env["name"] and cfg.envs == env["families"]
    assert cfg.results == Path(top["results"])
    protocol = conf_file("protocol", "default.yaml")
    assert list(cfg.protocol.seeds) == protocol["seeds"]
    assert cfg.protocol.train_steps == protocol["train_steps"]
    assert cfg.launcher.backend == conf_file("launcher", "loky.yaml")["backend"]
    for agent in cfg.agents:
        assert cfg.agent_params[agent] == (conf_file("agent", f"{agent}.yaml") or {})


@pytest.mark.parametrize("preset_first", [True, False], ids=["preset-first", "preset-last"])
def test_flags_win_over_the_preset(preset_first):
    given = flags(seeds="3,4", steps=5, eval_episodes=1, jobs=2, backend=None)
    overrides = ["preset=smoke", *given] if preset_first else [*given, "preset=smoke"]
    cfg = load(overrides)
    assert cfg.protocol.seeds == (3, 4)
    assert cfg.protocol.train_steps == 5
    assert cfg.protocol.eval_episodes == 1
    assert cfg.launcher.jobs == 2
    # what no flag touched still comes from the preset
    assert (
        cfg.protocol.curve_points == conf_file("preset", "smoke.yaml")["protocol"]["curve_points"]
    )


def test_agent_override_reaches_agent_params():
    cfg = load(["preset=smoke", "agent.hcapo.omega=0"])
    expected = conf_file("agent", "hcapo.yaml") | {"omega": 0}
    assert cfg.agent_params["hcapo"] == expected
    assert cfg.agent_params["mira"] == conf_file("agent", "mira.yaml")


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["agent.hcapoo.omega=0"], ["agent.hcapoo", "hcapo", "heuristic"]),  # a typo in the agent
        (
            ["agents=[heuristic]", "agent.hcapo.omegaa=0"],
            ["'hcapo'", "omegaa", "omega"],
        ),  # not selected
        (["agent.hcapo.omegaa=0"], ["'hcapo'", "omegaa", "omega"]),
    ],
)
def test_agent_overrides_name_agents_and_parameters_that_exist(overrides, words):
    with pytest.raises(ConfigError) as info:
        load(["preset=smoke", *overrides])
    for word in words:
        assert word in str(info.value)


def test_backend_flag_selects_the_launcher_file():
    cfg = load(flags(backend=Backend("dask")))
    assert cfg.launcher.backend == "dask"
    assert cfg.launcher.scheduler == conf_file("launcher", "dask.yaml")["scheduler"]


@pytest.mark.parametrize("preset", available("preset"))
def test_every_preset_composes_and_validates(preset):
    from clinbench.agents.registry import agent_entries

    unavailable = {e.name: e.unavailable for e in agent_entries() if e.unavailable}
    selected = conf_file("preset", f"{preset}.yaml").get("agents") or []
    if missing := [a for a in selected if a in unavailable]:  # e.g. canonical without the sb3 extra
        with pytest.raises(ConfigError, match="unavailable"):
            load([f"preset={preset}"])
        pytest.skip(f"preset {preset} needs {missing}: {unavailable[missing[0]]}")
    cfg = load([f"preset={preset}"])
    assert cfg.protocol.seeds and all(cfg.protocol.evaluation_episodes(e) >= 1 for e in cfg.envs)
    assert expand(cfg), "the grid of a preset is never empty"


def test_evaluation_episodes_are_each_familys_unless_the_protocol_sets_them():
    from clinbench.env.registry import family

    cfg = load(["preset=canonical", "agents=[heuristic]"])
    assert cfg.protocol.eval_episodes is None
    for cell in expand(cfg):
        assert cell.protocol["eval_episodes"] == family(cell.env).evaluation_episodes
    assert {family(e).evaluation_episodes for e in cfg.envs} == {40, 480}
    fixed = load(["preset=canonical", "agents=[heuristic]", "protocol.eval_episodes=7"])
    assert {c.protocol["eval_episodes"] for c in expand(fixed)} == {7}
    with pytest.raises(ConfigError, match="curve_episodes"):
        load(["protocol.curve_episodes=0"])


def test_validation_episodes_are_each_familys_unless_the_protocol_sets_them():
    from clinbench.env.registry import family

    cfg = load(["preset=canonical", "agents=[klong]"])
    assert cfg.protocol.curve_episodes is None and cfg.protocol.select_checkpoint
    for cell in expand(cfg):
        assert cell.protocol["curve_episodes"] == family(cell.env).curve_episodes
        assert cell.protocol["select_checkpoint"] is True
    assert {e: family(e).curve_episodes for e in cfg.envs} == {
        "recruitment": 5,
        "trial_design": 50,
        "portfolio": 20,
    }
    fixed = load(["agents=[klong]", "protocol.curve_episodes=3"])
    assert {c.protocol["curve_episodes"] for c in expand(fixed)} == {3}
    last = load(["agents=[klong]", "protocol.select_checkpoint=false"])
    assert {c.protocol["select_checkpoint"] for c in expand(last)} == {False}
    with pytest.raises(ConfigError, match="select_checkpoint must be true or false"):
        load(["protocol.select_checkpoint=3"])


def test_task_parameter_overrides_use_the_documented_syntax():
    cfg = load(["env.overrides={easy_bench: {budget: 90000}}", "tasks=[easy_bench,hard_bench]"])
    assert cfg.env_overrides == {"easy_bench": {"budget": 90000}, "hard_bench": {}}


@pytest.mark.parametrize(
    "override, named",
    [
        ("foo=1", ["'foo'", "agents", "protocol", "results"]),
        ("agent.hcapo.omegaa=1", ["omegaa", "omega", "group_size"]),
        ("env=nosuch", ["recruitment"]),
        ("launcher=nosuch", ["dask", "loky", "ray", "sequential"]),
        ("agent.hcapo.omega=abc", ["agent.hcapo.omega", "float"]),
        ("agent.random.include_stop=1", ["include_stop", "bool"]),
        ("env.overrides={easy_bench: {foo: 1}}", ["foo", "budget"]),
        ("env.overrides={easy_bench: {budget: abc}}", ["budget", "float"]),
        ("env.overrides={nosuch: {budget: 1}}", ["nosuch", "easy_bench"]),
        ("agents.x=1", ["agents.x"]),
        ("protocol.train_steps=-1", ["training steps", ">= 0"]),
        ("+protocol.train_episodes=600", ["replaced by protocol.train_steps"]),
        ("protocol.seeds=[1,1]", ["distinct"]),
        ("protocol.seeds=[1,x]", ["integer", "'x'"]),
    ],
)
def test_bad_config_is_a_config_error_naming_the_choices(override, named):
    with pytest.raises(ConfigError) as info:
        load(["preset=smoke", override])
    for text in named:
        assert text in str(info.value)


# --------------------------------------------------------------------------- documented in place
CONF_FILES = sorted(CONF.rglob("*.yaml"))


@pytest.mark.parametrize("path", CONF_FILES, ids=lambda p: p.relative_to(CONF).as_posix())
def test_every_conf_file_explains_itself(path):
    lines = path.read_text().splitlines()
    comments = [
        ln
        for ln in lines
        if ln.lstrip().startswith("#") and not ln.lstrip().startswith("# @package")
    ]
    assert comments, f"{path.name} has no comment saying what it is for"


@pytest.mark.parametrize(
    "path",
    [p for p in CONF_FILES if p.parent.name in ("agent", "report")],
    ids=lambda p: p.relative_to(CONF).as_posix(),
)
def test_every_parameter_is_commented(path):
    """Hyper-parameters and statistics settings each carry an inline comment."""
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", " ")) and ":" in line:
            assert "#" in line.split(":", 1)[1], f"{path.name}: {line!r} has no comment"


def test_an_agent_file_exists_for_every_selectable_agent():
    from clinbench.agents.registry import agent_entries

    # clinbench's own agents, the optional ones included (plugins need no file)
    assert set(available("agent")) == {
        e.name for e in agent_entries() if e.source.startswith("clinbench")
    }


# --------------------------------------------------------------------------- provenance
@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    results = tmp_path_factory.mktemp("tiny")
    cfg = load(
        [
            "preset=smoke",
            "agents=[heuristic,random]",
            "tasks=[easy_bench]",
            "protocol.seeds=[1,2]",
            "launcher=sequential",
            f"results={results}",
        ]
    )
    outcome = run_sweep(cfg, show_progress=False)
    assert outcome.ok
    return cfg, results, json.loads((results / "manifest.json").read_text())


def test_resolved_config_is_saved_with_the_results(tiny_sweep):
    cfg, results, _ = tiny_sweep
    saved = OmegaConf.to_container(OmegaConf.load(results / "config.yaml"))
    assert saved == cfg.raw
    assert saved["results"] == str(results)


def test_manifest_records_code_config_machine_and_libraries(tiny_sweep):
    _, results, manifest = tiny_sweep
    assert manifest["clinbench_version"] == clinbench.__version__
    saved = (results / "config.yaml").read_bytes()
    assert len(manifest["config_hash"]) >= 8
    assert hashlib.sha256(saved).hexdigest().startswith(manifest["config_hash"])
    assert manifest["libraries"]["numpy"] == np.__version__
    assert manifest["libraries"]["pandas"] == metadata.version("pandas")
    assert manifest["libraries"]["hydra-core"] == metadata.version("hydra-core")
    assert manifest["machine"]["cores"] == os.cpu_count()
    assert manifest["machine"]["python"] == platform.python_version()
    assert manifest["backend"] == "sequential"


def test_manifest_records_the_git_state(tiny_sweep):
    _, _, manifest = tiny_sweep
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], check=False, cwd=REPO, capture_output=True, text=True
    )
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert manifest["git"]["sha"] == head.stdout.strip()
    assert isinstance(manifest["git"]["dirty"], bool)


def test_manifest_records_times_grid_and_cell_durations(tiny_sweep):
    cfg, results, manifest = tiny_sweep
    started = dt.datetime.fromisoformat(manifest["started"])
    finished = dt.datetime.fromisoformat(manifest["finished"])
    assert started <= finished
    assert manifest["wall_seconds"] >= 0
    assert manifest["grid"] == {
        "env": "all",
        "envs": ["recruitment"],
        "task_envs": {"easy_bench": "recruitment"},
        "tasks": ["easy_bench"],
        "agents": ["heuristic", "random"],
        "seeds": [1, 2],
    }
    assert manifest["protocol"]["eval_episodes"] == cfg.protocol.eval_episodes
    cells = manifest["cells"]
    assert len(cells) == 4
    assert {c["hash"] for c in cells} == {p.stem for p in (results / "runs").glob("*.json")}
    for c in cells:
        assert c["status"] == "ok"
        assert isinstance(c["seconds"], float) and c["seconds"] >= 0


# --------------------------------------------------------------------------- cell hashes
BASE = ("agents=[heuristic,hcapo]", "tasks=[easy_bench,medium_bench]")


def changed(before: dict, after: dict) -> set[tuple]:
    assert before.keys() == after.keys()
    return {k for k in before if before[k] != after[k]}


def test_cell_hashes_are_distinct_and_stable():
    first, second = hashes(*BASE), hashes(*BASE)
    assert first == second
    assert len(set(first.values())) == len(first)


def test_cell_hash_covers_the_agent_parameters():
    diff = changed(hashes(*BASE), hashes(*BASE, "agent.hcapo.omega=0"))
    assert diff == {k for k in hashes(*BASE) if k[2] == "hcapo"}
    # another agent's parameters are not part of these cells
    assert not changed(hashes(*BASE), hashes(*BASE, "agent.mira.lam=0"))


@pytest.mark.parametrize(
    "override", ["protocol.train_steps=9", "protocol.eval_episodes=3", "protocol.curve_points=3"]
)
def test_cell_hash_covers_the_protocol(override):
    before = hashes(*BASE)
    assert changed(before, hashes(*BASE, override)) == set(before)


def test_cell_hash_covers_task_overrides():
    before = hashes(*BASE)
    diff = changed(before, hashes(*BASE, "env.overrides={easy_bench: {budget: 90000}}"))
    assert diff == {k for k in before if k[1] == "easy_bench"}


@pytest.mark.parametrize(
    "override",
    [
        "protocol.seeds=[3,2,1]",
        "results=/somewhere/else",
        "launcher=sequential",
        "launcher.jobs=1",
        "report.alpha=0.01",
        "report.test=welch",
    ],
)
def test_cell_hash_ignores_what_does_not_change_a_cell(override):
    assert hashes(*BASE, override) == hashes(*BASE)


def test_cell_hash_keys_a_seed_to_the_same_hash_in_any_seed_list():
    one = hashes(*BASE, "protocol.seeds=[7]")
    many = hashes(*BASE, "protocol.seeds=[1,7,21]")
    assert one.items() <= many.items()
