"""Offline learning: datasets, splits, the four offline agents and their protocol.

The agents and splits run on the core install (episodes logged in memory); writing and
reading dataset files needs Minari (extra ``offline``) and those tests skip without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from clinbench.agents import AgentContext, make_agent
from clinbench.agents.core.regression import MultinomialLogistic
from clinbench.agents.learner import TRAIN_SEED_LOW
from clinbench.env import make
from clinbench.evaluation_key import PUBLIC
from clinbench.offline import available, splits
from clinbench.offline.base import NotFittedError
from clinbench.offline.bc import BCAgent
from clinbench.offline.collect import play_logged
from clinbench.offline.data import OfflineData
from clinbench.offline.iql import IQLAgent, advantage_weights, expectile_loss_grad
from clinbench.offline.learned_reward import LearnedRewardAgent
from clinbench.offline.rwbc import RWBCAgent
from clinbench.protocol import (
    EVALUATION,
    CellWorlds,
    TrainingEnv,
    evaluation_seeds,
    training_env_factory,
)

TASK = "trial_design/effective_drug"
needs_minari = pytest.mark.skipif(not available(), reason="needs the offline extra (minari)")
#: a short fit: enough to imitate the classical design on its macro-actions
FAST = {"steps": 600}


def logged(task: str, behaviour: str, n: int, noise: float = 0.0, start: int = 0) -> list:
    env = make(task)
    agent = make_agent(behaviour, AgentContext.of(env))
    rng = np.random.default_rng(start)
    return [
        play_logged(
            env, agent, task.split("/")[1], behaviour, TRAIN_SEED_LOW + start + i, i, noise, rng
        )
        for i in range(n)
    ]


def as_data(episodes: list) -> OfflineData:
    macros = make(TASK).macro_space
    return OfflineData.from_episodes(episodes, macros.feature_names, macros.names)


@pytest.fixture(scope="module")
def heuristic_data() -> OfflineData:
    return as_data(logged(TASK, "heuristic", 150, noise=0.1))


def mean_score(agent, task: str = TASK, n: int = 30) -> float:
    env = make(task)
    episodes = CellWorlds(PUBLIC, 1, agent.name, task).play(env, agent, EVALUATION, n)
    return float(np.mean([e.score for e in episodes]))


def fitted(cls, data, **config):
    agent = cls(AgentContext.of(make(TASK)), **{**FAST, **config})
    agent.fit(data, np.random.default_rng(5))
    return agent


# ---------------------------------------------------------------------- logging
def test_a_logged_episode_replays_to_its_rewards_and_score():
    for e in logged(TASK, "heuristic", 3) + logged(TASK, "random", 3, noise=0.3):
        env = make(TASK)
        obs, _ = env.reset(seed=e.world_seed)
        rewards = []
        for k in e.actions:
            obs, r, *_ = env.step(env.macro_space.to_action(int(k), obs))
            rewards.append(r)
        assert rewards == list(e.rewards)
        assert e.score == pytest.approx(sum(rewards))
        assert e.observations.shape[0] == len(e) + 1 == e.action_masks.shape[0]
        assert all(e.action_masks[t, a] for t, a in enumerate(e.actions))


@pytest.mark.parametrize("task", ["trial_design/efficacy_safety", "portfolio/develop"])
@pytest.mark.parametrize("behaviour", ["heuristic", "random"])
def test_logged_episodes_of_every_family_replay_to_their_rewards(task, behaviour):
    """Each family's macro space projects a behaviour agent's native action on a valid
    macro (``index_of``), so logging works on it and the log is what was played."""
    for e in logged(task, behaviour, 4, noise=0.2):
        env = make(task)
        obs, _ = env.reset(seed=e.world_seed)
        rewards = []
        for t, k in enumerate(e.actions):
            assert e.action_masks[t, k]
            obs, r, *_ = env.step(env.macro_space.to_action(int(k), obs))
            rewards.append(r)
        assert rewards == list(e.rewards) and e.score == pytest.approx(sum(rewards))


def test_the_portfolio_projection_keeps_each_macros_own_portfolio():
    """A macro's own portfolio is logged as a macro with that same portfolio."""
    from clinbench.offline.collect import behaviour_macro

    env = make("portfolio/develop")
    macros = env.macro_space
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(15):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            mask = macros.mask(obs)
            for k in np.flatnonzero(mask):
                action = macros.to_action(int(k), obs)
                j = behaviour_macro(macros, action, obs, mask)
                assert mask[j] and macros.to_action(j, obs) == action
                checked += 1
            valid = np.flatnonzero(mask[:-1])
            obs, _, done, *_ = env.step(macros.to_action(int(rng.choice(valid)), obs))
    assert checked > 200


