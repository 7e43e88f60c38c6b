"""The offline prediction study: its learners (bc, rwbc), the online adapter of a
predictor, its statistics and the committed results it renders."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio import study as prediction_study
from clinbench.agents.portfolio.evidence_view import read_records
from clinbench.agents.portfolio.imitation import (
    CAP,
    CLIP,
    FEATURES,
    THRESHOLDS,
    ImitationPolicy,
    entry_features,
    rwbc_weights,
    select,
)
from clinbench.agents.portfolio.predictor_agent import PredictorAgent, as_episode
from clinbench.agents.portfolio.predictors import heuristic, random_portfolio
from clinbench.env.portfolio.metrics import indication_set, micro_f1, portfolio_f1
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.portfolio.splits import make_split

ROOT = Path(__file__).resolve().parents[1]
PARAMS = TASKS["develop"]


def _study():
    return prediction_study


@pytest.fixture(scope="module")
def data():
    return build_dataset(PARAMS, seed=5, n_programs=30)


@pytest.fixture(scope="module")
def split(data):
    return make_split(data.episodes, "temporal", PARAMS.cutoff_month)


@pytest.fixture(scope="module")
def bc(split):
    return ImitationPolicy.fit(split.train)


def test_features_are_finite_and_one_row_per_catalogue_entry(data):
    for e in data.episodes[:50]:
        x = entry_features(e)
        assert x.shape[0] == len(e.catalogue) and np.isfinite(x).all()
        assert x.min() >= -1 and x.max() <= 2


def test_features_read_each_entry_s_own_design_and_its_group_s_evidence(data):
    """The features are computed once per (indication, phase) group: entries of a group
    differ only in their design columns, and those read the entry's own design."""
    own = [FEATURES.index(f) for f in ("randomised", "biomarker", "combination",
                                       "flag_share_match", "rule_exact")]
    checked = 0
    for e in data.episodes[::7]:
        x, v, rule = entry_features(e), read_records(e.evidence), heuristic(e)
        past = [d for _, d in v.designs]
        flags = [(d.randomised, d.biomarker, d.combination) for d in e.catalogue]
        for k, d in enumerate(e.catalogue):
            assert tuple(x[k, own[:3]]) == flags[k]
            share = (sum((p.randomised, p.biomarker, p.combination) == flags[k] for p in past)
                     / len(past)) if past else 0.5
            assert x[k, own[3]] == share and x[k, own[4]] == (d in rule)
            assert x[k, FEATURES.index(f"phase_{d.phase}")] == 1
            assert x[k, FEATURES.index("phase_registered")] == (
                d.phase in v.registered.get(d.indication, set()))
            assert x[k, FEATURES.index("log_patients")] == math.log1p(
                v.patients.get(d.indication, 0.0)) / 6.0
            rest = np.delete(np.arange(len(FEATURES)), own)
            same = [j for j, c in enumerate(e.catalogue)
                    if (c.indication, c.phase) == (d.indication, d.phase)]
            assert (x[same][:, rest] == x[k, rest]).all()
        checked += bool(past)
    assert checked > 5


def test_a_threshold_keeps_the_most_probable_valid_entries_one_per_group(data):
    e = next(e for e in data.episodes if e.mask.sum() > 8)
    p = np.linspace(0.9, 0.1, len(e.catalogue))
    picked = select(e, p, 0.3)
    valid = [d for d, ok, q in zip(e.catalogue, e.mask, p, strict=True) if ok and q > 0.3]
    assert 0 < len(picked) <= CAP and all(d in valid for d in picked)
    assert len({(d.indication, d.phase) for d in picked}) == len(picked)
    assert picked[0] == valid[0] and select(e, p, 0.95) == ()


def test_bc_is_deterministic_and_predicts_valid_portfolios(split, bc):
    again = ImitationPolicy.fit(split.train)
    assert np.array_equal(again.coef, bc.coef) and again.threshold == bc.threshold
    assert bc.threshold in THRESHOLDS
    for e in split.test:
        pred = bc.predict(e)
        index = {d: k for k, d in enumerate(e.catalogue)}
        assert len(pred) <= CAP and all(e.mask[index[d]] for d in pred)
        assert len({(d.indication, d.phase) for d in pred}) == len(pred)


def test_bc_beats_random_on_held_out_dates(split, bc):
    rng = np.random.default_rng(0)
    gold = [e.label for e in split.test]
    learnt = portfolio_f1([bc.predict(e) for e in split.test], gold)["indication_f1_micro"]
    chance = portfolio_f1([random_portfolio(e, rng) for e in split.test], gold)
    assert learnt > chance["indication_f1_micro"] + 0.1


