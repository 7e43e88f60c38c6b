"""The LLM scaffold of the portfolio prediction task: date-gated retrieval, then a portfolio.

The paper ("Learning Clinical-Trial Strategy: Offline Policy Training for Decision
Agents", arXiv 2608.03606) compares its offline learners with language agents sharing a
date-gated retrieval scaffold. Here the model gets the decision date and the program's
candidate indications, and tools over an OpenAI-compatible Chat Completions endpoint:

- ``search_evidence(query, kind, indication, limit)``, ``get_record(record_id)`` and
  ``program_summary()``, answered by
  :class:`~clinbench.env.portfolio.retrieval.EvidenceTools` built at the decision date
  (no record dated after it can come back, whatever the arguments);
- ``submit_portfolio(trials)``: the prediction, a list of ``{indication, phase,
  randomised, biomarker, combination}``, parsed by the environment's own design parser.

Every tool result goes back as a tool message and the model calls again, up to
``max_calls`` requests. A submission that does not parse gets the parser's reason and
the loop goes on; a model that never submits a valid portfolio predicts the empty one
(counted in ``fallbacks``). HTTP and connection errors are retried ``retries`` times,
then :class:`~clinbench.llm.agent.LLMEndpointError`. The API key is read from the
environment variable ``api_key_env`` only. Not a registered agent: the prediction study
builds it when asked (``experiments/portfolio_prediction.py --llm-model ...``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from clinbench.env.portfolio.actions import Refusal, parse_design
from clinbench.env.portfolio.calendar import month_label
from clinbench.env.portfolio.evidence import KINDS
from clinbench.env.portfolio.offline import OfflineEpisode
from clinbench.env.portfolio.retrieval import EvidenceTools
from clinbench.env.portfolio.trials import DESIGN_FLAGS, TrialDesign
from clinbench.llm.agent import LLMEndpointError

STATS = ("calls", "tool_calls", "invalid_submissions", "fallbacks", "api_errors")


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tool_specs(cap: int) -> list[dict[str, Any]]:
    """The four tools' JSON schemas (Chat Completions ``tools``)."""
    design = {
        "type": "object",
        "properties": {
            "indication": {"type": "string"},
            "phase": {"type": "integer", "enum": [1, 2, 3]},
            **{flag: {"type": "boolean"} for flag in DESIGN_FLAGS},
        },
        "required": ["indication", "phase"],
    }
    return [
        _tool("search_evidence", "Public records matching every word of the query, newest first.",
              {"query": {"type": "string"}, "kind": {"type": "string", "enum": list(KINDS)},
               "indication": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
              ["query"]),
        _tool("get_record", "One public record by its id.",
              {"record_id": {"type": "string"}}, ["record_id"]),
        _tool("program_summary", "Counts of records, registered trials and latest results.",
              {}, []),
        _tool("submit_portfolio",
              f"Your prediction: the trials the sponsor starts in the next six months "
              f"(at most {cap}; an empty list if none).",
              {"trials": {"type": "array", "items": design, "maxItems": cap}}, ["trials"]),
    ]


class RetrievalPredictor:
    """Predicts an offline episode's portfolio with a language model and the tools."""

    def __init__(
        self, model: str = "gpt-4o-mini", base_url: str = "", api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0, seed: int = 0, max_tokens: int = 400, timeout: float = 30.0,
        retries: int = 2, max_calls: int = 8, cap: int = 4,
    ):
        if max_calls < 1 or retries < 0 or timeout <= 0:
            raise ValueError("max_calls must be >= 1, retries >= 0 and timeout > 0")
        self.model, self.base_url = model, base_url or os.environ.get("OPENAI_BASE_URL", "")
        self.api_key_env = api_key_env
        self.temperature, self.seed, self.max_tokens = float(temperature), int(seed), max_tokens
        self.timeout, self.retries, self.max_calls, self.cap = timeout, retries, max_calls, cap
        self.tools = tool_specs(cap)
        self.stats = dict.fromkeys(STATS, 0)
        self._client: Any = None

    # ------------------------------------------------------------------ prediction
    def predict(self, episode: OfflineEpisode) -> tuple[TrialDesign, ...]:
        tools = EvidenceTools(episode.evidence, episode.month)
        indications = tuple(dict.fromkeys(d.indication for d in episode.catalogue))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": (
                "You predict a drug program's clinical-trial portfolio. Use the tools to read "
                "the public evidence, then call submit_portfolio once with the trials the "
                "sponsor will start in the next six months.")},
            {"role": "user", "content": (
                f"Program {episode.program_id} ({episode.drug_class}); decision date "
                f"{month_label(episode.month)}. Candidate indications: "
                f"{', '.join(indications)}. Phase 1 is single-arm, phase 3 randomised.")},
        ]
        for _ in range(self.max_calls):
            message = self._request(messages)
            calls = getattr(message, "tool_calls", None) or []
            if not calls:
                messages.append({"role": "assistant", "content": _content(message)})
                messages.append({"role": "user", "content": "Call a tool."})
                continue
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in calls]})
            for call in calls:
                self.stats["tool_calls"] += 1
                name, arguments = call.function.name, _arguments(call.function.arguments)
                if name == "submit_portfolio":
                    portfolio = self._portfolio(arguments, indications)
                    if not isinstance(portfolio, str):
                        return portfolio
                    self.stats["invalid_submissions"] += 1
                    answer: Any = {"error": portfolio}
                else:
                    answer = _answer(tools, name, arguments)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": json.dumps(answer, default=str)})
        self.stats["fallbacks"] += 1
        return ()

    def _portfolio(self, arguments: Any, indications: tuple[str, ...]):
        """The submitted designs, or why they cannot be read."""
        trials = arguments.get("trials") if isinstance(arguments, dict) else None
        if not isinstance(trials, list):
            return "trials must be a list"
        if len(trials) > self.cap:
            return f"at most {self.cap} trials"
        out = []
        for entry in trials:
            d = parse_design(entry, indications)
            if isinstance(d, Refusal):
                return d.message
            out.append(d)
        return tuple(dict.fromkeys(out))

    # ------------------------------------------------------------------ endpoint
    def _request(self, messages: list[dict[str, Any]]) -> Any:
        import openai

        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url or None,
                api_key=os.environ.get(self.api_key_env) or "not-set",
                timeout=self.timeout, max_retries=0,
            )
        error = None
        for _ in range(self.retries + 1):
            self.stats["calls"] += 1
            try:
                reply = self._client.chat.completions.create(
                    model=self.model, messages=messages, tools=self.tools,
                    temperature=self.temperature, seed=self.seed, max_tokens=self.max_tokens,
                )
                return reply.choices[0].message
            except openai.APIError as e:
                error = f"{type(e).__name__}: {e}"
                self.stats["api_errors"] += 1
        raise LLMEndpointError(f"no answer after {self.retries} retries (last: {error})")


def _arguments(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    try:
        return json.loads(raw or "{}")
    except (TypeError, ValueError, RecursionError):
        return None


def _answer(tools: EvidenceTools, name: str, arguments: Any) -> Any:
    """A retrieval tool's answer, or the reason it could not run."""
    if not isinstance(arguments, dict):
        return {"error": "the arguments are not a JSON object"}
    try:
        if name == "search_evidence":
            return tools.search_evidence(**arguments)
        if name == "get_record":
            return tools.get_record(**arguments)
        if name == "program_summary":
            return tools.program_summary(**arguments)
    except (TypeError, ValueError) as e:
        return {"error": str(e)}
    return {"error": f"unknown tool {name!r}"}


def _content(message: Any) -> str:
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""