def test_an_agent_acting_through_macros_is_logged_exactly():
    """random plays macros: its logged episode is its own (no projection)."""
    from clinbench.episode import play_episode

    env = make(TASK)
    agent = make_agent("random", AgentContext.of(env))
    for i, e in enumerate(logged(TASK, "random", 5)):
        assert e.score == play_episode(env, agent, e.world_seed, agent_seed=i).score


def test_transitions_line_up():
    data = as_data(logged(TASK, "heuristic", 4))
    ends = np.flatnonzero(data.terminals | data.timeouts)
    assert ends.size == data.n_episodes
    inner = np.setdiff1d(np.arange(len(data) - 1), ends)
    assert np.array_equal(data.next_observations[inner], data.observations[inner + 1])
    for i in range(data.n_episodes):
        rows = data.episode == i
        assert data.returns_to_go[rows][0] == pytest.approx(data.rewards[rows].sum())
        assert data.episode_returns[i] == pytest.approx(data.rewards[rows].sum())


# ---------------------------------------------------------------------- agents
@pytest.mark.parametrize("cls", [BCAgent, RWBCAgent, LearnedRewardAgent, IQLAgent])
def test_each_offline_agent_beats_random_on_a_good_behaviours_data(cls, heuristic_data):
    # 200 shared worlds: a difference of means has a standard error of about 0.03
    random_score = mean_score(make_agent("random", AgentContext.of(make(TASK))), n=200)
    score = mean_score(fitted(cls, heuristic_data), n=200)
    assert score > random_score + 0.15, (cls.name, score, random_score)


@pytest.mark.parametrize(
    ("cls", "ablation"), [(RWBCAgent, {"beta": 0.0}), (IQLAgent, {"temperature": 0.0})]
)
def test_ablations_that_collapse_to_bc_are_exactly_bc(cls, ablation, heuristic_data):
    bc = fitted(BCAgent, heuristic_data)
    other = fitted(cls, heuristic_data, **ablation)
    for k, v in bc.policy.params.items():
        assert np.array_equal(v, other.policy.params[k]), k
    assert mean_score(other) == mean_score(bc)


def test_the_full_methods_weight_actions_and_differ_from_bc(heuristic_data):
    bc = fitted(BCAgent, heuristic_data)
    for cls in (RWBCAgent, IQLAgent):
        other = fitted(cls, heuristic_data)
        assert not np.array_equal(bc.policy.params["W"], other.policy.params["W"])


def test_linear_bc_fits_the_multinomial_logistic_likelihood(heuristic_data):
    """hidden 0 (the ablation) is multinomial logistic regression: its mean
    cross-entropy comes within 0.1 nats of the L-BFGS optimum of the unpenalised
    likelihood (minibatch Adam stops short of the large weights of a nearly separable
    optimum; the masked softmax is never worse than the plain one)."""
    agent = fitted(BCAgent, heuristic_data, hidden=0, steps=4000, lr=0.01)
    x = agent.std(heuristic_data.observations)
    y = heuristic_data.actions
    fwd = agent.policy.forward(x, heuristic_data.masks)
    ours = -fwd.logp[np.arange(y.size), y].mean()
    ref = MultinomialLogistic(agent.macros.n, alpha=1e-6, max_iter=2000).fit(x, y)
    best = -np.log(ref.predict_proba(x)[np.arange(y.size), y]).mean()
    assert best <= ours + 1e-6
    assert ours - best < 0.1, (ours, best)


def test_the_myopic_learned_reward_ablation_cannot_see_the_final_outcome(heuristic_data):
    """target=reward fits immediate rewards; a trial's score arrives at its end, so the
    ablation loses what the return-to-go model gets."""
    full = mean_score(fitted(LearnedRewardAgent, heuristic_data), n=200)
    myopic = mean_score(fitted(LearnedRewardAgent, heuristic_data, target="reward"), n=200)
    assert myopic < full - 0.05, (myopic, full)  # 0.24 against 0.34 (trial_design v2)


