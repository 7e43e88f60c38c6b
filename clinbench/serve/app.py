"""Any registered clinbench task as an OpenEnv app (``clinbench serve``; extra ``serve``).

Built on ``openenv-core``'s ``create_app``: one native environment per WebSocket
session (``/ws``), at most ``max_sessions`` of them. The wire protocol is OpenEnv's:

- ``{"type": "reset", "data": {"seed": 7, "task": "recruitment/easy_bench"}}`` starts an
  episode (``task`` defaults to the served one; ``overrides`` replaces task parameters,
  ``options`` is the native ``reset`` options; ``"to_dict": false`` leaves the plain
  rendering out of the episode's answers, for clients that read ``native``);
- ``{"type": "step", "data": {...}}`` plays one action: the family's native action
  fields (``{"action_type": "screen_patient", "patient_id": "P-3"}``) or a macro-action
  index (``{"macro": 0}``);
- the answer ``{"type": "observation", "data": {"observation": {...}, "reward": r,
  "done": d}}`` holds the native ``to_dict()`` (``observation``), the macro ``action_mask``
  and ``features``, the native ``info`` and the native observation itself (``native``,
  exact, see :mod:`clinbench.serve.wire`), never hidden state.

An invalid action is a policy choice: it is played and comes back with its native
error code (``info["error"]``, ``error``), exactly as in process (a native field such as
``"inclusion_criteria_strictness": 1e999`` or an integer too large for a float is the
family's error code, never an exception). A malformed message is a protocol error
(``{"type": "error", "data": {"code": ...}}``) and the session stays usable; ``macro``
must be a JSON integer (``true``, ``1.0`` or ``"1"`` are ``VALIDATION_ERROR``). A reset
without a seed plays a world drawn from the session's own stream and reports no seed
(its ``info`` has no ``"seed"``). A client that goes away, mid-episode or after a clean
close, ends its session: the server logs one line and frees the slot. HTTP
``/reset`` and ``/step`` are OpenEnv's stateless endpoints (a fresh environment per
request): multi-step episodes need ``/ws``. Also ``/health``, ``/schema`` and
``/tasks`` (every task with its action schema and macro-actions).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import typing
from functools import cache
from typing import Any

import pydantic
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field, StrictInt
from starlette.websockets import WebSocketDisconnect

from clinbench.env.base import Env
from clinbench.env.registry import env_ids, make, spec
from clinbench.serve.wire import ObservationEncoder, encode

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_MAX_SESSIONS = 64
#: Seconds a session may stay silent before the server closes it.
DEFAULT_IDLE_TIMEOUT = 300.0
#: Largest WebSocket message the server accepts (bytes); actions are far smaller.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
RESET_KEYS = ("seed", "episode_id", "task", "overrides", "options", "to_dict")


def _from_json(task: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """JSON has no tuples: a list given for a tuple-valued task parameter (a scenario
    mix, say) is that tuple, as the client meant it."""
    defaults = spec(task).params
    return {
        k: tuple(v) if isinstance(v, list) and isinstance(getattr(defaults, k, None), tuple) else v
        for k, v in overrides.items()
    }
#: The server's log (uvicorn's, so ``clinbench serve``'s log level applies to it).
log = logging.getLogger("uvicorn.error")


class ClinbenchAction(Action):
    """A native action's fields, or ``macro``: the index of a macro-action."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    # strict: a bool, a float or a numeric string is not an index (pydantic would cast them)
    macro: StrictInt | None = Field(
        default=None, description="macro-action index (instead of fields)"
    )


