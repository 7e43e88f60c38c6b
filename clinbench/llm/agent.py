"""``llm``: a language model choosing each action over an OpenAI-compatible endpoint.

Optional extra ``llm`` (the ``openai`` client). One Chat Completions request per step:
a system message with the task and the action schema, and a user message with the
compact observation (:mod:`clinbench.llm.render`) and the last few outcomes. The reply
is parsed by the environment's own action parser:

- ``mode: tools`` (default): one tool per action type (:mod:`clinbench.llm.tools`), the
  reply's first tool call is the action;
- ``mode: json``: the reply's content is one JSON object of the action's fields (a
  code fence around it is stripped), for endpoints without tool calling.

A reply that gives no valid action (prose, bad JSON, an unknown tool, fields the parser
refuses) gets one repair turn that says what was wrong; if that fails too the declared
``fallback`` macro-action is played. An action the environment then finds invalid (a
patient not found, say) is the model's choice and is played as such. HTTP and
connection errors are retried ``retries`` times, then the cell fails
(:class:`LLMEndpointError`): a dead endpoint never hangs a cell (``timeout`` per request).

Per episode the agent counts calls, repairs, fallbacks, API errors, prompt and
completion tokens and latency (``episode_stats``: kept in the cell files and shown in the
report), and with ``call_log`` set appends every call to a JSONL file (latency, usage,
raw reply, error). The API key is read from the environment variable ``api_key_env``
only; it is never a parameter, so never in configs, results or logs. Cells of this
agent are marked non-deterministic unless the endpoint is.

Hyper-parameters (``conf/agent/llm.yaml``):
    model ("gpt-4o-mini"): the model the endpoint serves.
    base_url (""): the endpoint; "" takes ``OPENAI_BASE_URL``, else the client's default.
    api_key_env ("OPENAI_API_KEY"): environment variable holding the key.
    mode ("tools"): "tools" or "json" (see above).
    temperature (0.0), seed (0): passed through to the endpoint.
    max_tokens (200): completion budget of a reply.
    timeout (30.0): seconds per request.
    retries (2): further attempts of a request after an HTTP or connection error.
    history (3): outcomes of the last steps shown in the prompt.
    fallback (None: {recruitment: plan, trial_design: cohort_small, portfolio: wait}):
        macro-action per family when no valid action comes back after the repair turn.
    call_log (""): folder of the JSONL call logs ("": no log; sweeps set
        ``<results>/llm_calls``).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from clinbench.agents.base import Agent
from clinbench.agents.context import AgentContext
from clinbench.llm.render import compact
from clinbench.llm.tools import action_class, action_from_call, parse_action, tool_specs

INSTALL = 'pip install -c constraints.txt -e ".[llm]"'
STATS = (
    "calls",
    "repairs",
    "fallbacks",
    "api_errors",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
)
DEFAULT_FALLBACK = {"recruitment": "plan", "trial_design": "cohort_small", "portfolio": "wait"}
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class LLMEndpointError(ConnectionError):
    """The endpoint did not answer within the retries."""


class BadReply(ValueError):
    """A reply that gives no valid action (the reason is shown in the repair turn)."""


class LLMAgent(Agent):
    """An LLM over an OpenAI-compatible Chat Completions endpoint."""

    name = "llm"
    description = "an LLM via an OpenAI-compatible endpoint (tool calls or JSON)"
    requires: ClassVar[tuple[str, ...]] = ("openai",)
    requires_modules: ClassVar[tuple[str, ...]] = ("openai",)
    install_hint = INSTALL
    #: replies depend on the endpoint; the report marks these cells
    deterministic = False

    def __init__(
        self,
        context: AgentContext,
        model: str = "gpt-4o-mini",
        base_url: str = "",
        api_key_env: str = "OPENAI_API_KEY",
        mode: str = "tools",
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 200,
        timeout: float = 30.0,
        retries: int = 2,
        history: int = 3,
        fallback: dict[str, str] | None = None,
        call_log: str = "",
        **config: Any,
    ):
        super().__init__(context, **config)
        if mode not in ("tools", "json"):
            raise ValueError(f"mode must be 'tools' or 'json', not {mode!r}")
        if retries < 0 or history < 0 or timeout <= 0:
            raise ValueError("retries and history must be >= 0 and timeout > 0")
        fallbacks = {**DEFAULT_FALLBACK, **dict(fallback or {})}
        family = context.spec.env
        if family not in fallbacks or fallbacks[family] not in self.macros.names:
            raise ValueError(
                f"fallback for {family!r} must name a macro-action: {list(self.macros.names)}"
            )
        self.fallback = self.macros.names.index(fallbacks[family])
        self.model, self.mode = model, mode
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL", "")
        self.api_key_env = api_key_env
        self.temperature, self.seed, self.max_tokens = float(temperature), int(seed), max_tokens
        self.timeout, self.retries, self.history = float(timeout), int(retries), int(history)
        self.call_log = call_log
        self.action_type = action_class(self.macros)
        self.tools = list(tool_specs(self.action_type))
        self._client: Any = None
        self._stats = dict.fromkeys(STATS, 0)
        self._outcomes: list[str] = []
        self._episode = self._step = 0
        self._last_action: Any = None

    # ------------------------------------------------------------------ agent API
    def reset(self, seed: Any = None) -> None:
        super().reset(seed)
        self._stats = dict.fromkeys(STATS, 0)
        self._outcomes = []
        self._episode += 1
        self._step = 0
        self._last_action = None

    def episode_stats(self) -> dict[str, float]:
        return dict(self._stats)

    def act(self, obs: Any) -> Any:
        self._note_outcome(obs)
        messages = [
            {"role": "system", "content": self._system()},
            {"role": "user", "content": self._user(obs)},
        ]
        self._step += 1
        try:
            action = self._parse(self._request(messages, "act"))
        except BadReply as first:
            self._stats["repairs"] += 1
            messages.append(
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {first}. "
                    + self._ask()
                    + " Nothing else.",
                }
            )
            try:
                action = self._parse(self._request(messages, "repair"))
            except BadReply:
                self._stats["fallbacks"] += 1
                action = self.macros.to_action(self.fallback, obs)
        self._last_action = action
        return action

    # ------------------------------------------------------------------ prompt
    def _system(self) -> str:
        spec = self.env_spec
        head = (
            f"You make the decisions of a simulated clinical-trial task ({spec.id}): "
            f"{spec.description} Each turn shows the current state as JSON; choose one action."
        )
        if self.mode == "tools":
            return head + " Call exactly one tool."
        schema = json.dumps([t["function"] for t in self.tools], separators=(",", ":"))
        typed = ' (with "action_type" set to a function name)' if len(self.tools) > 1 else ""
        return f"{head} Reply with one JSON object: the action's fields{typed}. Actions: {schema}"

    def _ask(self) -> str:
        return "Call exactly one tool." if self.mode == "tools" else "Reply with one JSON object."

    def _user(self, obs: Any) -> str:
        recent = "\n".join(self._outcomes[-self.history :]) if self.history else ""
        parts = [f"State: {compact(obs.to_dict())}"]
        if recent:
            parts.append(f"Last outcomes:\n{recent}")
        return "\n".join(parts)

    def _note_outcome(self, obs: Any) -> None:
        if self._step == 0:
            return
        error = obs.to_dict().get("last_error")
        action = self._last_action
        shown = action.to_dict() if hasattr(action, "to_dict") else action
        self._outcomes.append(
            f"time {obs.summary()['time']}: after {json.dumps(shown, separators=(',', ':'))}"
            + (f" (error {error})" if error else "")
        )

    # ------------------------------------------------------------------ endpoint
    def _openai(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url or None,
                api_key=os.environ.get(self.api_key_env) or "not-set",
                timeout=self.timeout,
                max_retries=0,  # retried here, so that every error is counted
            )
        return self._client

    def _request(self, messages: list[dict[str, Any]], kind: str) -> Any:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        if self.mode == "tools":
            kwargs["tools"] = self.tools
        for attempt in range(self.retries + 1):
            self._stats["calls"] += 1
            t0 = time.perf_counter()
            error, reply = None, None
            try:
                reply = self._openai().chat.completions.create(**kwargs)
            except openai.APIError as e:
                error = f"{type(e).__name__}: {e}"
            latency = time.perf_counter() - t0
            self._stats["latency_s"] += latency
            usage = getattr(reply, "usage", None)
            if usage is not None:
                self._stats["prompt_tokens"] += usage.prompt_tokens or 0
                self._stats["completion_tokens"] += usage.completion_tokens or 0
            self._log(kind, attempt, latency, reply, error)
            if error is None:
                return reply
            self._stats["api_errors"] += 1
        raise LLMEndpointError(
            f"{self._host()}: no answer after {self.retries} retries (last: {error})"
        )

    def _parse(self, reply: Any) -> Any:
        try:
            message = reply.choices[0].message
        except (AttributeError, IndexError, TypeError):
            raise BadReply("the reply has no message") from None
        if self.mode == "tools":
            calls = message.tool_calls or []
            if not calls:
                raise BadReply("no tool was called")
            call = calls[0].function
            arguments = call.arguments or "{}"
            try:  # some endpoints send the arguments as an object already
                arguments = arguments if isinstance(arguments, dict) else json.loads(arguments)
            except (TypeError, ValueError, RecursionError) as e:
                raise BadReply(f"the arguments are not JSON ({e})") from None
            try:
                return action_from_call(self.action_type, str(call.name), arguments)
            except (TypeError, ValueError) as e:
                raise BadReply(str(e)) from None
        text = _text(message.content)
        fenced = _FENCE.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except (ValueError, RecursionError):
            raise BadReply("the reply is not a JSON object") from None
        try:
            return parse_action(self.action_type, data)
        except (TypeError, ValueError) as e:
            raise BadReply(str(e)) from None

    def _host(self) -> str:
        """Host and port of the endpoint (never credentials written into the URL)."""
        parts = urlsplit(self.base_url)
        if not parts.hostname:
            return "the default endpoint"
        return parts.hostname + (f":{parts.port}" if parts.port else "")

    def _log(self, kind: str, attempt: int, latency: float, reply: Any, error: str | None) -> None:
        if not self.call_log:
            return
        folder = Path(self.call_log)
        folder.mkdir(parents=True, exist_ok=True)
        line = {
            "time": time.time(),
            "task": self.env_spec.id,
            "model": self.model,
            "host": self._host(),
            "episode": self._episode,
            "step": self._step,
            "kind": kind,
            "attempt": attempt,
            "latency_s": latency,
            "usage": reply.usage.model_dump() if getattr(reply, "usage", None) else None,
            "reply": _message(reply),
            "error": error,
        }
        name = f"{self.env_spec.id.replace('/', '-')}-{os.getpid()}.jsonl"
        with open(folder / name, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, default=str) + "\n")


def _message(reply: Any) -> Any:
    """The reply's message as plain data (for the call log), whatever came back."""
    try:
        return reply.choices[0].message.model_dump()
    except (AttributeError, IndexError, TypeError):
        return None if reply is None else str(reply)


def _part_text(part: Any) -> Any:
    return part.get("text", "") if isinstance(part, dict) else getattr(part, "text", "")


def _text(content: Any) -> str:
    """A reply's content as text (some endpoints send a list of text parts)."""
    if isinstance(content, list):
        return "".join(str(_part_text(p)) for p in content)
    return content if isinstance(content, str) else ""