def test_expectile_loss_matches_a_numeric_expectile():
    rng = np.random.default_rng(0)
    sample = rng.normal(size=400)
    for tau in (0.5, 0.7, 0.9):
        v = optimize.minimize_scalar(lambda m, t=tau: expectile_loss_grad(sample - m, t)[0].sum()).x
        if tau == 0.5:
            assert v == pytest.approx(sample.mean(), abs=1e-6)
        # the first-order condition through the analytic derivative
        assert abs(expectile_loss_grad(sample - v, tau)[1].sum()) < 1e-4
        u, h = 1e-6, sample - v
        numeric = (expectile_loss_grad(h + u, tau)[0] - expectile_loss_grad(h - u, tau)[0]) / (
            2 * u
        )
        assert np.allclose(numeric, expectile_loss_grad(h, tau)[1], atol=1e-5)
    uppers = [
        optimize.minimize_scalar(lambda m, t=t: expectile_loss_grad(sample - m, t)[0].sum()).x
        for t in (0.5, 0.7, 0.9)
    ]
    assert uppers[0] < uppers[1] < uppers[2]


def test_advantage_weights_are_capped_and_one_at_temperature_zero():
    adv = np.linspace(-3, 3, 7)
    assert np.array_equal(advantage_weights(adv, 0.0), np.ones(7))
    w = advantage_weights(adv * 10, 5.0)
    assert w.max() == 100.0 and np.all(np.diff(w) >= 0)


def test_iql_values_learn_the_behaviour_value_at_expectile_one_half():
    """On data where every episode has one decision and reward r(a), tau = 0.5 gives
    V = the mean reward under the data and Q(a) = r(a)."""
    env = make(TASK)
    macros = env.macro_space
    n, f = 2000, macros.n_features
    rng = np.random.default_rng(0)
    obs = np.zeros((n, f), dtype=np.float32)
    actions = rng.integers(0, 2, n)
    rewards = np.where(actions == 0, 1.0, 0.0) + rng.normal(0, 0.1, n)
    data = OfflineData(
        observations=obs.astype(float),
        next_observations=obs.astype(float),
        masks=np.ones((n, macros.n), bool),
        next_masks=np.ones((n, macros.n), bool),
        actions=actions,
        rewards=rewards,
        terminals=np.ones(n, bool),
        timeouts=np.zeros(n, bool),
        episode=np.arange(n),
        returns_to_go=rewards,
        episode_returns=rewards,
        feature_names=macros.feature_names,
        macro_names=macros.names,
    )
    agent = IQLAgent(AgentContext.of(env), expectile=0.5, steps=3000, hidden=0, polyak=0.05)
    agent.std.update(data.observations)
    x = agent.std(data.observations)
    q, v = agent.fit_values(data, x, x, np.random.default_rng(1))
    from clinbench.offline.base import predict

    assert predict(v, x[:1])[0, 0] == pytest.approx(rewards.mean(), abs=0.05)
    assert predict(q, x[:1])[0, :2] == pytest.approx([1.0, 0.0], abs=0.05)


def test_fitting_is_deterministic(heuristic_data):
    a, b = fitted(IQLAgent, heuristic_data), fitted(IQLAgent, heuristic_data)
    for k in a.policy.params:
        assert np.array_equal(a.policy.params[k], b.policy.params[k])


def test_an_offline_agent_refuses_anything_but_offline_data(heuristic_data):
    agent = BCAgent(AgentContext.of(make(TASK)))
    for bad in (make(TASK), TrainingEnv(make(TASK)), training_env_factory(TASK)):
        with pytest.raises(TypeError, match="never get an environment"):
            agent.fit(bad, np.random.default_rng(0))
    assert not agent.learning and agent.offline


def test_an_unfitted_offline_agent_says_it_needs_a_dataset():
    agent = BCAgent(AgentContext.of(make(TASK)))
    obs, _ = make(TASK).reset(seed=1)
    with pytest.raises(NotFittedError, match="--dataset"):
        agent.act(obs)


def test_data_of_another_family_is_refused(heuristic_data):
    agent = BCAgent(AgentContext.of(make("recruitment/easy_bench")))
    with pytest.raises(ValueError, match="another environment family"):
        agent.fit(heuristic_data, np.random.default_rng(0))


def test_bad_hyper_parameters_are_refused():
    ctx = AgentContext.of(make(TASK))
    for cls, kw in [
        (RWBCAgent, {"target": "x"}),
        (IQLAgent, {"expectile": 1.0}),
        (LearnedRewardAgent, {"target": "x"}),
        (BCAgent, {"batch_size": 0}),
    ]:
        with pytest.raises(ValueError):
            cls(ctx, **kw)


