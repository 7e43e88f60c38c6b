"""The four learning baselines (and their parent grpo): they learn, they collapse to
their parent where the spec says so, they respect masks and they are deterministic."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from clinbench.agents.context import AgentContext
from clinbench.agents.core.rollout import collect_group
from clinbench.agents.registry import agent_entries, agent_entry, make_agent
from clinbench.env import make
from clinbench.protocol import Protocol, run_cell, training_env_factory

LEARNERS = ("hcapo", "mira", "klong", "memexrl")
CONF = Path(__file__).resolve().parents[1] / "conf" / "agent"
#: 64 recruitment episodes of 180 daily steps
SMALL = Protocol(train_steps=64 * 180, eval_episodes=4, curve_points=3)
DAYS = 180


def _defaults(cls) -> dict:
    out = {}
    for klass in reversed(cls.__mro__):
        if "__init__" in klass.__dict__:
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.default is not inspect.Parameter.empty:
                    out[p.name] = p.default
    return out


@pytest.mark.parametrize(
    "entry", [e for e in agent_entries() if e.source.startswith("clinbench")], ids=lambda e: e.name
)
def test_config_file_holds_exactly_the_agent_defaults(entry):
    """conf/agent/<name>.yaml documents every hyper-parameter with its real default."""
    from clinbench.agents.registry import FamilyVariants

    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"{entry.name}.yaml"))
    classes = (
        list(dict.fromkeys(entry.factory.variants.values()))
        if issubclass(entry.factory, FamilyVariants)
        else [entry.factory]
    )
    defaults = {}
    for cls in classes:  # one class per family: each documents its own
        defaults.update(_defaults(cls))
    defaults = {k: list(v) if isinstance(v, tuple) else v for k, v in defaults.items()}
    # a value the sweep fills in (an interpolation such as ${results}/...) is not a default
    cfg = {k: defaults.get(k) if str(v).startswith("${") else v for k, v in cfg.items()}
    assert cfg == defaults


@pytest.mark.slow
@pytest.mark.parametrize("name", LEARNERS)
def test_training_beats_the_untrained_policy(name):
    """Mean greedy evaluation score after training exceeds the untrained policy's (klong,
    which starts by imitating the heuristic, on half the budget: 0.76 above it either way)."""
    episodes = 80 if name == "klong" else 160
    before, after = [], []
    for seed in (1, 2, 3):
        untrained = run_cell(
            "recruitment/easy_bench", name, seed, Protocol(train_steps=0, eval_episodes=5)
        )
        # a 2-point, 1-episode learning curve, not the default 21 x 5 validation episodes:
        # the curve scores a deep copy of the agent on validation worlds and leaves its
        # training untouched (the same evaluation scores either way)
        short_curve = Protocol(
            train_steps=episodes * DAYS, eval_episodes=5, curve_points=2, curve_episodes=1
        )
        trained = run_cell("recruitment/easy_bench", name, seed, short_curve)
        before.append(untrained.mean_score)
        after.append(trained.mean_score)
    assert np.mean(after) > np.mean(before) + 0.03


def test_a_minibatch_schedule_never_taken_changes_nothing():
    """``minibatch`` above every update's rows: full-batch updates only and nothing
    spawned from the training generator, so the weights of ``minibatch: 0`` bit for bit;
    ``minibatch: 64`` on the same run takes the schedule and ends elsewhere."""
    env = make("recruitment/easy_bench")

    def trained(**config):
        agent = make_agent("grpo", AgentContext.of(env), **config)
        agent.train(
            training_env_factory("recruitment/easy_bench"), 48 * DAYS, np.random.default_rng(11)
        )
        return agent.policy.params

    full, never, taken = trained(minibatch=0), trained(minibatch=10**9), trained(minibatch=64)
    for key in full:
        np.testing.assert_array_equal(never[key], full[key])
    assert any(not np.array_equal(taken[key], full[key]) for key in full)


def test_hcapo_with_omega_zero_is_exactly_grpo():
    env = make("recruitment/easy_bench")
    hc = make_agent("hcapo", AgentContext.of(env), omega=0.0)
    gr = make_agent("grpo", AgentContext.of(env), groups=hc.groups, minibatch=hc.minibatch)
    rng_h, rng_g = np.random.default_rng(11), np.random.default_rng(11)
    hc.train(training_env_factory("recruitment/easy_bench"), 48 * DAYS, rng_h)
    gr.train(training_env_factory("recruitment/easy_bench"), 48 * DAYS, rng_g)
    for key in gr.policy.params:
        np.testing.assert_array_equal(hc.policy.params[key], gr.policy.params[key])
    full = make_agent("hcapo", AgentContext.of(env))
    full.train(training_env_factory("recruitment/easy_bench"), 48 * DAYS, np.random.default_rng(11))
    assert any(
        not np.array_equal(full.policy.params[k], gr.policy.params[k]) for k in gr.policy.params
    )


@pytest.mark.parametrize(
    "name, config",
    [
        ("mira", {"lam": 0.0}),
        ("mira", {"actor": "ppo"}),
        ("mira", {"actor": "ppo", "advantage": "gae", "phases": 12}),
        ("klong", {"rl": False}),
        ("klong", {"stages": [180]}),
        ("memexrl", {"mask_memory": True}),
        ("hcapo", {"omega": 0.0}),
    ],
)
def test_ablations_run_and_report(name, config):
    res = run_cell("recruitment/medium_bench", name, 2, SMALL, config)
    assert len(res.episodes) == SMALL.eval_episodes
    assert all(0.0 <= e.score <= 1.0 for e in res.episodes)
    assert [p.env_steps for p in res.curve] == [0, 32 * DAYS, 64 * DAYS]
    if config != {"rl": False}:  # imitation only stops after its share of the budget
        assert res.training["env_steps"] == SMALL.train_steps


def _mira_batch(task: str = "recruitment/easy_bench") -> list:
    """Six episodes of two training worlds under mira's untrained policy."""
    from clinbench.agents.mira import MIRAAgent

    sampler = MIRAAgent(AgentContext.of(make(task))).sampler
    return [
        t
        for seed in (5, 6)
        for t in collect_group(
            training_env_factory(task)(),
            sampler(np.random.default_rng(seed)),
            2**31 + seed,
            3,
        )
    ]


