"""The dose-finding environment's promises (spec trial_design_env.md sections 4, 5, 8).

Type-I error of the shipped heuristic on null worlds, zero-score policies, return ==
score, invalid actions change nothing, determinism across processes, the claim rule,
the largest-remainder split, and the heuristic far above random on every task.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.registry import make_agent
from clinbench.env import make
from clinbench.env.trial_design import TASKS, TrialAction
from clinbench.env.trial_design.simulator import split_cohort
from clinbench.episode import play_episode

TASK_IDS = [f"trial_design/{t}" for t in TASKS]


def play(env, policy, seed):
    """Play ``policy(obs) -> action`` on world ``seed``; return (return, last info)."""
    obs, _ = env.reset(seed=seed)
    total, done, info = 0.0, False, {}
    while not done:
        obs, r, done, _, info = env.step(policy(obs))
        total += r
    return total, info


# ---------------------------------------------------------------------- type-I error
@pytest.mark.parametrize("task", list(TASKS))
def test_heuristic_familywise_type_i_error_on_4000_null_worlds(task):
    """P(any success claim | null drug) <= 0.025 + 2 Monte Carlo standard errors."""
    env = make(f"trial_design/{task}", scenario_mix=(0.0, 1.0, 0.0, 0.0))
    agent = make_agent("heuristic", AgentContext.of(env))
    n = 4000
    claims = sum(play_episode(env, agent, s, agent_seed=s).metrics["claimed"] for s in range(n))
    rate = claims / n
    se = math.sqrt(0.025 * 0.975 / n)
    assert rate <= 0.025 + 2 * se, f"{task}: {claims} claims in {n} null worlds"


def test_the_boundary_holds_alpha_for_a_greedy_claimer_on_null_worlds():
    """An agent that claims the moment any arm crosses, cohort after small cohort,
    still keeps the familywise error at alpha: the rule is the environment's."""
    env = make("trial_design/effective_drug", scenario_mix=(0.0, 1.0, 0.0, 0.0))
    macros = env.macro_space
    small, claim = macros.index["cohort_small"], macros.index["claim_best"]

    def greedy(obs):
        if any(obs.crossed):
            return macros.to_action(claim, obs)
        if macros.mask(obs)[small]:
            return macros.to_action(small, obs)
        return TrialAction(stop_for_futility=True)

    n = 4000
    claims = sum(play(env, greedy, s)[1]["claimed"] for s in range(n))
    assert claims / n <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / n)


# ---------------------------------------------------------------------- zero scores
def _nothing(obs):
    return TrialAction(n_next_cohort=0)


def _stop_at_once(obs):
    return TrialAction(stop_for_futility=True)


def _always_err(obs):
    return TrialAction(n_next_cohort=101)


def _claim_without_crossing(obs):
    return TrialAction(stop_for_success=True, success_arm="high")


def _drop_all_then_futility(obs):
    for arm in ("low", "mid", "high"):
        if obs.active[("control", "low", "mid", "high").index(arm)] and sum(obs.active[1:]) > 0:
            return TrialAction(drop_arm=arm)
    return TrialAction(stop_for_futility=True)


ZERO = [_nothing, _stop_at_once, _always_err, _claim_without_crossing, _drop_all_then_futility]