def test_rwbc_weights_follow_the_returns_within_the_clip():
    returns = np.array([-500.0, -10.0, 0.0, 40.0, 3000.0])
    w = rwbc_weights(returns)
    assert np.all(np.diff(w) > 0)
    assert w.min() >= np.exp(-CLIP) - 1e-12 and w.max() <= np.exp(CLIP) + 1e-12
    assert np.all(rwbc_weights(np.full(4, 7.0)) == 1.0)


def test_weights_are_checked(split):
    with pytest.raises(ValueError, match="one positive"):
        ImitationPolicy.fit(split.train, np.zeros(len(split.train)))
    with pytest.raises(ValueError, match="one positive"):
        ImitationPolicy.fit(split.train, np.ones(3))
    with pytest.raises(ValueError, match="no episodes"):
        ImitationPolicy.fit(())


def test_weighting_changes_the_fit(split):
    w = np.linspace(0.2, 5.0, len(split.train))
    assert not np.allclose(ImitationPolicy.fit(split.train, w).coef,
                           ImitationPolicy.fit(split.train).coef)


# ---------------------------------------------------------------------- online adapter
def test_a_predictor_plays_online_from_public_records_only(bc):
    env = PortfolioEnv(PARAMS)
    seen = []

    def spy(episode):
        seen.append(episode)
        return bc.predict(episode)

    agent = PredictorAgent(AgentContext.of(env), spy)
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        agent.reset(seed)
        done, errors = False, []
        while not done:
            obs, _, done, _, info = env.step(agent.act(obs))
            errors.append(info.get("error"))
        assert errors.count(None) == len(errors)  # never an invalid action
    assert seen and all(r.month <= e.month for e in seen for r in e.evidence)
    assert all(e.label == () for e in seen)


def test_the_adapter_reads_the_observation_as_the_offline_task_does(data):
    env = PortfolioEnv(PARAMS)
    obs, _ = env.reset(seed=11)
    e = as_episode(obs)
    assert e.month == obs.month and e.evidence == obs.records
    assert len(e.catalogue) == 128 and e.mask.all() == obs.biomarker
    assert heuristic(e) == heuristic(e)


# ---------------------------------------------------------------------- statistics
def test_study_f1_is_the_metric_modules_micro_f1(data):
    study = _study()
    pairs = [(indication_set(heuristic(e)), indication_set(e.label)) for e in data.episodes]
    hits = np.array([len(p & t) for p, t in pairs])
    size = np.array([len(p) + len(t) for p, t in pairs])
    assert study.micro_f1(hits, size) == pytest.approx(micro_f1(pairs))
    lo, hi = study.f1_interval(hits, size, seed=1)
    assert lo <= study.micro_f1(hits, size) <= hi and hi - lo < 0.3


def test_the_paired_test_finds_a_real_difference_and_not_a_null_one():
    study = _study()
    rng = np.random.default_rng(3)
    size = rng.integers(2, 8, 60).astype(float)
    good = np.floor(size / 2 * 0.8)
    bad = np.floor(size / 2 * 0.3)
    d, p = study.paired_test((good, size), (bad, size), seed=0)
    assert d > 0 and p < 0.001
    d, p = study.paired_test((good, size), (good, size), seed=0)
    assert d == 0 and p == 1.0


def test_the_committed_study_holds_every_split_predictor_and_test():
    record = json.loads(
        (ROOT / "data" / "sweep_results" / "studies" / "portfolio_prediction.json").read_text()
    )
    results = record["results"]
    assert record["seeds"] == results["seeds"] == [1, 7, 21, 42, 123]
    assert {r["split"] for r in results["f1"]} == {"drug", "sponsor", "class", "temporal"}
    assert set(results["online"]) == set(prediction_study.PREDICTORS)
    assert len(results["tests"]) == 4 * 2 * len(prediction_study.COMPARISONS)
    report = (ROOT / "data" / "sweep_results" / "benchmark_report.md").read_text()
    assert f"## {prediction_study.STUDY.title}" in report


# ---------------------------------------------------------------------- agreement online
def _replay_sponsor(env, seed):
    """Play what the sponsor would start (a copy of the env's sponsor Generator predicts
    it); the decisions played and the final info."""
    import copy

    from clinbench.env.portfolio.actions import PortfolioAction
    from clinbench.env.portfolio.sponsor import sponsor_portfolio

    env.reset(seed=seed)
    played, done, info = [], False, {}
    while not done:
        pick = sponsor_portfolio(env.state, copy.deepcopy(env._sponsor_rng))
        month = env.state.month
        _, _, done, _, info = env.step(PortfolioAction(trials=pick))
        assert info["error"] is None
        played.append((month, pick))
    return played, info


