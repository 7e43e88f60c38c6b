"""The LLM retrieval scaffold of the portfolio prediction task against a scripted
OpenAI-compatible endpoint (``tests/fake_openai.py``): the tools never answer with a
record dated after the decision date, a submission is parsed by the environment's
parser, a bad one is refused with its reason, a model that never submits predicts
nothing, and a dead endpoint fails cleanly."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import pytest

from clinbench.agents.portfolio.predictors import heuristic
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS

HAVE = all(importlib.util.find_spec(m) for m in ("openai", "fastapi", "uvicorn"))
pytestmark = pytest.mark.skipif(not HAVE, reason="needs the llm and serve extras")


@pytest.fixture(scope="module")
def endpoint():
    from fake_openai import FakeOpenAI

    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def episode():
    """An episode whose evidence also holds every later record of its program, as if a
    leak had put them there: the tools must still not show them."""
    data = build_dataset(TASKS["develop"], seed=4, n_programs=12)
    for h in data.histories:
        mid = [e for e in data.episodes if e.program_id == h.program.id and e.label]
        later = [r for r in h.records if mid and r.month > mid[-1].month]
        if len(mid) >= 2 and later:
            e = mid[len(mid) // 2]
            return dataclasses.replace(e, evidence=h.records), e.month, heuristic(e)
    raise AssertionError("no program with a later record")


def _call(name, arguments, k):
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"c{k}", "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def script(steps):
    """A responder replaying ``steps`` (name, arguments) one per request."""
    calls = iter(steps)

    def respond(body):
        k = sum(m["role"] == "tool" for m in body["messages"])
        step = next(calls, None)
        if step is None:
            return {"role": "assistant", "content": "I am not sure."}
        return _call(*step, k)

    return respond


def predictor(endpoint, **kw):
    from clinbench.llm.retrieval import RetrievalPredictor

    return RetrievalPredictor(base_url=endpoint.url, timeout=10, **kw)


def test_the_tools_never_answer_with_a_record_after_the_decision(endpoint, episode):
    e, month, rule = episode
    every_later = [r.id for r in e.evidence if r.month > month]
    steps = [("search_evidence", {"query": "", "limit": 50}),
             ("search_evidence", {"query": "approval", "kind": "regulatory"}),
             *[("get_record", {"record_id": rid}) for rid in every_later[:5]],
             ("program_summary", {}),
             ("submit_portfolio", {"trials": [d.to_dict() for d in rule]})]
    endpoint.requests.clear()
    endpoint.responder = script(steps)
    try:
        p = predictor(endpoint, max_calls=len(steps))
        assert p.predict(e) == tuple(rule)
    finally:
        endpoint.responder = None
    answers = [json.loads(m["content"]) for m in endpoint.requests[-1]["messages"]
               if m["role"] == "tool"]
    assert len(answers) == len(steps) - 1
    found = [r for a in answers[:2] for r in a]
    assert found and all(r["month"] <= month for r in found)
    assert all(a is None for a in answers[2:2 + len(every_later[:5])])  # invisible by id
    summary = answers[-1]
    assert summary["records"] == sum(r.month <= month for r in e.evidence)
    assert p.stats["tool_calls"] == len(steps) and p.stats["fallbacks"] == 0


def test_a_bad_submission_is_refused_with_its_reason_and_a_good_one_follows(endpoint, episode):
    e, _, rule = episode
    steps = [("submit_portfolio", {"trials": [{"indication": "mars_1L", "phase": 2}]}),
             ("submit_portfolio", {"trials": [{"indication": rule[0].indication, "phase": 7}]}),
             ("submit_portfolio", {"trials": [d.to_dict() for d in rule]})]
    endpoint.requests.clear()
    endpoint.responder = script(steps)
    try:
        p = predictor(endpoint)
        assert p.predict(e) == tuple(rule)
    finally:
        endpoint.responder = None
    errors = [json.loads(m["content"])["error"] for m in endpoint.requests[-1]["messages"]
              if m["role"] == "tool"]
    assert "unknown indication" in errors[0] and "phase" in errors[1]
    assert p.stats["invalid_submissions"] == 2


def test_a_model_that_never_submits_predicts_nothing(endpoint, episode):
    e, _, _ = episode
    endpoint.responder = script([("program_summary", {})] * 3)
    try:
        p = predictor(endpoint, max_calls=4)
        assert p.predict(e) == ()
    finally:
        endpoint.responder = None
    assert p.stats["fallbacks"] == 1 and p.stats["calls"] == 4


def test_a_dead_endpoint_fails_cleanly(episode):
    from clinbench.llm.agent import LLMEndpointError
    from clinbench.llm.retrieval import RetrievalPredictor

    p = RetrievalPredictor(base_url="http://127.0.0.1:9/v1", timeout=2, retries=1)
    with pytest.raises(LLMEndpointError, match="no answer after 1 retries"):
        p.predict(episode[0])
    assert p.stats["api_errors"] == 2