def _mira_ready(cls, trajs: list, **config):
    """A mira agent (``cls``) with ``trajs`` as its buffer and its critics fitted."""
    agent = cls(AgentContext.of(make("recruitment/easy_bench")), **config)
    agent.fit_standardiser(trajs)
    agent.buffer.append(trajs)
    if agent.advantage == "milestones":
        agent.fit_critics(float(np.median([t.score for t in trajs])))
    return agent


def test_the_mira_standardised_ablation_agent_standardises_mira_advantages(monkeypatch):
    """experiments/ablation_agents/mira_standardised/: mira's own advantages, scaled to
    mean 0 and standard deviation 1 over the update's steps (the GAE switch's left as
    they are); its PPO actor is handed exactly those; a cell of it runs through the
    sweep's plugin path."""
    from shared_helpers import load_script

    from clinbench.agents import mira
    from clinbench.agents.mira import MIRAAgent

    root = Path(__file__).resolve().parents[1]
    path = root / "experiments" / "ablation_agents" / "mira_standardised" / "mira_standardised.py"
    module = load_script(path)
    trajs = _mira_batch()
    for advantage in ("milestones", "gae"):
        plain = _mira_ready(MIRAAgent, trajs, advantage=advantage)
        scaled = _mira_ready(module.MIRAStandardised, trajs, advantage=advantage)
        want = plain.step_advantages(trajs)
        got = scaled.step_advantages(trajs)
        if advantage == "gae":
            np.testing.assert_array_equal(got, want)
        else:
            assert np.ptp(want) > 0 and not np.allclose(got, want)
            np.testing.assert_allclose(got, (want - want.mean()) / want.std(), atol=1e-7)
            assert abs(got.mean()) < 1e-12 and got.std() == pytest.approx(1.0)
    # the PPO actor: minibatch_update is handed the standardised advantages of the
    # newest phase's steps
    handed = {}
    monkeypatch.setattr(mira, "minibatch_update", lambda *a, **k: handed.update(adv=a[6]))
    agent = _mira_ready(module.MIRAStandardised, trajs, actor="ppo")
    agent._rng, agent._ppo = np.random.default_rng(0), None
    agent.update_actor_ppo()
    raw = _mira_ready(MIRAAgent, trajs, actor="ppo").step_advantages(trajs)
    np.testing.assert_allclose(handed["adv"], (raw - raw.mean()) / raw.std(), atol=1e-7)
    monkeypatch.undo()
    res = run_cell("recruitment/easy_bench", f"{path}:MIRAStandardised", 2, SMALL, {"actor": "ppo"})
    assert len(res.episodes) == SMALL.eval_episodes
    assert res.training["env_steps"] == SMALL.train_steps