# ---------------------------------------------------------------------- splits
def test_splits_select_disjoint_and_documented_episodes():
    episodes = (
        logged(TASK, "heuristic", 20)
        + logged(TASK, "random", 20)
        + logged("trial_design/efficacy_safety", "heuristic", 10)
    )
    eval_seeds = set(evaluation_seeds(PUBLIC, 1, 200))
    assert not eval_seeds & {e.world_seed for e in episodes}  # unseen worlds, always
    worlds = splits.select(episodes, splits.parse("worlds"), "effective_drug")
    assert {e.task for e in worlds} == {"effective_drug"} and len(worlds) == 40
    task = splits.select(episodes, splits.parse("task"), "effective_drug")
    assert {e.task for e in task} == {"efficacy_safety"}
    beh = splits.select(episodes, splits.parse("behaviour=random"), "effective_drug")
    assert {e.behaviour for e in beh} == {"random"} and len(beh) == 20
    unseen = splits.select(episodes, splits.parse("unseen=null_world"), "effective_drug")
    assert unseen and all(e.metrics["null_world"] == 0 for e in unseen)
    assert len(unseen) < len(worlds)  # the task has null worlds, left out
    null_eval = [
        e.metrics["null_world"]
        for e in CellWorlds(PUBLIC, 1, "heuristic", TASK).play(
            make(TASK), make_agent("heuristic", AgentContext.of(make(TASK))), EVALUATION, 40
        )
    ]
    assert any(null_eval)  # ... and its evaluation worlds have them


@pytest.mark.parametrize("bad", ["nope", "task=x", "behaviour", "unseen=a+b", "worlds=1"])
def test_bad_splits_name_the_syntax(bad):
    with pytest.raises(splits.SplitError, match="worlds|needs|takes|names"):
        splits.parse(bad)


def test_split_names():
    assert splits.parse("worlds").agent_name("bc") == "bc"
    assert splits.parse("behaviour=heuristic+random").agent_name("bc") == (
        "bc@behaviour=heuristic+random"
    )