def test_playing_the_sponsor_agrees_fully_and_is_the_logged_history():
    from clinbench.env.portfolio.history import simulate_program
    from clinbench.env.portfolio.world import draw_program, draw_universe

    env = PortfolioEnv(PARAMS)
    for seed in range(6):
        played, info = _replay_sponsor(env, seed)
        assert info["sponsor_f1"] == 100.0 and info["sponsor_strict_f1"] == 100.0
        logged = simulate_program(draw_program(draw_universe(PARAMS, seed), 0)).decisions
        assert played == list(logged[: len(played)])


def test_doing_nothing_disagrees_with_a_sponsor_that_starts_a_program():
    from clinbench.env.portfolio.actions import PortfolioAction

    env = PortfolioEnv(PARAMS)
    for seed in range(6):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, done, _, info = env.step(PortfolioAction())
        assert info["sponsor_f1"] == 0.0 and info["sponsor_strict_f1"] == 0.0


def test_agreement_is_between_the_extremes_for_the_heuristic_and_changes_no_score(monkeypatch):
    """The heuristic agrees in part; the sponsor's draws change nothing the agent sees."""
    from clinbench.agents.registry import make_agent
    from clinbench.env.portfolio import simulator
    from clinbench.env.registry import make
    from clinbench.episode import play_episode

    env = make("portfolio/develop")
    agent = make_agent("heuristic", AgentContext.of(env))
    played = [play_episode(env, agent, seed, agent_seed=seed) for seed in range(20)]
    f1 = [e.metrics["sponsor_f1"] for e in played]
    assert 0.0 < np.mean(f1) < 100.0
    # a sponsor that draws nothing and starts nothing: the same episodes, other agreement
    monkeypatch.setattr(simulator, "sponsor_portfolio", lambda state, rng: ())
    again = [play_episode(env, agent, seed, agent_seed=seed) for seed in range(20)]
    assert [(e.score, e.steps, e.steps_log) for e in again] == [
        (e.score, e.steps, e.steps_log) for e in played
    ]
    assert [e.metrics["sponsor_f1"] for e in again] != f1


# ---------------------------------------------------------------------- iql, learned reward
def test_iql_weights_favour_returns_above_the_expectile(split):
    from clinbench.agents.portfolio.iql import MAX_WEIGHT, TAU, expectile_regression

    # the expectile of a constant-free sample is its tau-expectile: check against the
    # closed form's defining equation, tau E[(y - v)+] = (1 - tau) E[(v - y)+]
    rng = np.random.default_rng(0)
    y = rng.standard_normal(4000)
    v = expectile_regression(np.zeros((y.size, 1)), y, l2=0.0)[0]
    assert TAU * np.maximum(y - v, 0).mean() == pytest.approx(
        (1 - TAU) * np.maximum(v - y, 0).mean(), rel=1e-4)
    assert v > np.mean(y)
    from clinbench.agents.portfolio.iql import advantage_weights

    feats = [entry_features(e) for e in split.train]
    returns = np.linspace(-100.0, 100.0, len(split.train))
    w = advantage_weights(split.train, feats, returns)
    assert w.shape == (len(split.train),) and np.all(w > 0) and w.max() <= MAX_WEIGHT
    assert np.corrcoef(w, returns)[0, 1] > 0


def test_the_learned_reward_model_is_ridge_regression():
    from clinbench.agents.portfolio.learned_reward import reward_model

    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 5))
    y = x @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.7 + 0.1 * rng.standard_normal(200)
    coef = reward_model(x, y, ridge=0.0)
    ref, *_ = np.linalg.lstsq(np.hstack([np.ones((200, 1)), x]), y, rcond=None)
    assert np.allclose(coef, ref)
    assert abs(reward_model(x, y, ridge=1e6)[1:]).max() < 0.01  # shrunk to nothing


def test_the_value_weighted_learners_predict_valid_portfolios(split):
    from clinbench.agents.portfolio.iql import fit_iql
    from clinbench.agents.portfolio.learned_reward import fit_learned_reward

    feats = [entry_features(e) for e in split.train]
    returns = np.array([len(e.label) * 10.0 - 5.0 for e in split.train])
    for fit in (fit_iql, fit_learned_reward):
        policy = fit(split.train, feats, returns)
        for e in split.test[:100]:
            pred = policy.predict(e)
            index = {d: k for k, d in enumerate(e.catalogue)}
            assert len(pred) <= CAP and all(e.mask[index[d]] for d in pred)