def test_the_mira_advantage_check_reads_each_phase_before_its_update(monkeypatch):
    """experiments/mira_advantages.py: a phase's row is computed from the episodes in
    the buffer before mira's actor update runs, each episode's advantages paired with
    its own score; the watched run trains exactly as mira does from the same stream."""
    from shared_helpers import load_script

    from clinbench.agents.mira import MIRAAgent, gae_advantages
    from clinbench.evaluation_key import PUBLIC
    from clinbench.protocol import training_stream

    root = Path(__file__).resolve().parents[1]
    module = load_script(root / "experiments" / "mira_advantages.py")
    trajs = _mira_batch()
    watched = _mira_ready(module.Watched, trajs)
    rows_at_update = []
    monkeypatch.setattr(
        MIRAAgent, "update_actor", lambda self, opt: rows_at_update.append(len(self.rows))
    )
    watched.update_actor(None)
    assert rows_at_update == [1]
    score = np.array([t.score for t in trajs])
    adv = [watched.advantages(t) for t in trajs]
    xs = [watched.std(t.x) for t in trajs]
    gae = gae_advantages(xs, [t.rewards for t in trajs], 0.99, 0.95, 1.0)
    row = watched.rows[0]
    assert row[0] == pytest.approx(score.mean())
    assert row[1] == pytest.approx(np.corrcoef([a.mean() for a in adv], score)[0, 1])
    assert row[2] == pytest.approx(np.corrcoef([g.mean() for g in gae], score)[0, 1])
    assert row[5] == pytest.approx(np.concatenate(adv).mean())
    monkeypatch.undo()

    steps = 150 * DAYS  # six phases of one batch of 25 episodes each
    watched = module.watched_run("easy_bench", 3, steps)
    name = "recruitment/easy_bench"
    plain = MIRAAgent(AgentContext.of(make(name)))
    plain.train(
        training_env_factory(name, None, steps),
        steps,
        training_stream(PUBLIC, 3, "mira", name),
        None,
        2,
    )
    assert len(watched.rows) == plain.phases
    assert all(-1.0 <= c <= 1.0 for row in watched.rows for c in row[1:5])
    for k, v in plain.policy.params.items():
        np.testing.assert_array_equal(watched.policy.params[k], v)


def test_mira_discounted_sums_are_scipys_filter():
    from scipy.signal import lfilter

    from clinbench.agents.mira import discounted

    x = np.random.default_rng(3).normal(size=40)
    np.testing.assert_allclose(discounted(x, 0.97), lfilter([1], [1, -0.97], x[::-1])[::-1])


def test_mira_gae_ablation_is_gae_on_a_ridge_value():
    """``advantage: gae``: with lambda 1 GAE is the return minus the value; the
    advantages are standardised over every step of the update's episodes."""
    from clinbench.agents import mira as mira_module
    from clinbench.agents.core.regression import Ridge
    from clinbench.agents.core.rollout import collect

    env = make("recruitment/easy_bench")
    agent = make_agent("mira", AgentContext.of(env), advantage="gae")
    trajs = collect(
        training_env_factory("recruitment/easy_bench")(),
        agent.sampler(np.random.default_rng(5)),
        [2**31 + 9, 2**31 + 10],
    )
    agent.fit_standardiser(trajs)
    got = agent.gae_advantages(trajs)
    xs = [agent.std(t.x) for t in trajs]
    rets = [mira_module.discounted(t.rewards, agent.gamma) for t in trajs]
    value = Ridge(alpha=agent.potential.alpha).fit(np.concatenate(xs), np.concatenate(rets))
    flat = np.concatenate(got)
    assert abs(flat.mean()) < 1e-9 and flat.std() == pytest.approx(1.0, abs=1e-4)
    at_one = np.concatenate(
        mira_module.gae_advantages(
            xs, [t.rewards for t in trajs], agent.gamma, 1.0, agent.potential.alpha
        )
    )
    raw = np.concatenate([r - value.predict(x) for r, x in zip(rets, xs, strict=True)])
    np.testing.assert_allclose(at_one, (raw - raw.mean()) / (raw.std() + 1e-8), atol=1e-9)


