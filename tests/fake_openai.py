"""A scripted OpenAI-compatible Chat Completions endpoint for the ``llm`` agent's tests.

``FakeOpenAI().start()`` serves ``POST /v1/chat/completions`` on a free 127.0.0.1 port.
Each reply is the scripted policy's action for the state in the request (the first
user message's ``State: {...}``), as a tool call (when the request offers tools) or as
JSON content in a code fence. ``faults`` is consumed one entry per request: ``"500"``
(HTTP 500), ``"prose"`` (text, no action), ``"bad_json"`` (tool arguments that are not
JSON), ``"unknown_tool"``, or ``None`` (a good reply). With ``responder`` set, the reply's
message is ``responder(request body)`` instead (a script of tool calls, say).
"""



import json
import socket
import threading
import time
from typing import Any


def first_id(records: Any) -> str:
    """The first record's id, from a list of records or a compact table of them."""
    if isinstance(records, dict):
        return records["rows"][0][records["columns"].index("id")]
    return records[0]["id"]


def scripted(state: dict[str, Any]) -> dict[str, Any]:
    """The scripted policy, on a compact state (empty lists and nulls dropped)."""
    if "look" in state:  # dose finding: three cohorts, then stop for futility
        if state["look"] < 3:
            return {"n_next_cohort": 30}
        return {"stop_for_futility": True}
    if state.get("available_patients"):
        patient = first_id(state["available_patients"])
        return {"action_type": "screen_patient", "patient_id": patient}
    if state.get("recontact_candidates"):
        return {"action_type": "recontact", "patient_id": first_id(state["recontact_candidates"])}
    return {"action_type": "plan_next_phase", "target_phase": "screening"}


class FakeOpenAI:
    def __init__(self) -> None:
        self.faults: list[str | None] = []
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.server: Any = None
        self.url = ""
        self.responder: Any = None

    def app(self) -> Any:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse

        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            self.auth.append(request.headers.get("authorization", ""))
            fault = self.faults.pop(0) if self.faults else None
            if fault == "500":
                return JSONResponse({"error": {"message": "boom", "type": "server"}}, 500)
            if self.responder is not None:
                return self._completion(body, self.responder(body))
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            state = json.loads(user.split("State: ", 1)[1].split("\n", 1)[0])
            action = scripted(state)
            message: dict[str, Any] = {"role": "assistant", "content": None}
            if fault == "prose":
                message["content"] = "I would screen a patient now."
            elif "tools" in body:
                name = action.pop("action_type", None) or body["tools"][0]["function"]["name"]
                arguments = json.dumps(action)
                if fault == "bad_json":
                    arguments = "{not json"
                if fault == "unknown_tool":
                    name = "teleport"
                message["tool_calls"] = [
                    {
                        "id": f"call_{len(self.requests)}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ]
            else:
                text = json.dumps(action)
                message["content"] = "{oops" if fault == "bad_json" else f"```json\n{text}\n```"
            return self._completion(body, message)

        return app

    def _completion(self, body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        prompt = sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4
        return {
            "id": f"cmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7},
        }

    def start(self) -> "FakeOpenAI":
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        threading.Thread(target=self.server.run, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake endpoint did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