# ---------------------------------------------------------------------- datasets
@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small two-task trial-design dataset on disk."""
    from clinbench.offline.dataset import create

    if not available():
        pytest.skip("needs the offline extra (minari)")
    root = tmp_path_factory.mktemp("datasets")
    spec = small_spec()
    create(spec, root, jobs=2)
    return root, spec


def small_spec(**changes):
    from clinbench.offline.dataset import DatasetSpec

    base = {
        "name": "trial-small-v0",
        "env": "trial_design",
        "tasks": ("effective_drug", "efficacy_safety"),
        "agents": ("heuristic", "random"),
        "episodes": 12,
        "noise": 0.1,
        "seed": 3,
    }
    return DatasetSpec(**{**base, **changes})


@needs_minari
def test_a_dataset_round_trips_through_minari(store, monkeypatch):
    import minari

    from clinbench.offline.dataset import play_unit

    root, spec = store
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    ds = minari.load_dataset(spec.name)  # the loader other people's code uses
    assert ds.total_episodes == 48
    episodes = list(ds.iterate_episodes())
    expected = [e for t, a in spec.units() for e in play_unit(spec, t, a)]
    metas = list(ds.storage.get_episode_metadata(range(ds.total_episodes)))
    for got, want, meta in zip(episodes, expected, metas, strict=True):
        assert np.array_equal(got.observations, want.observations)
        assert np.array_equal(got.actions, want.actions)
        assert np.array_equal(got.rewards, want.rewards)
        assert np.array_equal(got.infos["action_mask"], want.action_masks)
        assert bool(got.terminations[-1]) == want.terminated
        assert (meta["task"], meta["behaviour"], meta["world_seed"]) == (
            want.task,
            want.behaviour,
            want.world_seed,
        )
        assert meta["seed"] == want.world_seed
    meta = ds.storage.metadata["clinbench"]
    for key in (
        "env_ids",
        "task_versions",
        "behaviour_code",
        "clinbench_version",
        "created",
        "spec",
        "digest",
        "behaviour_scores",
    ):
        assert key in meta
    assert meta["spec"]["agents"] == ["heuristic", "random"]
    assert ds.action_space.n == make(TASK).macro_space.n


@needs_minari
def test_creation_is_deterministic_across_jobs(store, tmp_path):
    from clinbench.offline.dataset import create, metadata

    root, spec = store
    again = create(spec, tmp_path, jobs=1)
    assert again["digest"] == metadata(spec.name, root)["digest"]


@needs_minari
def test_creation_resumes_finished_units(tmp_path, monkeypatch):
    from clinbench.offline import dataset

    spec = small_spec(tasks=("effective_drug",))
    real, calls = dataset.play_unit, []

    def crash_on_second(s, task, agent):
        calls.append(agent)
        if len(calls) == 2:
            raise RuntimeError("crash")
        return real(s, task, agent)

    monkeypatch.setattr(dataset, "play_unit", crash_on_second)
    with pytest.raises(RuntimeError, match="crash"):
        dataset.create(spec, tmp_path, jobs=1)
    assert len(list((tmp_path / ".staging" / spec.name).glob("*.npz"))) == 1
    calls.clear()
    monkeypatch.setattr(dataset, "play_unit", lambda s, t, a: (calls.append(a), real(s, t, a))[1])
    meta = dataset.create(spec, tmp_path, jobs=1)
    assert calls == ["random"]  # heuristic's unit was kept
    assert meta["digest"] == dataset.create(spec, tmp_path / "fresh", jobs=1)["digest"]
    assert not (tmp_path / ".staging" / spec.name).exists()


@needs_minari
def test_an_existing_name_needs_force(store, invoke):
    root, spec = store
    args = [
        "dataset",
        "create",
        "--name",
        spec.name,
        "--tasks",
        "effective_drug",
        "--agents",
        "random",
        "--episodes",
        "2",
        "--data-dir",
        str(root),
        "-q",
    ]
    result = invoke(*args)
    assert result.exit_code == 2 and "--force" in result.output


def test_dataset_cli_refuses_bad_input(invoke, tmp_path):
    base = ["dataset", "create", "--episodes", "2", "--data-dir", str(tmp_path), "-q"]
    for extra, expected in [
        (["--name", "bad name", "--env", "trial_design", "--agents", "random"], "bad dataset name"),
        (
            ["--name", "a-v0", "--env", "nope", "--agents", "random"],
            "valid: portfolio, recruitment, trial_design",
        ),
        (["--name", "a-v0", "--env", "trial_design", "--agents", "nope"], "heuristic"),
        (["--name", "a-v0", "--env", "trial_design", "--agents", "bc"], "offline agent"),
        (
            ["--name", "a-v0", "--tasks", "easy_bench,effective_drug", "--agents", "random"],
            "one environment family",
        ),
    ]:
        result = invoke(*base, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert expected in result.output, (extra, result.output)
    result = invoke("dataset", "info", "missing-v0", "--data-dir", str(tmp_path))
    assert result.exit_code == 2 and "no dataset" in result.output


@needs_minari
def test_dataset_list_and_info(store, invoke):
    root, spec = store
    result = invoke("dataset", "list", "--data-dir", str(root), "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [d["name"] for d in listed] == [spec.name] and listed[0]["episodes"] == 48
    result = invoke("dataset", "info", spec.name, "--data-dir", str(root))
    assert result.exit_code == 0 and "heuristic, random" in result.output
    assert "minari.load_dataset" in result.output


@needs_minari
def test_the_data_folder_defaults_to_minaris_variable(monkeypatch, tmp_path):
    from clinbench.offline.dataset import data_dir

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.delenv("MINARI_DATASETS_PATH")
    assert data_dir() == Path("data/datasets")


# ---------------------------------------------------------------------- sweeps
def offline_sweep(root, results, *extra):
    from clinbench.config import load
    from clinbench.sweep import run_sweep

    cfg = load(
        [
            "env=trial_design",
            "tasks=[effective_drug,efficacy_safety]",
            "protocol.seeds=[1,7]",
            "protocol.eval_episodes=4",
            "protocol.oc_episodes=0",
            # 20 null worlds per cell (as the smoke preset), not the protocol's 2,000: the
            # null-world rates are still computed, resumed and compared across backends
            "protocol.null_episodes=20",
            f"results={results}",
            "offline.dataset=trial-small-v0",
            f"offline.data_dir={root}",
            "agent.bc.steps=200",
            "agent.iql.steps=200",
            *extra,
        ]
    )
    return cfg, run_sweep(cfg, show_progress=False)


@needs_minari
def test_an_offline_sweep_names_splits_resumes_and_reports(store, tmp_path):
    root, _ = store
    extra = ["agents=[heuristic,bc,iql]", "offline.splits=[worlds,task,'behaviour=heuristic']"]
    cfg, outcome = offline_sweep(root, tmp_path / "r", "launcher=sequential", *extra)
    assert outcome.ok, outcome.failed
    assert cfg.agents == (
        "heuristic",
        "bc",
        "bc@task",
        "bc@behaviour=heuristic",
        "iql",
        "iql@task",
        "iql@behaviour=heuristic",
    )
    assert outcome.total == 7 * 2 * 2
    runs = [json.loads(p.read_text()) for p in (tmp_path / "r" / "runs").glob("*.json")]
    offline = [r for r in runs if r["key"]["agent"] != "heuristic"]
    assert all(r["config"]["dataset"] == "trial-small-v0" for r in offline)
    task_cells = [r for r in offline if r["config"]["split"] == "task"]
    assert all(
        r["offline"]["tasks"] == sorted({"effective_drug", "efficacy_safety"} - {r["key"]["task"]})
        for r in task_cells
    )
    _, again = offline_sweep(root, tmp_path / "r", "launcher=sequential", *extra)
    assert again.ran == 0 and again.resumed == outcome.total
    _, parallel = offline_sweep(root, tmp_path / "p", "launcher.jobs=2", *extra)
    assert parallel.ok, parallel.failed
    one = {(r["key"]["agent"], r["key"]["task"], r["key"]["seed"]): r["episodes"] for r in runs}
    two = {
        (r["key"]["agent"], r["key"]["task"], r["key"]["seed"]): r["episodes"]
        for r in (json.loads(p.read_text()) for p in (tmp_path / "p" / "runs").glob("*.json"))
    }
    assert one == two
    from typer.testing import CliRunner

    from clinbench.cli.app import app

    result = CliRunner().invoke(app, ["report", "--results", str(tmp_path / "r"), "--no-charts"])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "r" / "benchmark_report.md").read_text()
    assert "## Offline agents and their data" in report
    assert "| bc@task | trial-small-v0 | task | efficacy_safety |" in report
    data = json.loads((tmp_path / "r" / "benchmark_report.json").read_text())
    assert data["offline"]["effective_drug"]["bc"]["behaviour_scores"].keys() == {
        "heuristic",
        "random",
    }


def test_offline_agents_without_a_dataset_exit_2(invoke, tmp_path):
    result = invoke(
        "sweep", "--agents", "bc", "--data-dir", str(tmp_path), "--results", str(tmp_path / "r")
    )
    assert result.exit_code == 2 and "--dataset NAME" in result.output


@needs_minari
def test_bad_offline_sweeps_exit_2(store, invoke, tmp_path):
    root, _ = store
    base = ["sweep", "env=trial_design", "--data-dir", str(root), "--results", str(tmp_path), "-q"]
    for extra, expected in [
        (["--agents", "bc", "--dataset", "nope-v0"], "available: trial-small-v0"),
        (["--agents", "bc", "--dataset", "trial-small-v0", "--split", "bogus"], "valid: worlds"),
        (["--agents", "bc", "--dataset", "trial-small-v0", "--split", "unseen=nope"], "null_world"),
        (
            ["--agents", "bc", "--dataset", "trial-small-v0", "--split", "behaviour=klong"],
            "heuristic, random",
        ),
        (["--agents", "heuristic", "--dataset", "trial-small-v0"], "no offline agent"),
        (
            ["--agents", "bc", "--dataset", "trial-small-v0", "--tasks", "rare_disease"],
            "none is selected",
        ),
    ]:
        result = invoke(*base, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert expected in result.output, (extra, result.output)


@needs_minari
def test_the_offline_protocol_hands_the_agent_data_never_an_environment(store, monkeypatch):
    """A recording offline agent run by a sweep cell receives its context, the arrays
    and a training stream: nothing reaches an environment, a world or a world seed."""
    from test_agent_contract import PLUGIN, assert_fair, scored_envs

    from clinbench.agents.registry import load_plugin_file
    from clinbench.offline.dataset import metadata
    from clinbench.sweep.cells import run_cell_record

    root, spec = store
    module = load_plugin_file(str(PLUGIN.resolve()))
    module.RECEIVED.clear()
    scored = scored_envs(monkeypatch)
    import clinbench.offline.protocol as offline_protocol

    built = []
    real = offline_protocol.make_env
    monkeypatch.setattr(
        offline_protocol, "make_env", lambda *a, **k: built.append(real(*a, **k)) or built[-1]
    )
    cell = {
        "env": "trial_design",
        "task": "effective_drug",
        "agent": "recording_offline",
        "seed": 8_675_309,
        "agent_params": {},
        "env_overrides": {},
        "code": "test",
        "protocol": {"train_steps": 0, "eval_episodes": 3, "curve_points": 1, "oc_episodes": 0},
        "agent_ref": f"{PLUGIN}:RecordingOfflineAgent",
        "agent_code": "",
        "dataset": spec.name,
        "dataset_digest": metadata(spec.name, root)["digest"],
        "split": "worlds",
        "data_dir": str(root),
    }
    record = run_cell_record(cell, "h")
    assert record["status"] == "ok", record.get("traceback")
    kinds = [k for k, _ in module.RECEIVED]
    assert "fit" in kinds and "train" not in kinds
    seeds = [*evaluation_seeds(PUBLIC, 8_675_309, 3), 8_675_309]
    for kind, value in module.RECEIVED:
        if kind == "fit":
            data, rng = value
            assert type(data) is OfflineData and isinstance(rng, np.random.Generator)
            assert_fair(data, seeds, scored + built)
            assert_fair(rng, seeds, scored + built)
        elif kind in ("init", "config"):
            assert_fair(value, seeds, scored + built)
    module.RECEIVED.clear()


def test_clinbench_run_sends_an_offline_agent_to_a_sweep(invoke):
    result = invoke("run", "--agent", "iql", "--task", "effective_drug", "--seed", "1")
    assert result.exit_code == 2 and "--dataset NAME" in result.output


# ---------------------------------------------------------------------- layouts
EASY, HARD = "recruitment/easy_bench", "recruitment/hard_bench"


def test_the_union_layout_keeps_every_tasks_names_in_the_largest_tasks_order():
    from clinbench.offline.layout import Layout, union

    easy, hard = Layout.of(make(EASY).macro_space), Layout.of(make(HARD).macro_space)
    assert len(easy.feature_names) < len(hard.feature_names)  # the sites differ
    for order in ([easy, hard], [hard, easy]):
        assert union(order) == hard  # easy's names are among hard's
    medium = Layout.of(make("recruitment/medium_bench").macro_space)
    assert union([easy, medium]) == medium
    trial = Layout.of(make(TASK).macro_space)
    assert union([trial, Layout.of(make("trial_design/rare_disease").macro_space)]) == trial


def test_an_episode_in_another_layout_keeps_its_values_by_name():
    from clinbench.offline.layout import Layout, relayout, union

    easy = Layout.of(make(EASY).macro_space)
    lay = union([easy, Layout.of(make(HARD).macro_space)])
    (e,) = logged(EASY, "random", 1, noise=0.2)
    out = relayout(e, easy, lay)
    for j, name in enumerate(lay.feature_names):
        col = out.observations[:, j]
        if name in easy.feature_names:
            assert np.array_equal(col, e.observations[:, easy.feature_names.index(name)])
        else:
            assert not col.any()
    for k, name in enumerate(lay.macro_names):
        if name not in easy.macro_names:
            assert not out.action_masks[:, k].any()
    assert [lay.macro_names[k] for k in out.actions] == [easy.macro_names[k] for k in e.actions]
    assert all(out.action_masks[t, k] for t, k in enumerate(out.actions))
    assert relayout(e, easy, easy) is e
    back = relayout(out, lay, easy)  # and back: the episode as logged
    for name in ("observations", "action_masks", "actions"):
        assert np.array_equal(getattr(back, name), getattr(e, name))
    from dataclasses import replace

    focus_a = replace(e, actions=np.full_like(e.actions, easy.macro_names.index("focus_site_A")))
    without_a = Layout(lay.feature_names, tuple(n for n in lay.macro_names if n != "focus_site_A"))
    with pytest.raises(ValueError, match="not in the target layout"):
        relayout(focus_a, easy, without_a)


def test_an_agent_fitted_on_other_tasks_plays_only_what_its_data_shows():
    """bc learns from easy_bench's episodes (4 sites) and plays hard_bench (10): every
    action is valid and no macro-action of a site easy_bench lacks is ever chosen."""
    from clinbench.offline.layout import Layout

    easy = Layout.of(make(EASY).macro_space)
    data = OfflineData.from_episodes(
        logged(EASY, "heuristic", 20, noise=0.1), easy.feature_names, easy.macro_names
    )
    env = make(HARD)
    agent = BCAgent(AgentContext.of(env), steps=200)
    agent.fit(data, np.random.default_rng(0))
    chosen = set()
    obs, _ = env.reset(seed=3)
    done = False
    while not done:
        action = agent.act(obs)
        k = env.macro_space.index_of(action)
        assert env.macro_space.mask(obs)[k]
        chosen.add(env.macro_space.names[k])
        obs, _, done, _, info = env.step(action)
        assert info.get("error") is None
    assert chosen <= set(easy.macro_names)
    with pytest.raises(ValueError, match="another environment family"):
        BCAgent(AgentContext.of(make(TASK))).fit(data, np.random.default_rng(0))


@needs_minari
def test_a_dataset_of_tasks_with_other_sites_stores_the_union_layout(tmp_path):
    from clinbench.offline.dataset import create, load
    from clinbench.offline.protocol import training_data

    spec = small_spec(
        name="rec-two-v0",
        env="recruitment",
        tasks=("easy_bench", "hard_bench"),
        agents=("random",),
        episodes=3,
    )
    meta = create(spec, tmp_path)
    hard = make(HARD).macro_space
    assert meta["feature_names"] == list(hard.feature_names)
    assert meta["macro_names"] == list(hard.names)
    _, episodes = load(spec.name, tmp_path)
    assert {e.observations.shape[1] for e in episodes} == {hard.n_features}
    data, about = training_data(spec.name, tmp_path, "task", "hard_bench")
    assert about["tasks"] == ["easy_bench"] and data.n_episodes == 3
    # learnt in easy_bench's own layout: no input column its episodes never filled
    easy = make(EASY).macro_space
    assert data.feature_names == easy.feature_names and data.macro_names == easy.names
    assert data.observations.shape[1] == easy.n_features
    own, _ = training_data(spec.name, tmp_path, "worlds", "easy_bench")
    assert own.feature_names == easy.feature_names
    assert np.array_equal(own.observations, data.observations)
    agent = BCAgent(AgentContext.of(make(HARD)), steps=50)
    agent.fit(data, np.random.default_rng(0))
    assert mean_score(agent, HARD, 3) >= 0.0


def test_behaviour_parameters_are_plain_data():
    """memexrl's list parameter comes from the config as plain JSON (dataset metadata)."""
    from clinbench.cli.dataset import _behaviour_params

    params = _behaviour_params(["memexrl", "heuristic"], "trial_design")
    assert json.loads(json.dumps(params)) == params
    assert params["memexrl"]["alphas"] == [0.3, 0.2, 0.1]