def test_mira_refuses_unknown_ablation_switches():
    context = AgentContext.of(make("recruitment/easy_bench"))
    for bad in ({"actor": "sac"}, {"advantage": "td"}):
        with pytest.raises(ValueError, match="actor must be one of"):
            make_agent("mira", context, **bad)


def test_mira_ppo_ablation_is_reproducible_and_trains_otherwise():
    """``actor: ppo``: two runs of a cell give the same numbers, and not the default's."""
    a = run_cell("recruitment/easy_bench", "mira", 4, SMALL, {"actor": "ppo"})
    b = run_cell("recruitment/easy_bench", "mira", 4, SMALL, {"actor": "ppo"})
    c = run_cell("recruitment/easy_bench", "mira", 4, SMALL)
    assert [e.score for e in a.episodes] == [e.score for e in b.episodes]
    assert [p.mean_score for p in a.curve] != [p.mean_score for p in c.curve] or [
        e.score for e in a.episodes
    ] != [e.score for e in c.episodes]


def test_mira_without_the_potential_critic_learns_differently():
    a = run_cell("recruitment/easy_bench", "mira", 4, SMALL)
    b = run_cell("recruitment/easy_bench", "mira", 4, SMALL, {"lam": 0.0})
    assert [p.mean_score for p in a.curve] != [
        p.mean_score for p in b.curve
    ] or a.mean_score != b.mean_score


def test_memexrl_with_memory_masked_never_uses_memory():
    env = make("recruitment/hard_bench")
    agent = make_agent("memexrl", AgentContext.of(env), mask_memory=True)
    group = collect_group(env, agent.sampler(np.random.default_rng(0)), 5, 4)
    used = {agent.macros.names[a] for t in group for a in t.actions}
    assert not used & {"summarize", "retrieve"}
    free = make_agent("memexrl", AgentContext.of(env))
    group = collect_group(env, free.sampler(np.random.default_rng(0)), 5, 4)
    assert {free.macros.names[a] for t in group for a in t.actions} & {"summarize", "retrieve"}


def test_memexrl_training_reward_penalises_memory_misuse():
    env = make("recruitment/easy_bench")
    agent = make_agent("memexrl", AgentContext.of(env), slot_budget=2)
    traj = collect_group(env, agent.sampler(np.random.default_rng(1)), 9, 1)[0]
    p_ctx, p_red, p_fmt = agent.penalties(traj)
    writes = int(np.sum(traj.actions == agent.macros.names.index("summarize")))
    assert p_ctx == max(0, writes - 2) / 2
    assert agent.training_reward(traj) <= traj.score
    assert agent.training_reward(traj) == pytest.approx(
        traj.score - 0.3 * p_ctx - 0.2 * p_red - 0.1 * p_fmt
    )


@pytest.mark.parametrize("name", LEARNERS + ("grpo",))
def test_masked_actions_are_never_chosen_in_training_or_evaluation(name):
    env = make("recruitment/hard_bench")
    agent = make_agent(name, AgentContext.of(env))
    agent.train(training_env_factory("recruitment/hard_bench"), 16 * DAYS, np.random.default_rng(3))
    group = collect_group(env, agent.sampler(np.random.default_rng(4)), 77, 3)
    for traj in group:
        assert traj.mask[np.arange(len(traj)), traj.actions].all()
        assert "stop" not in {agent.macros.names[a] for a in traj.actions}
    obs, _ = env.reset(seed=78)
    agent.reset(0)
    done = False
    while not done:
        action = agent.act(obs)
        k = agent.macros.index_of(action)
        assert agent.macros.mask(obs)[k]
        obs, _, done, _, _ = env.step(action)


