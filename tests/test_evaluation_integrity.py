"""Evaluation integrity (``docs/evaluation.md``): worlds no agent can predict.

The attacks of the threat model, rebuilt as agents, against the protocol:

- world prediction: ``SeedSearchAgent`` recovers its evaluation world from its acting
  seed by searching public cell seeds under the public key. It gains there (the public
  key is an open test set, which the report states) and gains nothing, paired episode
  for episode, under a held-out key, in process and through ``clinbench serve``;
- test-set feedback: the learning-curve callback plays validation worlds only;
- reading the harness's memory: ``GcProbeAgent`` finds the scored environment and the
  key in process, and neither when evaluated in a process of its own.

Plus the key's life cycle in a sweep: commitment while cells run, the key kept
owner-only, reused on resume (also after kill -9), revealed and verified by the report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clinbench import evaluation_key
from clinbench.agents.learner import TRAIN_SEED_LOW
from clinbench.agents.registry import load_plugin_file
from clinbench.cli.app import app
from clinbench.evaluation_key import PUBLIC, EvaluationKey, EvaluationKeyError
from clinbench.protocol import (
    EVALUATION,
    VALIDATION,
    VALIDATION_SEED_LOW,
    CellWorlds,
    Protocol,
    acting_seeds,
    characteristic_seeds,
    evaluation_seeds,
    run_cell,
    validation_seeds,
)

PLUGINS = Path(__file__).parent / "plugins"
SEARCH = f"{PLUGINS / 'seed_search_agent.py'}:SeedSearchAgent"
PROBE = f"{PLUGINS / 'seed_search_agent.py'}:GcProbeAgent"
RECORDING = f"{PLUGINS / 'recording_agent.py'}:RecordingAgent"
TASKS = ("recruitment/easy_bench", "trial_design/effective_drug")
HAVE_SERVE = importlib.util.find_spec("openenv") is not None
runner = CliRunner(env={"COLUMNS": "200"})
EVAL = Protocol(train_steps=0, eval_episodes=6)


def attack(env_id: str, key: EvaluationKey, search: bool, remote: str | None = None):
    return run_cell(
        env_id,
        SEARCH,
        7,
        EVAL,
        {"search": search},
        agent_name="seed_search",
        remote=remote,
        key=key,
    )


# --------------------------------------------------------------------------- the key
def test_the_derivation_is_keyed_deterministic_and_prefix_stable():
    other = evaluation_key.fresh()
    assert evaluation_seeds(PUBLIC, 1, 10) == evaluation_seeds(PUBLIC, 1, 10)
    assert evaluation_seeds(PUBLIC, 1, 10)[:4] == evaluation_seeds(PUBLIC, 1, 4)
    assert not set(evaluation_seeds(PUBLIC, 1, 10)) & set(evaluation_seeds(other, 1, 10))
    assert evaluation_seeds(PUBLIC, 1, 10) != evaluation_seeds(PUBLIC, 2, 10)
    # acting seeds depend on the agent and the task, never on a world seed
    a = acting_seeds(PUBLIC, 1, "heuristic", TASKS[0], EVALUATION, 5)
    assert a != acting_seeds(PUBLIC, 1, "random", TASKS[0], EVALUATION, 5)
    assert a != acting_seeds(PUBLIC, 1, "heuristic", TASKS[1], EVALUATION, 5)
    assert a != acting_seeds(PUBLIC, 1, "heuristic", TASKS[0], VALIDATION, 5)


def test_world_ranges_never_meet():
    for key in (PUBLIC, evaluation_key.fresh()):
        for seed in (1, 7, 123):
            ev = evaluation_seeds(key, seed, 500) + characteristic_seeds(key, seed, 500)
            val = validation_seeds(key, seed, 500)
            assert all(0 <= s < VALIDATION_SEED_LOW for s in ev)
            assert all(VALIDATION_SEED_LOW <= s < TRAIN_SEED_LOW for s in val)


def test_keys_are_checked_and_never_printed():
    with pytest.raises(EvaluationKeyError, match="16 to 64 bytes"):
        EvaluationKey(b"short", "held_out")
    with pytest.raises(EvaluationKeyError, match="unknown key mode"):
        EvaluationKey(bytes(32), "secret")
    with pytest.raises(EvaluationKeyError, match="hex digits"):
        evaluation_key.parse("not a key", "--key-file")
    key = evaluation_key.fresh()
    assert key.mode == "held_out" and len(key.key) == 32
    assert key.key.hex() not in repr(key) and key.key.hex() not in str(key.about())
    assert evaluation_key.verify(key.key, key.commitment)
    assert not evaluation_key.verify(evaluation_key.fresh().key, key.commitment)


def test_a_sweep_key_is_chosen_and_kept_by_the_rules(tmp_path, monkeypatch):
    monkeypatch.delenv(evaluation_key.KEY_VARIABLE, raising=False)
    pick = evaluation_key.for_sweep
    assert pick(tmp_path, held_out=False, key_file=None, resume=True) == PUBLIC
    first = pick(tmp_path, held_out=True, key_file=None, resume=True)
    assert first.mode == "held_out" and first != pick(
        tmp_path, held_out=True, key_file=None, resume=True
    )
    path = evaluation_key.store(tmp_path, first)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # a resume reuses the stored key, with or without --held-out
    assert pick(tmp_path, held_out=False, key_file=None, resume=True) == first
    assert pick(tmp_path, held_out=True, key_file=None, resume=True) == first
    assert pick(tmp_path, held_out=True, key_file=None, resume=False) != first
    other = tmp_path / "other.key"
    other.write_text(evaluation_key.fresh().key.hex())
    with pytest.raises(EvaluationKeyError, match="another evaluation key"):
        pick(tmp_path, held_out=False, key_file=other, resume=True)
    assert pick(tmp_path, held_out=False, key_file=other, resume=False).key.hex() == (
        other.read_text()
    )
    monkeypatch.setenv(evaluation_key.KEY_VARIABLE, first.key.hex())
    assert pick(tmp_path / "new", held_out=False, key_file=None, resume=True) == first


# --------------------------------------------------------------------------- world prediction
@pytest.mark.parametrize("env_id", TASKS)
def test_seed_search_gains_under_the_public_key(env_id):
    """The attack works where the key is public: it is an open test set (the report says
    so), and this shows the plugin below is a real attack."""
    searched, plain = attack(env_id, PUBLIC, True), attack(env_id, PUBLIC, False)
    assert all(e.agent_stats["worlds_recovered"] > 0 for e in searched.episodes)
    assert searched.eval_seeds == plain.eval_seeds
    assert searched.mean_score > plain.mean_score


@pytest.mark.parametrize("env_id", TASKS)
def test_seed_search_gains_nothing_under_a_held_out_key(env_id):
    key = evaluation_key.fresh()
    searched, plain = attack(env_id, key, True), attack(env_id, key, False)
    assert [e.agent_stats["worlds_recovered"] for e in searched.episodes] == [0.0] * 6
    # paired, world by world: the same episodes exactly
    assert [e.score for e in searched.episodes] == [e.score for e in plain.episodes]
    assert searched.eval_seeds == plain.eval_seeds
    assert not set(searched.eval_seeds) & set(evaluation_seeds(PUBLIC, 7, 6))


@pytest.mark.skipif(not HAVE_SERVE, reason='needs the serve extra: pip install -e ".[serve]"')
@pytest.mark.parametrize("env_id", TASKS)
def test_seed_search_gains_nothing_through_serve(env_id):
    from clinbench.serve.app import serve_in_thread

    srv, url = serve_in_thread(env_id, max_sessions=8)
    try:
        key = evaluation_key.fresh()
        searched, plain = attack(env_id, key, True, url), attack(env_id, key, False, url)
        public = attack(env_id, PUBLIC, True, url)
    finally:
        srv.should_exit = True
    assert [e.agent_stats["worlds_recovered"] for e in searched.episodes] == [0.0] * 6
    assert [e.score for e in searched.episodes] == [e.score for e in plain.episodes]
    assert all(e.agent_stats["worlds_recovered"] > 0 for e in public.episodes)


# --------------------------------------------------------------------------- test-set feedback
def test_the_curve_callback_plays_validation_worlds_only(monkeypatch):
    from clinbench import protocol

    module = load_plugin_file(str((PLUGINS / "recording_agent.py").resolve()))
    module.RECEIVED.clear()
    played: list[tuple[str, int]] = []
    real = protocol.play_episode

    def spy(env, agent, seed, **kw):
        phase = "after" if any(k == "evaluated" for k, _ in module.RECEIVED) else "curve"
        played.append((phase, seed))
        return real(env, agent, seed, **kw)

    monkeypatch.setattr(protocol, "play_episode", spy)
    key = evaluation_key.fresh()
    result = run_cell(TASKS[0], RECORDING, 3, Protocol(2, 4, 2, curve_episodes=3), key=key)
    module.RECEIVED.clear()
    curve = [s for phase, s in played if phase == "curve"]
    assert curve == validation_seeds(key, 3, 3)  # curve_episodes, not eval_episodes
    assert not set(curve) & set(result.eval_seeds)
    assert [s for phase, s in played if phase == "after"] == result.eval_seeds


def test_a_pickled_curve_callback_scores_nothing():
    import pickle

    from clinbench.protocol import CurveEvaluator

    kept = pickle.loads(pickle.dumps(CurveEvaluator(lambda a: 1.0, object(), 3)))
    with pytest.raises(RuntimeError, match="during training only"):
        kept(object())


# --------------------------------------------------------------------------- checkpoint selection
DRIFTING = f"{PLUGINS / 'drifting_agent.py'}:DriftingAgent"
FALLING = f"{PLUGINS / 'drifting_agent.py'}:FallingAgent"


def test_the_curve_callback_keeps_the_best_trained_copy_the_later_on_ties():
    from clinbench.agents.core.budget import StepBudget
    from clinbench.protocol import CurveEvaluator

    class Policy:
        version, played = 0, False

    def score(copy):
        copy.played = True  # what playing the validation worlds leaves on the copy
        return {0: 0.9, 1: 0.5, 2: 0.3, 3: 0.5, 4: float("nan"), 5: 0.2}[copy.version]

    agent, budget = Policy(), StepBudget(100)
    evaluate = CurveEvaluator(score, agent, 6, budget, keep=True)
    for version in range(6):
        agent.version, budget.used = version, 10 * version
        evaluate(agent)
    # version 0, scored before any training step, is the untrained policy: no candidate
    assert evaluate.best is not agent and evaluate.best.version == 3
    assert evaluate.kept == {"env_steps": 30, "mean_score": 0.5}
    assert not evaluate.best.played  # a copy taken before the scored one played
    agent.version = 0
    assert evaluate.best.version == 3
    last = CurveEvaluator(score, agent, 6, budget)  # keep=False: nothing kept
    last(agent)
    assert last.best is None and last.kept == {}


@pytest.mark.parametrize("env_id", TASKS)
def test_a_learner_that_falls_back_is_evaluated_at_its_best_checkpoint(env_id):
    """An adversarial learner that peaks mid-training and ends where it began: with
    checkpoint selection every evaluation world meets the peak's policy, without it the
    last one; the kept score is the trained points' maximum, and only validation worlds
    chose it."""
    protocol = Protocol(train_steps=10, eval_episodes=4, curve_points=3, curve_episodes=6)
    kept = run_cell(env_id, DRIFTING, 2, protocol)
    last = run_cell(env_id, DRIFTING, 2, replace(protocol, select_checkpoint=False))
    scores = [p.mean_score for p in kept.curve]
    assert scores[1] > max(scores[0], scores[2])  # the heuristic beats the first macro
    assert kept.training["kept"] == {"env_steps": 1, "mean_score": scores[1]}
    assert [e.agent_stats["level"] for e in kept.episodes] == [1.0] * 4
    assert [e.agent_stats["level"] for e in last.episodes] == [0.0] * 4
    assert "kept" not in last.training and kept.curve == last.curve
    assert kept.mean_score > last.mean_score


@pytest.mark.parametrize("env_id", TASKS)
def test_the_untrained_policy_is_never_the_kept_checkpoint(env_id):
    """A learner whose untrained policy is its best (the heuristic) and whose training
    makes it worse is evaluated at its best *trained* point, so the report shows the
    loss rather than hiding it behind the untrained policy."""
    protocol = Protocol(train_steps=10, eval_episodes=4, curve_points=3, curve_episodes=6)
    result = run_cell(env_id, FALLING, 2, protocol)
    scores = [p.mean_score for p in result.curve]
    assert scores[0] > max(scores[1:])
    assert result.training["kept"] == {"env_steps": 2, "mean_score": scores[2]}  # later tie
    assert [e.agent_stats["level"] for e in result.episodes] == [0.0] * 4


def test_clinbench_run_plays_the_checkpoint_a_sweep_cell_evaluates():
    from clinbench.cli.run import play

    episode = play(DRIFTING, TASKS[1], 2, train_steps=10)
    assert episode.agent_stats["level"] == 1.0  # the peak, not the last policy


@pytest.mark.parametrize(
    ("env_id", "agent", "steps"),
    [
        *((TASKS[1], a, 1_500) for a in ("hcapo", "mira", "klong", "memexrl")),
        (TASKS[0], "klong", 4_000),
    ],
)
def test_a_scored_copy_evaluates_as_the_trained_agent_itself(env_id, agent, steps):
    """The kept checkpoint is a copy of a trained agent (updated: its standardiser
    fitted) taken when a curve point is scored: playing the validation worlds with the
    other copy changes nothing the agent does next."""
    from clinbench.agents.context import AgentContext
    from clinbench.agents.learner import scoring_copy
    from clinbench.agents.registry import make_agent
    from clinbench.env import make
    from clinbench.protocol import training_env_factory

    env = make(env_id)
    trained = make_agent(agent, AgentContext.of(env))
    cell = CellWorlds(PUBLIC, 5, agent, env_id)
    trained.train(training_env_factory(env_id, steps=steps), steps, cell.training_stream())
    assert trained.std.count > 0
    copy = scoring_copy(trained)
    cell.play(env, trained, VALIDATION, 3)
    after = [(e.score, e.ret, e.steps) for e in cell.play(env, trained, EVALUATION, 3)]
    assert after == [(e.score, e.ret, e.steps) for e in cell.play(env, copy, EVALUATION, 3)]


# --------------------------------------------------------------------------- isolation
@pytest.mark.parametrize("env_id", TASKS)
def test_an_isolated_agent_finds_neither_the_environment_nor_the_key(env_id, monkeypatch):
    key = evaluation_key.fresh()
    monkeypatch.setenv(evaluation_key.KEY_VARIABLE, key.key.hex())
    inside = run_cell(env_id, PROBE, 3, Protocol(0, 2), key=key)
    outside = run_cell(env_id, PROBE, 3, Protocol(0, 2), key=key, isolate=True)
    assert all(e.agent_stats["envs_seen"] > 0 for e in inside.episodes)
    assert all(e.agent_stats["keys_seen"] > 0 for e in inside.episodes)
    assert all(e.agent_stats["envs_seen"] == 0 for e in outside.episodes)
    assert all(e.agent_stats["keys_seen"] == 0 for e in outside.episodes)
    assert [e.score for e in inside.episodes] == [e.score for e in outside.episodes]


@pytest.mark.parametrize("env_id", TASKS)
@pytest.mark.parametrize("agent", ["heuristic", "random", "hcapo"])
def test_isolation_gives_the_same_numbers(env_id, agent):
    protocol = Protocol(
        train_steps=400, eval_episodes=3, curve_points=2, oc_episodes=4, null_episodes=5
    )
    inside = run_cell(env_id, agent, 5, protocol)
    outside = run_cell(env_id, agent, 5, protocol, isolate=True)
    assert [e.score for e in inside.episodes] == [e.score for e in outside.episodes]
    assert [e.ret for e in inside.episodes] == [e.ret for e in outside.episodes]
    assert inside.oc_metrics == outside.oc_metrics
    assert inside.null_counts == outside.null_counts
    assert inside.curve == outside.curve


def test_an_isolated_agent_that_fails_fails_its_cell_with_its_error():
    from clinbench.isolation import IsolatedAgentError

    with pytest.raises(IsolatedAgentError, match="failed in 'act'"):
        run_cell(TASKS[0], f"{PLUGINS / 'recording_agent.py'}:FailingAgent", 1, EVAL, isolate=True)


# --------------------------------------------------------------------------- sweeps
GRID = (
    "preset=smoke",
    "--agents",
    "heuristic",
    "random",
    "hcapo",
    "--tasks",
    "easy_bench",
    "effective_drug",
    "--quiet",
)


def sweep(results: Path, *args: str):
    return runner.invoke(app, ["sweep", *GRID, *args, "--results", str(results)])


def cells(results: Path) -> dict[tuple, dict]:
    out = {}
    for path in sorted((results / "runs").glob("*.json")):
        r = json.loads(path.read_text())
        out[(r["key"]["task"], r["key"]["agent"], r["key"]["seed"])] = r
    return out


def outcome(record: dict) -> tuple:
    return (
        record["hash"],
        record["eval_seeds"],
        record["episodes"],
        record["curve"],
        record.get("oc_metrics"),
    )


@pytest.fixture(scope="module")
def held_out(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("held_out") / "results"
    result = sweep(results, "--held-out", "--no-report")
    assert result.exit_code == 0, result.output
    return results


def test_a_held_out_sweep_records_only_the_commitment(held_out):
    key = evaluation_key.read(held_out / evaluation_key.KEY_FILE)
    assert stat.S_IMODE((held_out / evaluation_key.KEY_FILE).stat().st_mode) == 0o600
    manifest = json.loads((held_out / "manifest.json").read_text())
    assert manifest["evaluation"] == {**key.about(), "isolated_agents": False}
    for path in [
        held_out / "manifest.json",
        *held_out.glob("*.csv"),
        *(held_out / "runs").glob("*.json"),
    ]:
        assert key.key.hex() not in path.read_text(), path
    for record in cells(held_out).values():
        assert record["evaluation"] == key.about()
        assert not set(record["eval_seeds"]) & set(
            evaluation_seeds(PUBLIC, record["key"]["seed"], 10)
        )


def test_the_report_reveals_a_key_that_verifies(held_out, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(held_out, folder)
    result = runner.invoke(
        app, ["report", "--results", str(folder), "--reproducible", "--no-charts"]
    )
    assert result.exit_code == 0, result.output
    state = json.loads((folder / "benchmark_report.json").read_text())["protocol"]["evaluation_key"]
    key = evaluation_key.read(folder / evaluation_key.KEY_FILE)
    assert state["mode"] == "held_out" and state["revealed"] == key.key.hex()
    assert evaluation_key.verify(bytes.fromhex(state["revealed"]), state["commitment"])
    assert key.key.hex() in (folder / "benchmark_report.md").read_text()
    # anyone can re-run it with the revealed key: the same numbers
    again = tmp_path / "again"
    (tmp_path / "revealed.key").write_text(state["revealed"])
    result = sweep(again, "--key-file", str(tmp_path / "revealed.key"), "--no-report")
    assert result.exit_code == 0, result.output
    assert {k: outcome(r) for k, r in cells(again).items()} == {
        k: outcome(r) for k, r in cells(held_out).items()
    }
    # a key that is not the committed one is refused
    (folder / evaluation_key.KEY_FILE).write_text(evaluation_key.fresh().key.hex())
    result = runner.invoke(app, ["report", "--results", str(folder)])
    assert result.exit_code == 2 and "does not match the commitment" in " ".join(
        result.output.split()
    )
    assert "Traceback" not in result.output


def test_a_key_file_that_is_not_the_folders_exits_2(held_out, tmp_path):
    other = tmp_path / "other.key"
    other.write_text(evaluation_key.fresh().key.hex())
    result = sweep(held_out, "--key-file", str(other))
    assert result.exit_code == 2 and "another evaluation key" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_different_key_gives_different_worlds(held_out, tmp_path):
    result = sweep(tmp_path / "public", "--no-report")
    assert result.exit_code == 0, result.output
    public, secret = cells(tmp_path / "public"), cells(held_out)
    assert public.keys() == secret.keys()
    for k in public:
        assert not set(public[k]["eval_seeds"]) & set(secret[k]["eval_seeds"])
        assert public[k]["hash"] != secret[k]["hash"]


@pytest.mark.slow
def test_a_killed_held_out_sweep_resumes_under_its_key(held_out, tmp_path):
    results = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "clinbench.cli.app",
        "sweep",
        *GRID,
        "--held-out",
        "--no-report",
        "--jobs",
        "1",
        "--results",
        str(results),
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(list((results / "runs").glob("*.json"))) < 3:
            assert proc.poll() is None, "the sweep stopped before it could be killed"
            assert time.monotonic() < deadline, "no cell finished in time"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    done = len(list((results / "runs").glob("*.json")))
    key = evaluation_key.read(results / evaluation_key.KEY_FILE)
    result = sweep(results, "--no-report")  # no flag: the stored key is reused
    assert result.exit_code == 0, result.output
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["counts"]["resumed"] == done and manifest["evaluation"]["commitment"] == (
        key.commitment
    )
    # ... and the numbers are those of an uninterrupted sweep with that key
    straight = tmp_path / "straight"
    (tmp_path / "k").write_text(key.key.hex())
    assert sweep(straight, "--key-file", str(tmp_path / "k"), "--no-report").exit_code == 0
    assert {k: outcome(r) for k, r in cells(results).items()} == {
        k: outcome(r) for k, r in cells(straight).items()
    }


def test_the_public_report_says_it_is_an_open_test_set(smoke_results):
    report = json.loads((smoke_results / "benchmark_report.json").read_text())
    state = report["protocol"]["evaluation_key"]
    assert state == {
        "mode": "public",
        "commitment": PUBLIC.commitment,
        "revealed": PUBLIC.key.hex(),
    }
    text = " ".join((smoke_results / "benchmark_report.md").read_text().split())
    assert "open test set" in text and "validation worlds" in text


def test_cell_worlds_are_the_protocols():
    cell = CellWorlds(PUBLIC, 4, "heuristic", TASKS[0])
    assert cell.worlds(EVALUATION, 3) == evaluation_seeds(PUBLIC, 4, 3)
    assert cell.acting_seeds(EVALUATION, 3) == acting_seeds(
        PUBLIC, 4, "heuristic", TASKS[0], EVALUATION, 3
    )
    rng = cell.training_stream()
    assert isinstance(rng, np.random.Generator)


@pytest.mark.parametrize("env_id", TASKS)
def test_an_unseeded_native_reset_reports_no_seed(env_id):
    from clinbench.env import make

    env = make(env_id)
    _, info = env.reset()
    assert info["seed"] is None
    _, info = env.reset(seed=1234)
    assert info["seed"] == 1234  # the caller's own seed, echoed