def test_clinbench_agents_lists_the_offline_agents(invoke):
    result = invoke("agents", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    for name in ("bc", "rwbc", "learned_reward", "iql"):
        assert rows[name]["offline"] and not rows[name]["learning"] and rows[name]["available"]
    assert not rows["heuristic"]["offline"]
    table = invoke("agents").output
    assert "offline" in table


def test_an_offline_sweep_without_minari_exits_2_with_the_install_command(invoke, monkeypatch):
    from clinbench import offline

    monkeypatch.setattr(offline, "available", lambda: False)
    result = invoke("sweep", "--agents", "bc", "--dataset", "any-v0", "--results", "/tmp/x")
    assert result.exit_code == 2 and ".[offline]" in result.output


def test_an_offline_cell_runs_only_code_its_cell_identity_covers(store):
    """The offline harness runs in every dataset cell, a plugin's too, whose own
    identity is its file: the cell code of a dataset cell covers it
    (``sweep.cells.cell_code``), and a cell without a dataset does not carry it."""
    import sys
    from pathlib import Path

    import clinbench
    from clinbench.agents.registry import agent_entry, agent_source_files
    from clinbench.offline.protocol import run_offline_cell
    from clinbench.protocol import Protocol
    from clinbench.sweep.cells import _OFFLINE_CODE, cell_code, cell_code_files

    root, spec = store
    package = Path(clinbench.__file__).resolve().parent
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    tiny = Protocol(eval_episodes=1, oc_episodes=1, null_episodes=1)
    sys.setprofile(profile)
    try:
        run_offline_cell("trial_design/effective_drug", "bc", 3, tiny, {}, {}, "bc",
                         spec.name, "worlds", root)
    finally:
        sys.setprofile(None)
    executed = {Path(f).resolve().relative_to(package).as_posix() for f in seen
                if Path(f).resolve().is_relative_to(package)}
    offline = {f.relative_to(package).as_posix()
               for part in _OFFLINE_CODE for f in package.glob(part)}
    agents = {p.relative_to(package).as_posix()
              for p in agent_source_files([agent_entry("bc").factory])}
    covered = set(cell_code_files("trial_design")) | offline | agents | {"agents/registry.py"}
    assert executed - covered == set()
    assert {"offline/protocol.py", "offline/splits.py"} <= executed & offline
    assert cell_code("trial_design", offline=True).startswith(cell_code("trial_design") + " ")
    assert cell_code("trial_design", offline=True) != cell_code("trial_design")