@pytest.mark.parametrize("name", LEARNERS)
def test_two_runs_of_the_same_cell_are_identical(name):
    a = run_cell("recruitment/easy_bench", name, 5, SMALL)
    b = run_cell("recruitment/easy_bench", name, 5, SMALL)
    assert [e.score for e in a.episodes] == [e.score for e in b.episodes]
    assert a.curve == b.curve


def test_learning_agents_are_registered_with_configs():
    names = {e.name for e in agent_entries() if e.learning and e.source == "clinbench"}
    assert names == set(LEARNERS) | {"grpo"}
    for name in names:
        assert (CONF / f"{name}.yaml").exists()
        module = inspect.getmodule(agent_entry(name).factory)
        assert "arXiv" in module.__doc__


def test_mira_shaping_weight_defaults_to_its_familys():
    """mira's milestone shaping is the family's default unless given (docs/agents.md)."""
    from clinbench.agents.mira import SHAPING

    for env_id, family in (
        ("recruitment/easy_bench", "recruitment"),
        ("trial_design/effective_drug", "trial_design"),
    ):
        context = AgentContext.of(make(env_id))
        assert make_agent("mira", context).lam == SHAPING[family]
        assert make_agent("mira", context, lam=0.5).lam == 0.5
        with pytest.raises(ValueError, match="lam"):
            make_agent("mira", context, lam="abc")
    assert SHAPING == {"recruitment": 1.0, "trial_design": 0.0}


@pytest.mark.parametrize(
    "name",
    [
        e.name
        for e in agent_entries()
        if e.factory is not None and getattr(e.factory, "experience", ())
    ],
)
def test_the_scored_copy_leaves_out_only_what_acting_never_reads(name, monkeypatch):
    """A curve point scores a copy without the agent's ``experience`` (its replay
    buffer): the copy has none, the agent keeps its own, and the cell's curve and
    evaluation are the same numbers as with a full deep copy."""
    import copy

    from clinbench import protocol
    from clinbench.agents.learner import scoring_copy

    env = make("recruitment/easy_bench")
    agent = make_agent(name, AgentContext.of(env))
    agent.train(training_env_factory("recruitment/easy_bench"), 60 * DAYS, np.random.default_rng(4))
    kept = {n: getattr(agent, n) for n in agent.experience}
    assert all(len(v) for v in kept.values())
    scored = scoring_copy(agent)
    assert all(getattr(scored, n) is None for n in agent.experience)
    assert all(getattr(agent, n) is v for n, v in kept.items())
    assert scored.policy is not agent.policy

    p = Protocol(train_steps=60 * DAYS, eval_episodes=3, curve_points=3, curve_episodes=2)
    lean = run_cell("recruitment/easy_bench", name, 5, p)
    monkeypatch.setattr(protocol, "scoring_copy", copy.deepcopy)
    full = run_cell("recruitment/easy_bench", name, 5, p)
    assert [c.mean_score for c in lean.curve] == [c.mean_score for c in full.curve]
    assert [e.score for e in lean.episodes] == [e.score for e in full.episodes]


@pytest.mark.parametrize("agent", ["mira", "klong"])
def test_marks_passed_by_one_update_score_the_policy_once(agent):
    """mira's phases pass several curve marks each, klong's demonstrations (its policy
    untrained while the teacher plays) several: every policy is scored once, and the
    marks it passed carry that one score (a second call would play the same copy on the
    same worlds and acting seeds, and would offer checkpoint selection the untrained
    policy as a trained one)."""
    env_id, steps = "recruitment/easy_bench", 24 * DAYS
    config = {"batch_episodes": 4} if agent == "mira" else {}
    agent = make_agent(agent, AgentContext.of(make(env_id)), **config)
    policies: list[bytes] = []

    def evaluate(a) -> float:
        policies.append(b"".join(v.tobytes() for v in a.policy.params.values()))
        return float(len(policies))

    curve = agent.train(
        training_env_factory(env_id, steps=steps),
        steps,
        np.random.default_rng(3),
        evaluate=evaluate,
        curve_points=21,
    )
    assert len(curve) == 21 and [p.env_steps for p in curve] == sorted(p.env_steps for p in curve)
    assert len(set(policies)) == len(policies) < len(curve)
    # the points read the scores in order, each score at least once
    assert sorted({p.mean_score for p in curve}) == [float(i + 1) for i in range(len(policies))]
    assert [p.mean_score for p in curve] == sorted(p.mean_score for p in curve)