def test_the_temporal_split_trains_on_nothing_public_after_the_cutoff():
    """Contamination-clean: the learners' labels are public before the cutoff and their
    weights use only the value realised by then; at the end of time that value is the
    program's final one."""
    study = _study()
    data = build_dataset(PARAMS, seed=1, n_programs=45)
    split = make_split(data.episodes, "temporal", PARAMS.cutoff_month)
    train, value = study.training_set(split, data.histories, PARAMS.cutoff_month)
    by_id = {h.program.id: h for h in data.histories}
    assert train and all(
        study.label_public_month(by_id[e.program_id], e.month) < PARAMS.cutoff_month
        for e in train
    )
    final = {h.program.id: h.value["value"] - h.value["cost"] for h in data.histories}
    assert any(abs(value[k] - final[k]) > 1e-6 for k in final)  # later outcomes unseen
    for h in data.histories:
        assert study.value_known_at(h, 10**6) == pytest.approx(final[h.program.id])
        assert study.value_known_at(h, PARAMS.cutoff_month - 1) == pytest.approx(
            value[h.program.id])
    group = make_split(data.episodes, "drug", PARAMS.cutoff_month)
    assert study.training_set(group, data.histories, PARAMS.cutoff_month)[1] == final


@pytest.mark.parametrize("seed", [1, 21, 123])
def test_the_temporal_weights_do_not_move_when_the_hidden_future_does(seed):
    """The value that weighs a temporal-split training program is the same whatever
    happens in it that is not public before the cutoff: drop every trial whose registry
    entry appears at or after the cutoff, and every later record, and it is unchanged.
    (A trial started before the cutoff but registered after it once counted: seeds 21
    and 123 have such trials.)"""
    import dataclasses

    study = _study()
    cutoff = PARAMS.cutoff_month
    data = build_dataset(PARAMS, seed=seed, n_programs=45)
    moved = 0
    for h in data.histories:
        public = {r.fields.get("trial") for r in h.records if r.kind == "registry"
                  and r.fields.get("status") == "recruiting" and r.month < cutoff}
        seen = dataclasses.replace(
            h, trials=tuple(t for t in h.trials if t.id in public),
            records=tuple(r for r in h.records if r.month < cutoff),
        )
        assert study.value_known_at(seen, cutoff - 1) == pytest.approx(
            study.value_known_at(h, cutoff - 1))
        moved += any(t.start_month < cutoff and t.id not in public for t in h.trials)
    if seed != 1:
        assert moved  # the case the test is for occurs


def test_the_study_code_identity_covers_every_clinbench_module_it_imports():
    """A change to any clinbench module the study imports re-runs it (its code identity):
    each is family code of the cells or one of the study's declared modules."""
    import ast
    import importlib

    from clinbench.sweep.cells import cell_code_files

    study = _study()
    tree = ast.parse(Path(study.__file__).read_text())
    imported = {n.module for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("clinbench.")}
    root = Path(study.__file__).parents[2]
    hashed = set(cell_code_files("portfolio")) | {
        Path(importlib.import_module(m).__file__).relative_to(root).as_posix()
        for m in study.STUDY.modules
    }
    files = {Path(importlib.import_module(m).__file__).relative_to(root).as_posix()
             for m in imported if m != "clinbench.studies"}
    assert files <= hashed, files - hashed


def test_the_online_worlds_follow_the_seed_not_its_position():
    small = prediction_study.PredictionStudy(programs=6, online_worlds=2)
    a, b = small.run([4, 9]), small.run([9, 4])
    assert a["online"] == b["online"]


def test_the_online_table_follows_the_predictor_order_not_the_file_s_key_order():
    """The results file is written with sorted keys; the report lists the predictors in
    the study's order either way (an extra one, the LLM row, last)."""
    results = json.loads((ROOT / "data/sweep_results/studies/portfolio_prediction.json")
                         .read_text())["results"]
    online = results["online"]
    results["online"] = {k: online[k] for k in sorted(online, reverse=True)}
    results["online"]["llm"] = dict(online["random"])
    table = _study().markdown(results).split("### Online value of the predictors")[1]
    rows = [ln.split("|")[1].strip() for ln in table.splitlines() if ln.startswith("| ")]
    assert rows[1:] == [*results["predictors"], "llm"]
