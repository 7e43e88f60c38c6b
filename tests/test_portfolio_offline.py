"""The offline task: date-gated episodes and tools, leak-free splits, the predictors."""

from __future__ import annotations

import numpy as np
import pytest

from clinbench.agents.portfolio.predictors import heuristic, random_portfolio, repeat_last
from clinbench.env.portfolio.evidence import make_record
from clinbench.env.portfolio.metrics import portfolio_f1
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.retrieval import EvidenceTools
from clinbench.env.portfolio.splits import SPLITS, group_split, make_split, temporal_split

PARAMS = TASKS["develop"]


@pytest.fixture(scope="module")
def dataset():
    return build_dataset(PARAMS, seed=3, n_programs=60)


def test_the_paper_size_preset_is_about_the_papers_size():
    d = build_dataset(PARAMS, seed=0, n_programs=45)
    assert 600 <= len(d.episodes) <= 1200  # the paper: 881 episodes over 45 programs
    assert d.n_records > 1000


def test_dataset_is_deterministic(dataset):
    again = build_dataset(PARAMS, seed=3, n_programs=60)
    assert [(e.program_id, e.month, e.label) for e in again.episodes] == [
        (e.program_id, e.month, e.label) for e in dataset.episodes
    ]
    assert [r.to_dict() for h in again.histories for r in h.records] == [
        r.to_dict() for h in dataset.histories for r in h.records
    ]


def test_episode_evidence_is_gated_by_its_date(dataset):
    for e in dataset.episodes:
        assert all(r.month <= e.month for r in e.evidence)
    hidden = sum(
        1 for e in dataset.episodes for h in dataset.histories if h.program.id == e.program_id
        for r in h.records if r.month > e.month
    )
    assert hidden > 0


def test_labels_are_valid_catalogue_entries_within_the_cap(dataset):
    for e in dataset.episodes:
        index = {d: k for k, d in enumerate(e.catalogue)}
        assert len(e.label) <= PARAMS.portfolio_cap
        assert all(d in index and e.mask[index[d]] for d in e.label)
    assert any(e.label for e in dataset.episodes) and any(not e.label for e in dataset.episodes)


# ---------------------------------------------------------------------- retrieval tools
def _records_around(month: int) -> list:
    mk = make_record
    return [
        mk("R1", month - 12, "result", "P1", "nsclc_1L", {"phase": 1, "estimate": 0.4,
           "success": True}, "Phase 1 in nsclc 1L: effect +0.40, the trial was tolerable"),
        mk("R2", month, "registry", "P1", "nsclc_1L", {"status": "recruiting", "phase": 2},
           "Phase 2 single-arm trial of D1 in nsclc 1L starts recruiting"),
        mk("R3", month + 1, "result", "P1", "nsclc_1L", {"phase": 2, "estimate": 0.9,
           "success": True}, "Phase 2 in nsclc 1L: effect +0.90, the trial met its endpoint"),
        mk("R4", month + 60, "regulatory", "P1", "nsclc_1L", {"event": "approval"},
           "approval of D1 in nsclc 1L"),
    ]


def test_retrieval_tools_never_return_a_record_dated_after_the_decision():
    month = 200
    tools = EvidenceTools(_records_around(month), month)
    for query in ("", "nsclc", "phase 2", "approval", "met its endpoint", "effect"):
        for kind in (None, "result", "regulatory", "registry"):
            for hit in tools.search_evidence(query, kind=kind, limit=50):
                assert hit["month"] <= month
    assert [h["id"] for h in tools.search_evidence("nsclc")] == ["R2", "R1"]
    assert tools.get_record("R1")["id"] == "R1"
    assert tools.get_record("R3") is None and tools.get_record("R4") is None
    summary = tools.program_summary()
    assert summary["records"] == 2
    assert summary["latest_results"]["nsclc_1L"]["phase"] == 1  # not R3's Phase 2


def test_retrieval_tools_on_a_whole_program(dataset):
    h = dataset.histories[0]
    for e in dataset.episodes[:40]:
        if e.program_id != h.program.id:
            continue
        tools = EvidenceTools(h.records, e.month)
        hits = tools.search_evidence("", limit=50)
        assert all(x["month"] <= e.month for x in hits)
        assert all(tools.get_record(r.id) is None for r in h.records if r.month > e.month)


def test_retrieval_tools_reject_bad_arguments():
    tools = EvidenceTools([], 10)
    with pytest.raises(ValueError):
        tools.search_evidence("x", kind="rumour")
    with pytest.raises(ValueError):
        tools.search_evidence("x", limit=True)
    with pytest.raises(TypeError):
        tools.search_evidence(None)
    assert tools.get_record(123) is None


# ---------------------------------------------------------------------- splits
@pytest.mark.parametrize("by,key", [("drug", "drug_id"), ("sponsor", "sponsor_id"),
                                    ("class", "drug_class")])
def test_group_split_lets_no_group_cross(dataset, by, key):
    s = group_split(dataset.episodes, by, fraction=0.25, seed=1)
    train = {getattr(e, key) for e in s.train}
    test = {getattr(e, key) for e in s.test}
    assert train and test and not train & test
    assert test == set(s.held_out)
    assert len(s.train) + len(s.test) == len(dataset.episodes)
    if by == "drug":
        assert not {e.program_id for e in s.train} & {e.program_id for e in s.test}


def test_temporal_split_keeps_post_cutoff_evidence_out_of_training(dataset):
    cutoff = PARAMS.cutoff_month
    s = temporal_split(dataset.episodes, cutoff)
    assert s.train and s.test
    assert all(e.month < cutoff for e in s.train) and all(e.month >= cutoff for e in s.test)
    assert all(r.month < cutoff for e in s.train for r in e.evidence)


def test_splits_are_pure_functions_of_their_inputs(dataset):
    for name in SPLITS:
        a = make_split(dataset.episodes, name, PARAMS.cutoff_month, seed=5)
        b = make_split(dataset.episodes, name, PARAMS.cutoff_month, seed=5)
        assert [id(e) for e in a.test] == [id(e) for e in b.test]
    with pytest.raises(ValueError):
        make_split(dataset.episodes, "by_colour", PARAMS.cutoff_month)


# ---------------------------------------------------------------------- predictors
def test_predictors_read_evidence_and_order_as_expected(dataset):
    eps = dataset.episodes
    rng = np.random.default_rng(0)
    true = [e.label for e in eps]
    scores = {
        "heuristic": portfolio_f1([heuristic(e) for e in eps], true),
        "repeat_last": portfolio_f1([repeat_last(e) for e in eps], true),
        "random": portfolio_f1([random_portfolio(e, rng) for e in eps], true),
    }
    for s in scores.values():
        assert all(0.0 <= v <= 1.0 for v in s.values())
    micro = {k: v["indication_f1_micro"] for k, v in scores.items()}
    assert micro["heuristic"] > micro["random"]
    assert scores["heuristic"]["strict_f1_micro"] <= micro["heuristic"]