@pytest.mark.parametrize("policy", ZERO, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("env_id", TASK_IDS)
def test_policies_without_a_justified_decision_score_exactly_zero(env_id, policy):
    env = make(env_id)
    for seed in range(40):
        ret, info = play(env, policy, seed)
        assert info["score"] == 0.0 and ret == 0.0, (policy.__name__, seed, info)


def test_a_false_claim_scores_zero_and_a_true_one_scores():
    env = make("trial_design/effective_drug")
    macros = env.macro_space
    agent = make_agent("heuristic", AgentContext.of(env))
    seen = {"false": 0, "true": 0}
    for seed in range(300):
        ep = play_episode(env, agent, seed, agent_seed=seed)
        if ep.metrics["false_claim"]:
            seen["false"] += 1
            assert ep.score == 0.0
        if ep.metrics["correct_claim"]:
            seen["true"] += 1
            assert 0.0 < ep.score <= 1.0
    assert seen["true"] > 50 and macros.n == 10


# ---------------------------------------------------------------------- return == score
@pytest.mark.parametrize("env_id", TASK_IDS)
def test_return_equals_score_for_every_agent(env_id):
    env = make(env_id)
    for name in ("heuristic", "random", "fixed_design"):
        agent = make_agent(name, AgentContext.of(env))
        for seed in range(60):
            ep = play_episode(env, agent, seed, agent_seed=seed + 1)
            assert ep.ret == pytest.approx(ep.score, abs=1e-12)
            assert 0.0 <= ep.score <= 1.0


# ---------------------------------------------------------------------- invalid actions
BAD = {
    "cohort above 100": TrialAction(n_next_cohort=101),
    "negative cohort": TrialAction(n_next_cohort=-1),
    "cohort not an int": TrialAction(n_next_cohort=2.5),
    "bool cohort": TrialAction(n_next_cohort=True),
    "allocation not summing to 1": TrialAction(
        n_next_cohort=10,
        allocation_control=0.5,
        allocation_low=0.5,
        allocation_mid=0.5,
        allocation_high=0.0,
    ),
    "negative allocation": TrialAction(
        n_next_cohort=10,
        allocation_control=1.5,
        allocation_low=-0.5,
        allocation_mid=0.0,
        allocation_high=0.0,
    ),
    "NaN allocation": TrialAction(
        n_next_cohort=10,
        allocation_control=float("nan"),
        allocation_low=0.5,
        allocation_mid=0.5,
        allocation_high=0.0,
    ),
    "partial allocation": TrialAction(n_next_cohort=10, allocation_control=1.0),
    "drop control": TrialAction(drop_arm="control"),
    "drop unknown arm": TrialAction(drop_arm="placebo"),
    "strictness above 1": TrialAction(n_next_cohort=10, inclusion_criteria_strictness=1.5),
    "strictness NaN": TrialAction(n_next_cohort=10, inclusion_criteria_strictness=math.nan),
    "claim without crossing": TrialAction(stop_for_success=True, success_arm="mid"),
    "claim control": TrialAction(stop_for_success=True, success_arm="control"),
    "claim no arm": TrialAction(stop_for_success=True),
    "two decisions": TrialAction(stop_for_success=True, success_arm="mid", stop_for_futility=True),
    "decision not a bool": TrialAction(stop_for_futility="yes"),
    "over budget": TrialAction(n_next_cohort=100, inclusion_criteria_strictness=1.0),
}


def _state(env):
    skip = {"_look", "_last_error", "_obs", "_score"}
    out = {}
    for k, v in vars(env).items():
        if k in skip or k.startswith("_obs0"):
            continue
        if isinstance(v, np.ndarray):
            out[k] = v.tobytes()
        elif k == "_bounds":
            out[k] = [b.fractions for b in v]
        elif isinstance(v, (int, float, str, bool, type(None), tuple)):
            out[k] = v
    return out


@pytest.mark.parametrize("name", list(BAD))
def test_every_invalid_action_changes_nothing_but_uses_the_look(name):
    env = make("trial_design/effective_drug", budget=120.0)
    obs, _ = env.reset(seed=5)
    env.step(TrialAction(n_next_cohort=40))
    before, look = _state(env), env._look
    obs, reward, done, _, info = env.step(BAD[name])
    assert info["error"] is not None, name
    assert reward == 0.0 and not done
    assert env._look == look + 1
    assert _state(env) == before
    assert obs.last_error == info["error"]


def test_allocation_to_a_dropped_arm_is_refused():
    env = make("trial_design/effective_drug")
    env.reset(seed=1)
    env.step(TrialAction(n_next_cohort=20, drop_arm="high"))
    _, _, _, _, info = env.step(
        TrialAction(
            n_next_cohort=20,
            allocation_control=0.5,
            allocation_low=0.0,
            allocation_mid=0.0,
            allocation_high=0.5,
        )
    )
    assert info["error"] == "allocation_to_dropped_arm"
    _, _, _, _, info = env.step(TrialAction(drop_arm="high"))
    assert info["error"] == "cannot_drop"


def test_an_unknown_action_key_raises_value_error():
    env = make("trial_design/effective_drug")
    env.reset(seed=1)
    with pytest.raises(ValueError, match="unknown action field"):
        env.step({"n_next_cohort": 5, "cohort": 5})
    with pytest.raises(TypeError):
        env.step(5)


# ---------------------------------------------------------------------- the model
def test_largest_remainder_split():
    assert split_cohort(10, [0.25, 0.25, 0.25, 0.25]) == [3, 3, 2, 2]
    assert split_cohort(7, [0.5, 0.0, 0.5, 0.0]) == [4, 0, 3, 0]
    assert split_cohort(0, [1.0, 0, 0, 0]) == [0, 0, 0, 0]
    for n in range(0, 101, 7):
        w = [0.1, 0.2, 0.3, 0.4]
        m = split_cohort(n, w)
        assert sum(m) == n and np.all(np.abs(np.array(m) - n * np.array(w)) < 1)


def test_zero_allocation_means_zero_patients():
    env = make("trial_design/effective_drug")
    env.reset(seed=2)
    obs, *_ = env.step(
        TrialAction(
            n_next_cohort=30,
            allocation_control=0.5,
            allocation_low=0.0,
            allocation_mid=0.5,
            allocation_high=0.0,
        )
    )
    assert obs.n == (15, 0, 15, 0)


def test_null_worlds_have_no_effect_and_the_mix_is_the_tasks():
    env = make("trial_design/effective_drug")
    scenarios = []
    for s in range(2000):
        env.reset(seed=s)
        w = env.world
        scenarios.append(w.scenario)
        if w.scenario == "null":
            assert np.all(w.effect == 0.0) and not w.good_arms.any()
    share = scenarios.count("null") / len(scenarios)
    assert abs(share - TASKS["effective_drug"].scenario_mix[1]) < 0.04


def test_strictness_scales_the_effect_and_the_cost():
    env = make("trial_design/effective_drug")
    env.reset(seed=3)
    w = env.world
    loose, strict = w.response_rate(0.0), w.response_rate(1.0)
    assert loose[0] == strict[0]  # control does not respond to the drug
    eff_loose, eff_strict = loose[1:] - loose[0], strict[1:] - strict[0]
    assert np.allclose(eff_strict, 3.0 * eff_loose)  # (0.5 + 1) / (0.5 + 0)
    obs0, _ = env.reset(seed=3)
    obs1, *_ = env.step(TrialAction(n_next_cohort=20, inclusion_criteria_strictness=1.0))
    p = env.params
    assert obs0.budget_remaining - obs1.budget_remaining == pytest.approx(
        20 * (p.cost_base + p.cost_strictness) + p.look_cost
    )


def test_a_claim_is_accepted_exactly_when_its_arm_crosses_at_this_look():
    env = make("trial_design/effective_drug", scenario_mix=(1.0, 0.0, 0.0, 0.0))
    checked = 0
    for seed in range(60):
        obs, _ = env.reset(seed=seed)
        while not obs.crossing_arms and not obs.final_analysis:
            obs, _, done, _, _ = env.step(TrialAction(n_next_cohort=48))
            if done:
                break
        if not obs.crossing_arms or env._done:
            continue
        arm = obs.crossing_arms[0]
        j = ("low", "mid", "high").index(arm)
        assert obs.z[j] >= obs.boundary[j]
        for other in ("low", "mid", "high"):
            if other not in obs.crossing_arms:
                probe = make("trial_design/effective_drug", scenario_mix=(1.0, 0.0, 0.0, 0.0))
                o, _ = probe.reset(seed=seed)
                while o.look < obs.look:
                    o, *_ = probe.step(TrialAction(n_next_cohort=48))
                _, _, done, _, info = probe.step(
                    TrialAction(stop_for_success=True, success_arm=other)
                )
                assert info["error"] == "boundary_not_crossed"
                assert done == o.final_analysis  # at the last analysis an error ends it
        _, _, done, _, info = env.step(TrialAction(stop_for_success=True, success_arm=arm))
        assert done and info["error"] is None and info["claimed"] == 1.0
        checked += 1
    assert checked > 10


# ---------------------------------------------------------------------- agents
@pytest.mark.parametrize("task", list(TASKS))
def test_heuristic_beats_random_by_more_than_three_standard_errors(task):
    env = make(f"trial_design/{task}")
    scores = {}
    for name in ("heuristic", "random"):
        agent = make_agent(name, AgentContext.of(env))
        scores[name] = np.array(
            [play_episode(env, agent, s, agent_seed=s + 7).score for s in range(400)]
        )
    diff = scores["heuristic"] - scores["random"]  # paired: the same worlds
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > 3 * se, (task, diff.mean(), se)


# ---------------------------------------------------------------------- determinism
def _digest(env_id: str, seeds: range) -> str:
    env = make(env_id)
    agent = make_agent("random", AgentContext.of(env))
    h = hashlib.sha256()
    for s in seeds:
        ep = play_episode(env, agent, s, agent_seed=s, record=True)
        h.update(json.dumps([ep.score, ep.steps_log], sort_keys=True, default=str).encode())
    return h.hexdigest()


@pytest.mark.parametrize("env_id", TASK_IDS)
def test_same_seed_same_trajectory_in_another_process(env_id):
    here = _digest(env_id, range(20))
    code = (
        f"from tests.test_trial_design_env import _digest\nprint(_digest({env_id!r}, range(20)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(__import__("pathlib").Path(__file__).parents[1]),
    )
    assert out.stdout.strip() == here


def test_fixed_world_keeps_the_truth_and_varies_the_patients():
    env = make("trial_design/effective_drug")
    env.reset(seed=1, options={"fixed_world": True})
    a = env.world
    env.reset(seed=2, options={"fixed_world": True})
    b = env.world
    assert a.scenario == b.scenario and np.array_equal(a.response_nominal, b.response_nominal)
    assert not np.array_equal(a.u_response, b.u_response)


def test_the_simulator_sets_exactly_the_observation_fields():
    from clinbench.env.trial_design import Observation

    env = make("trial_design/efficacy_safety")
    names = {f.name for f in dataclasses.fields(Observation)}
    obs, _ = env.reset(seed=0)
    assert set(obs.__dict__) == names
    obs, *_ = env.step(TrialAction(n_next_cohort=40))
    assert set(obs.__dict__) - {"prob_better"} == names  # prob_better: cached on first read


def test_observations_are_immutable_json():
    env = make("trial_design/rare_disease")
    obs, _ = env.reset(seed=4)
    obs, *_ = env.step(TrialAction(n_next_cohort=30))
    with pytest.raises(dataclasses.FrozenInstanceError):
        obs.look = 7
    json.dumps(obs.to_dict(), allow_nan=False)


def test_clinbench_run_shows_a_trial_look_by_look(invoke):
    result = invoke("run", "--agent", "heuristic", "--task", "efficacy_safety", "--seed", "4")
    assert result.exit_code == 0, result.output
    assert "look" in result.stdout and "n_next_cohort=" in result.stdout
    assert "Ended by" in result.stdout and "patients on unsafe doses" in result.stdout