def test_an_unchanged_call_scores_again_after_updates_no_point_scored():
    """``progress(unchanged=True)`` reuses the last point's score only when no update
    came since that point was scored: updates between marks (scored at no point) and
    then an iteration without one (the budget cut its episodes) must score the policy
    those updates left, not repeat the older score."""
    from clinbench.agents.learner import LearningAgent

    class Updater(LearningAgent):
        version = 0

        def learn(self, env, rng):
            obs, _ = env.reset(seed=self.world_seed(rng))
            for steps, update, unchanged in (
                (10, True, False),
                (50, False, True),
                (40, False, True),
            ):
                for _ in range(steps):
                    k = int(np.flatnonzero(self.macros.mask(obs))[0])
                    obs, *_ = env.step(self.macros.to_action(k, obs))
                self.version += update
                self.progress(self.version, unchanged=unchanged)

    env_id = "recruitment/easy_bench"
    agent = Updater(AgentContext.of(make(env_id)))
    calls: list[int] = []

    def evaluate(a) -> float:
        calls.append(a.version)
        return float(a.version)

    curve = agent.train(
        training_env_factory(env_id, steps=100),
        100,
        np.random.default_rng(0),
        evaluate=evaluate,
        curve_points=3,
    )
    assert [(p.env_steps, p.mean_score) for p in curve] == [(0, 0.0), (50, 1.0), (100, 1.0)]
    assert calls == [0, 1]  # the mark at 100 takes the score of the unchanged policy


def test_klong_full_batch_cloning_is_every_row_at_every_step():
    """imitation_batch 0 and a batch larger than the rows train the same parameters (the
    former full-batch cloning); a smaller batch trains others."""
    env_id, steps = "recruitment/easy_bench", 16 * DAYS
    context = AgentContext.of(make(env_id))

    def trained(batch: int) -> dict:
        agent = make_agent("klong", context, imitation_steps=20, imitation_batch=batch, rl=False)
        agent.train(training_env_factory(env_id, steps=steps), steps, np.random.default_rng(2))
        return agent.policy.params

    full, huge, small = trained(0), trained(10**9), trained(256)
    assert all(np.array_equal(full[k], huge[k]) for k in full)
    assert not all(np.array_equal(full[k], small[k]) for k in full)


def test_the_grpo_gae_ablation_agent_gives_each_step_its_gae_advantage():
    """experiments/ablation_agents/grpo_gae/: grpo's update on GAE advantages, and a
    cell of it runs through the sweep's plugin path."""
    from shared_helpers import load_script

    from clinbench.agents.mira import gae_advantages

    root = Path(__file__).resolve().parents[1]
    path = root / "experiments" / "ablation_agents" / "grpo_gae" / "grpo_gae.py"
    module = load_script(path)
    env = make("recruitment/easy_bench")
    agent = module.GRPOGAE(AgentContext.of(env), minibatch=64)
    groups = [
        collect_group(
            training_env_factory("recruitment/easy_bench")(),
            agent.sampler(np.random.default_rng(3)),
            2**31 + 5,
            4,
        )
    ]
    agent.fit_standardiser(groups[0])
    seen = {}
    agent.update = lambda trajs, adv, *rest: seen.update(trajs=trajs, adv=adv)
    agent.update_groups(groups, None, None)
    want = gae_advantages(
        [agent.std(t.x) for t in groups[0]], [t.rewards for t in groups[0]], 0.99, 0.95, 1.0
    )
    assert seen["trajs"] == groups[0]
    for got, expected in zip(seen["adv"], want, strict=True):
        np.testing.assert_array_equal(got, expected)
    spec = f"{path}:GRPOGAE"
    res = run_cell("recruitment/easy_bench", spec, 2, SMALL, {"minibatch": 64})
    assert len(res.episodes) == SMALL.eval_episodes
    assert res.training["env_steps"] == SMALL.train_steps
