"""The online portfolio task: the native API, invalid actions, determinism, the score."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from clinbench.env.checker import check_env
from clinbench.env.portfolio.actions import PortfolioAction
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.portfolio.trials import TrialDesign


def make(task: str = "develop") -> PortfolioEnv:
    return PortfolioEnv(TASKS[task])


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_passes_the_env_checker(task):
    check_env(make(task), seeds=(0, 1, 2), n_random_episodes=3)


def test_doing_nothing_scores_exactly_zero():
    env = make()
    env.reset(seed=5)
    done, total = False, 0.0
    while not done:
        _, reward, done, _, info = env.step(PortfolioAction())
        total += reward
    assert info["score"] == 0.0 and total == 0.0
    assert info["terminated_by"] == "horizon" and info["steps"] == TASKS["develop"].horizon


def test_stopping_at_once_scores_zero():
    env = make()
    env.reset(seed=5)
    _, reward, done, _, info = env.step({"trials": [], "stop": True})
    assert done and reward == 0.0 and info["score"] == 0.0 and info["terminated_by"] == "stop"


def _key(env: PortfolioEnv, j: int = 0) -> str:
    return env.world.indications[j].key


def bad_actions(env: PortfolioEnv) -> list[tuple[object, str]]:
    k = _key(env)
    five = [{"indication": _key(env, j), "phase": 1} for j in range(5)]
    return [
        ({"trials": [{"indication": "no_such_tumour_1L", "phase": 1}]}, "unknown_indication"),
        ({"trials": [{"indication": k, "phase": 10**400}]}, "bad_phase"),
        ({"trials": [{"indication": k, "phase": 4}]}, "bad_phase"),
        ({"trials": [{"indication": k, "phase": True}]}, "invalid_argument"),
        ({"trials": [{"indication": k, "phase": 1.0}]}, "invalid_argument"),
        ({"trials": [{"indication": k, "phase": 1, "combination": 1}]}, "invalid_argument"),
        ({"trials": [{"indication": 3, "phase": 1}]}, "invalid_argument"),
        ({"trials": "nsclc_1L"}, "invalid_argument"),
        ({"trials": [], "stop": 1}, "invalid_argument"),
        ({"trials": [], "colour": "red"}, "invalid_argument"),
        ("start everything", "invalid_argument"),
        (None, "invalid_argument"),
        ({"trials": [["nsclc_1L", 1]]}, "malformed_portfolio"),
        ({"trials": [{"indication": k}]}, "malformed_portfolio"),
        ({"trials": [{"indication": k, "phase": 1, "size": 40}]}, "malformed_portfolio"),
        ({"trials": [{"indication": k, "phase": 1}] * 2}, "malformed_portfolio"),
        ({"trials": five}, "oversize_portfolio"),
        ({"trials": [{"indication": k, "phase": 1}], "stop": True}, "conflicting_decisions"),
        ({"trials": [{"indication": k, "phase": 2}]}, "not_earned"),
        ({"trials": [{"indication": k, "phase": 1, "randomised": True}]}, "design_not_allowed"),
    ]


def test_invalid_actions_are_refused_with_no_state_change():
    env = PortfolioEnv(TASKS["develop"].with_overrides(max_invalid=1000))
    obs, _ = env.reset(seed=11)
    before = json.dumps(obs.to_dict(), sort_keys=True)
    cash, month = env.state.cash, env.state.month
    for action, code in bad_actions(env):
        obs2, reward, done, truncated, info = env.step(action)
        assert info["error"] == code, (action, info)
        assert info["message"]
        assert reward == 0.0 and not done and not truncated
        assert json.dumps(obs2.to_dict(), sort_keys=True) == before
        assert env.state.cash == cash and env.state.month == month and not env.state.trials


def test_a_refused_action_leaves_the_trajectory_unchanged():
    """Playing a bad action first gives the same episode as not playing it."""
    def run(with_bad: bool) -> list[str]:
        env = make()
        obs, _ = env.reset(seed=4)
        if with_bad:
            env.step({"trials": [{"indication": "nowhere_1L", "phase": 1}]})
        k = _key(env)
        out = []
        for action in ({"trials": [{"indication": k, "phase": 1}]}, {}, {}, {}, {}):
            obs, *_ = env.step(action)
            out.append(json.dumps(obs.to_dict(), sort_keys=True))
        return out

    assert run(True) == run(False)


def test_biomarker_design_is_refused_for_a_drug_without_a_biomarker():
    env = make()
    seed = next(s for s in range(100) if not (env.reset(seed=s)[0].biomarker))
    env.reset(seed=seed)
    _, _, _, _, info = env.step({"trials": [{"indication": _key(env), "phase": 1,
                                             "biomarker": True}]})
    assert info["error"] == "design_not_allowed"


def test_over_budget_is_refused():
    env = PortfolioEnv(TASKS["develop"].with_overrides(budget_by_size=(20.0, 20.0, 20.0)))
    env.reset(seed=2)
    designs = [TrialDesign(_key(env, j), 1, combination=True) for j in range(2)]
    _, _, _, _, info = env.step(PortfolioAction(trials=designs))
    assert info["error"] == "over_budget"


def test_numpy_scalars_are_read_as_their_python_values():
    a, b = make(), make()
    a.reset(seed=8)
    b.reset(seed=8)
    k = _key(a)
    numpy_entry = {"indication": k, "phase": np.int64(1), "combination": np.bool_(True)}
    oa = a.step({"trials": [numpy_entry]})
    ob = b.step({"trials": [{"indication": k, "phase": 1, "combination": True}]})
    assert oa[4]["error"] is None and oa[0].to_dict() == ob[0].to_dict()


def test_repeated_invalid_actions_end_the_episode():
    env = make()
    env.reset(seed=1)
    for _ in range(TASKS["develop"].max_invalid - 1):
        assert not env.step("nonsense")[2]
    _, _, done, _, info = env.step("nonsense")
    assert done and info["terminated_by"] == "invalid_actions" and info["score"] == 0.0
    with pytest.raises(RuntimeError):
        env.step({})


def _busy_action(env: PortfolioEnv, obs):
    """Advance everything that earned it, else open an indication, else wait."""
    macros = env.macro_space
    for name in ("advance_all", "expand_one", "wait"):
        if macros.mask(obs)[macros.index[name]]:
            return macros.to_action(macros.index[name], obs)
    raise AssertionError("wait is always valid")


def test_records_in_the_observation_are_never_from_the_future():
    env = make()
    obs, _ = env.reset(seed=3)
    done, hidden = False, 0
    while not done:
        assert all(r.month <= obs.month for r in obs.records)
        hidden += sum(r.month > obs.month for r in env.state.records)
        obs, _, done, _, _ = env.step(_busy_action(env, obs))
    assert hidden > 0  # the state did hold future-dated records the observation left out


def test_the_observation_hides_outcomes_until_the_readout():
    env = make()
    env.reset(seed=6)
    obs, *_ = env.step({"trials": [{"indication": _key(env), "phase": 1}]})
    (t,) = obs.trials
    assert not t.read_out and t.estimate is None and t.success is None
    assert env.state.trials[0].outcome.readout_month > obs.month


_PLAY = """
import json
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
env = PortfolioEnv(TASKS["develop"])
obs, _ = env.reset(seed=13)
out, done = [], False
while not done:
    m = env.macro_space.mask(obs)
    k = int(m.nonzero()[0][len(out) % int(m[:-1].sum())])
    obs, r, done, _, info = env.step(env.macro_space.to_action(k, obs))
    out.append(r)