class ClinbenchObservation(Observation):
    """What a session sees after ``reset`` or ``step``."""

    task: str = Field(default="", description="the task being played")
    observation: dict[str, Any] = Field(default_factory=dict, description="native to_dict()")
    action_mask: list[int] = Field(default_factory=list, description="valid macro-actions")
    features: list[float] = Field(default_factory=list, description="macro features")
    error: str | None = Field(default=None, description="error code of an invalid action")
    info: dict[str, Any] = Field(default_factory=dict, description="native info (encoded)")
    native: dict[str, Any] = Field(default_factory=dict, description="native observation")

    def model_dump(self, *, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        """The fields as they are, without pydantic's deep copy of the nested data.

        OpenEnv serialises every answer with ``model_dump(exclude={"reward", "done",
        "metadata"})`` and then dumps the result to JSON; the values here are plain JSON
        data already, so copying them first only costs time (a fifth of a step).
        """
        if kwargs:
            return super().model_dump(exclude=exclude, **kwargs)
        skip = set(exclude or ())
        return {name: getattr(self, name) for name in type(self).model_fields if name not in skip}


class ClinbenchState(State):
    task: str = ""
    seed: int | None = None
    done: bool = True


def env_types(env: Env) -> tuple[type, type]:
    """(observation class, action class) of a native environment, from its ``Env[O, A]``."""
    for base in getattr(type(env), "__orig_bases__", ()):
        if typing.get_origin(base) is Env:
            obs_cls, act_cls = typing.get_args(base)
            return obs_cls, act_cls
    raise TypeError(f"{type(env).__name__} does not declare Env[Observation, Action]")


class ServedEnv(Environment[ClinbenchAction, ClinbenchObservation, ClinbenchState]):
    """One session: native environments of the tasks it plays, one episode at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, task: str):
        super().__init__()
        self._default = task
        self._envs: dict[tuple[str, str], Env] = {}
        self._env: Env | None = None
        self._obs: Any = None
        self._done = True
        self._encode = ObservationEncoder()
        self._to_dict = True
        self._state = ClinbenchState(task=task)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ClinbenchObservation:
        unknown = sorted(set(kwargs) - set(RESET_KEYS))
        if unknown:
            raise ValueError(f"unknown reset field(s) {unknown}; valid: {list(RESET_KEYS)}")
        task = kwargs.get("task") or self._default
        if task not in env_ids():
            raise ValueError(f"unknown task {task!r}; valid: {', '.join(env_ids())}")
        overrides = kwargs.get("overrides") or {}
        if not isinstance(overrides, dict):
            raise TypeError("overrides must be an object of task parameters")
        overrides = _from_json(task, overrides)
        key = (task, repr(sorted(overrides.items())))
        env = self._envs.get(key)
        if env is None:
            if len(self._envs) >= 16:
                self._envs.clear()
            env = self._envs[key] = make(task, **overrides)
        obs, info = env.reset(seed=seed, options=kwargs.get("options"))
        if seed is None:  # drawn from the env's own stream: the world's seed stays here
            info.pop("seed", None)
        self._env, self._obs, self._done = env, obs, False
        self._to_dict = kwargs.get("to_dict", True) is not False
        self._encode.reset()
        self._state = ClinbenchState(episode_id=episode_id, task=task, seed=seed, done=False)
        return self._answer(obs, None, False, info)

    def step(
        self, action: ClinbenchAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ClinbenchObservation:
        env = self._env
        if env is None or self._done:
            raise RuntimeError("no episode running: send reset first")
        fields = dict(action.model_extra or {})
        if action.macro is not None:
            if fields:
                raise ValueError("send either 'macro' or an action's fields, not both")
            k = action.macro
            if not 0 <= k < env.macro_space.n:
                raise ValueError(f"macro must be in 0..{env.macro_space.n - 1}, got {k}")
            native_action: Any = env.macro_space.to_action(k, self._obs)
        else:
            native_action = fields
        obs, reward, terminated, truncated, info = env.step(native_action)
        self._obs, self._done = obs, bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = self._done
        return self._answer(obs, float(reward), self._done, info)

    # A step takes well under a millisecond: run it on the event loop rather than hop to
    # OpenEnv's per-session worker thread and back. Resets (a new world; task parameters
    # a client may override) stay on the worker thread, so they never stall other sessions.
    async def step_async(
        self, action: ClinbenchAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ClinbenchObservation:
        return self.step(action, timeout_s=timeout_s, **kwargs)

    @property
    def state(self) -> ClinbenchState:
        return self._state

    def close(self) -> None:
        """The session ended (OpenEnv calls this): drop its environments."""
        self._envs.clear()
        self._env, self._obs, self._done = None, None, True

    def _answer(self, obs: Any, reward: float | None, done: bool, info: dict) -> Any:
        macros = self._env.macro_space
        return ClinbenchObservation.model_construct(
            done=done,
            reward=reward,
            metadata={},
            task=self._state.task,
            observation=obs.to_dict() if self._to_dict else {},
            action_mask=macros.mask(obs).astype(int).tolist(),
            features=macros.features(obs).tolist(),
            error=info.get("error"),
            info=encode(info),
            native=self._encode(obs),
        )


@cache
def task_catalogue() -> list[dict[str, Any]]:
    """Every registered task: family, horizon, action JSON schema, macro-actions."""
    out = []
    for env_id in env_ids():
        env = make(env_id)
        _, act_cls = env_types(env)
        s = spec(env_id)
        out.append(
            {
                "task": env_id,
                "family": s.env,
                "version": s.version,
                "description": s.description,
                "horizon": s.params.horizon,
                "action_schema": pydantic.TypeAdapter(act_cls).json_schema(),
                "macro_actions": list(env.macro_space.names),
                "features": list(env.macro_space.feature_names),
            }
        )
    return out


class SessionGuard:
    """ASGI middleware in front of OpenEnv's ``/ws`` loop.

    - A WebSocket silent for ``idle_timeout`` seconds is disconnected (its session then
      ends as on any disconnect), so abandoned sessions free their slot.
    - A frame that is not a JSON object (binary, ``[]``, ``null``, a number) is answered
      with an ``INVALID_MESSAGE`` error here: OpenEnv 0.2.1 would end the session on it.
    - A client that goes away (a clean close, a ``close`` message, a dropped connection,
      mid-episode or mid-answer) is a normal end: OpenEnv frees the session, and its
      attempt to close or answer a connection that is gone, which would escape as an
      "Exception in ASGI application" traceback, is absorbed here. Every WebSocket
      session ends with one line in the server log (INFO), none with a traceback.
    """

    def __init__(self, app: Any, idle_timeout: float):
        self.app, self.idle_timeout = app, idle_timeout

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        # how the connection ended: "idle" (closed here), "client" (the client closed it:
        # its close code, if it came before the server's close), "gone" (mid-answer); None
        # while it is open, or when the server closed it
        ended: dict[str, Any] = {"how": None, "code": None}

        async def guarded_receive() -> dict:
            while True:
                try:
                    if self.idle_timeout:
                        message = await asyncio.wait_for(receive(), self.idle_timeout)
                    else:
                        message = await receive()
                except TimeoutError:
                    ended["how"] = "idle"
                    return {"type": "websocket.disconnect", "code": 1001}
                if message["type"] == "websocket.disconnect":
                    ended["how"], ended["code"] = "client", message.get("code")
                    return message
                if message["type"] != "websocket.receive" or _is_object(message.get("text")):
                    return message
                await guarded_send({"type": "websocket.send", "text": _INVALID_MESSAGE})

        async def guarded_send(message: dict) -> None:
            closing = message["type"] == "websocket.close"
            if closing and ended["how"] == "client":
                return  # the client closed it already: nothing left to close
            try:
                await send(message)
            except OSError:  # uvicorn's ClientDisconnected: the client is gone
                if ended["how"] is None:
                    ended["how"] = "client" if closing else "gone"
                if not closing:
                    raise  # the endpoint stops answering (Starlette: WebSocketDisconnect)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except (WebSocketDisconnect, OSError, RuntimeError):
            # OpenEnv answering a client that is gone (its error reply, then its close),
            # or its goodbye to a session closed for idling
            if ended["how"] is None:
                raise
        _log_end(scope, ended)


def _log_end(scope: dict, ended: dict[str, Any]) -> None:
    """The one line a WebSocket session leaves in the server log."""
    client = scope.get("client")
    who = f"{client[0]}:{client[1]}" if client else "a client"
    how, code = ended["how"], ended["code"]
    if how == "idle":
        why = "idle, closed by the server"
    elif how == "client":
        why = "disconnected" + ("" if code is None else f" (code {code})")
    elif how == "gone":
        why = "the client went away while the server was answering"
    else:
        why = "closed"
    log.info("%s - WebSocket session ended: %s", who, why)


_INVALID_MESSAGE = json.dumps(
    {
        "type": "error",
        "data": {"code": "INVALID_MESSAGE", "message": "send a JSON object as a text frame"},
    }
)


def _is_object(text: str | None) -> bool:
    """A text frame OpenEnv can dispatch: a JSON object, or text that is not JSON at all
    (OpenEnv answers that with ``INVALID_JSON`` itself)."""
    if text is None:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except RecursionError:  # nested too deeply for OpenEnv's own json.loads too
        return False
    except ValueError:
        return True


def build_app(
    task: str,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
) -> Any:
    """The ASGI app serving ``task`` (any registered task can be reset into)."""
    if task not in env_ids():
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(env_ids())}")

    def factory() -> ServedEnv:
        return ServedEnv(task)

    factory.__name__ = f"ServedEnv[{task}]"
    app = create_app(
        factory,
        ClinbenchAction,
        ClinbenchObservation,
        env_name="clinbench",
        max_concurrent_envs=max_sessions,
    )

    @app.get("/tasks", tags=["Environment Info"])
    def tasks() -> dict[str, Any]:
        """The registered tasks, each with its action schema and macro-actions."""
        return {"default": task, "tasks": task_catalogue()}

    app.add_middleware(SessionGuard, idle_timeout=idle_timeout)
    return app


def server(
    task: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    log_level: str = "warning",
) -> Any:
    """A ``uvicorn.Server`` for :func:`build_app` (``.run()`` blocks; see also
    :func:`serve_in_thread`)."""
    import uvicorn

    config = uvicorn.Config(
        build_app(task, max_sessions=max_sessions, idle_timeout=idle_timeout),
        host=host,
        port=port,
        ws_max_size=max_message_bytes,
        ws_per_message_deflate=False,  # compressing ~20 kB frames costs more than loopback saves
        log_level=log_level,
        lifespan="off",
    )
    return uvicorn.Server(config)


def serve_in_thread(task: str, host: str = DEFAULT_HOST, port: int = 0, **kwargs: Any):
    """Start a server in a daemon thread; returns (server, ``ws://host:port``).

    ``port=0`` takes a free port. Stop it with ``server.should_exit = True``.
    """
    import socket
    import threading

    if port == 0:
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    srv = server(task, host=host, port=port, **kwargs)
    thread = threading.Thread(target=srv.run, daemon=True, name=f"clinbench-serve-{port}")
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the server on {host}:{port} did not start")
        time.sleep(0.02)
    return srv, f"ws://{host}:{port}"