print(json.dumps([out, info["score"], obs.to_dict()], sort_keys=True))
"""


def test_same_seed_same_episode_across_processes():
    runs = [subprocess.run([sys.executable, "-c", _PLAY], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] and json.loads(runs[0])[1] >= 0.0


def test_different_seeds_draw_different_programs():
    env = make()
    keys = {tuple(i.key for i in env.reset(seed=s)[0].indications) for s in range(10)}
    assert len(keys) == 10


def test_fixed_world_keeps_the_program_and_changes_the_luck():
    env = make()
    o1, _ = env.reset(seed=1, options={"fixed_world": True})
    p1 = env.world
    o2, _ = env.reset(seed=2, options={"fixed_world": True})
    assert o1.indication_keys == o2.indication_keys and p1.toxicity == env.world.toxicity
    assert p1.luck_seed != env.world.luck_seed


def test_the_family_hooks_match_what_the_env_reports():
    from clinbench.env.portfolio.family import FAMILY

    env = make()
    obs, _ = env.reset(seed=0)
    assert set(FAMILY.observation_fields) == set(obs.to_dict())
    assert set(FAMILY.step_columns) <= set(obs.summary())
    done = False
    while not done:
        obs, _, done, _, info = env.step(_busy_action(env, obs))
    assert all(m.name in info for m in FAMILY.episode_metrics)
    assert set(FAMILY.score_part_labels) <= set(info["score_parts"])
    assert all(p in env.params.__dataclass_fields__ for p in FAMILY.main_params)


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_the_observation_agrees_with_the_state_queries(seed):
    """The observation reads each indication's standing in one pass over the trials and
    the catalogue's fixed part once per episode: it must say what the state's own
    queries say (``design_error``, ``earned``, ``filed``, ``approved``, the last read-out,
    the approvals and each trial's view, which is kept per episode), at every decision of
    episodes played by random valid portfolios."""
    from clinbench.env.portfolio.macro import catalogue_index
    from clinbench.env.portfolio.trials import trial_cost

    env = PortfolioEnv(TASKS["develop"])
    rng = np.random.default_rng(seed)
    for episode in range(4):
        obs, _ = env.reset(seed=seed * 100 + episode)
        done = False
        while not done:
            s = env.state
            designs = list(catalogue_index(obs.indication_keys))
            assert list(obs.catalogue_mask) == [
                s.design_error(d) is None and trial_cost(env.params, d) <= s.cash + 1e-9
                for d in designs
            ]
            for view in obs.indications:
                mine = [t for t in s.trials if t.design.indication == view.key]
                assert view.earned == s.earned(view.key)
                assert view.filed == s.filed(view.key)
                assert view.approved == s.approved(view.key)
                assert view.running == any(s.running(view.key, ph) for ph in (1, 2, 3))
                assert view.tried == tuple(sorted({t.design.phase for t in mine}))
                own = sorted((t for t in mine if t.read_out(s.month)),
                             key=lambda t: t.outcome.readout_month)
                assert view.last_phase == (own[-1].design.phase if own else 0)
                assert view.last_estimate == (own[-1].outcome.estimate if own else None)
            # the standing kept per (month, trials) is the one computed afresh now
            assert s.standing() == s._standing()
            assert obs.approvals == s.value_parts()["approvals"]
            assert [(v.id, v.read_out, v.estimate, v.success) for v in obs.trials] == [
                (t.id, t.read_out(s.month), *((t.outcome.estimate, t.outcome.success)
                                              if t.read_out(s.month) else (None, None)))
                for t in s.trials
            ]
            valid = [d for d, ok in zip(designs, obs.catalogue_mask, strict=True) if ok]
            pick = [valid[i] for i in rng.permutation(len(valid))[: int(rng.integers(0, 3))]]
            stop = rng.random() < 0.05
            obs, _, done, _, info = env.step(PortfolioAction(trials=tuple(pick), stop=stop))
            if len(pick) <= 1 and not stop:
                assert info["error"] is None  # a design the mask allows is accepted


def test_a_design_s_dict_is_dataclasses_asdict():
    """``TrialDesign.to_dict`` spells its fields out (the records post it at every trial
    start): it must stay what ``dataclasses.asdict`` gives, field for field and in order."""
    import dataclasses

    from clinbench.env.portfolio.trials import TrialDesign

    for d in (TrialDesign("lung_1L", 3, True, True, True), TrialDesign("breast_2L", 1)):
        assert list(d.to_dict().items()) == list(dataclasses.asdict(d).items())


def test_the_kept_standing_follows_trials_started_in_the_same_month():
    """``ProgramState.standing`` is kept until the month or the trials change: a trial
    started without time passing must show as running at once."""
    from clinbench.env.portfolio.trials import TrialDesign

    env = PortfolioEnv(TASKS["develop"])
    env.reset(seed=5)
    s = env.state
    key = s.program.indications[0].key
    before = s.standing()
    assert key not in before.running
    s.start((TrialDesign(key, 1),))
    assert s.standing().running[key] == frozenset({1})
    assert s.standing() == s._standing()
