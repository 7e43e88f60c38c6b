"""A served environment as a clinbench :class:`~clinbench.env.base.Env` (extra ``serve``).

``make_remote("ws://127.0.0.1:7860", "recruitment/hard_bench")`` plays the task on a
``clinbench serve`` server through OpenEnv's WebSocket client (``env.remote=ws://...``
in a sweep, ``--remote`` for ``clinbench run``). Agents get the native
observation the server sent (exact, :mod:`clinbench.serve.wire`), so the same seeds give
the same scores as in-process. ``spec`` and ``macro_space`` are built locally from the
task's public parameters; the server's task version must match.

Network failures are retried: the client reconnects, resets the same seed and replays
the actions of the episode so far (environments are deterministic given the seed), at
most ``retries`` times per call with a growing pause, then raises
:class:`RemoteEnvError`. Every wait has a timeout, so a dead server fails a cell, never
hangs it. A protocol error from the server (a malformed action, say) is a
``ValueError`` at once, as in-process. Numpy numbers in an action's fields are sent as
the Python values they hold (``np.int64(5)`` as ``5``), which the server reads as the
native environment reads the numpy ones.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

from clinbench.env.base import Env
from clinbench.env.registry import make, spec
from clinbench.serve.wire import ObservationDecoder, decode


class RemoteEnvError(ConnectionError):
    """The served environment could not be reached within the retries."""


def make_remote(url: str, task: str, retries: int = 3, timeout: float = 30.0, **overrides: Any):
    """A :class:`RemoteEnv` playing ``task`` (with parameter ``overrides``) at ``url``."""
    return RemoteEnv(url, task, overrides, retries=retries, timeout=timeout)


class RemoteEnv(Env):
    """clinbench's ``Env`` interface over a ``clinbench serve`` session."""

    def __init__(
        self,
        url: str,
        task: str,
        overrides: dict[str, Any] | None = None,
        retries: int = 3,
        timeout: float = 30.0,
        backoff: float = 0.2,
    ):
        local = make(task, **(overrides or {}))  # public spec and macro-actions only
        self.url, self.task = url.rstrip("/"), task
        self.overrides = dict(overrides or {})
        self.spec = local.spec
        self.macro_space = local.macro_space
        self.retries, self.timeout, self.backoff = int(retries), float(timeout), backoff
        self._client: Any = None
        self._decode = ObservationDecoder()
        self._episode: dict[str, Any] | None = None
        self._played: list[dict[str, Any]] = []
        self.reconnects = 0
        self._version_checked = False

    def __repr__(self) -> str:
        return f"RemoteEnv({self.url!r}, {self.task!r})"

    # ------------------------------------------------------------------ Env API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        data: dict[str, Any] = {"seed": seed, "task": self.task, "to_dict": False}
        if self.overrides:
            data["overrides"] = self.overrides
        if options:
            data["options"] = dict(options)
        payload = self._call(lambda c: c.reset(**data), replay=False, reset=data)
        self._played = []
        obs, _, _, info = self._parse(payload)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._episode is None:
            raise RuntimeError("call reset() first")
        fields = dict(action) if isinstance(action, dict) else action.to_dict()
        fields = {k: _plain(v) for k, v in fields.items()}
        payload = self._call(lambda c: c.step(fields), replay=True)
        self._played.append(fields)
        obs, reward, done, info = self._parse(payload)
        return obs, reward, done, False, info

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ transport
    def _connect(self) -> Any:
        from openenv.core.generic_client import GenericEnvClient

        if not self._version_checked:
            check_version(self.url, self.task)
            self._version_checked = True
        client = GenericEnvClient(
            base_url=self.url, connect_timeout_s=self.timeout, message_timeout_s=self.timeout
        )
        client.connect()
        return client

    def _call(self, request: Any, replay: bool, reset: dict[str, Any] | None = None) -> Any:
        """``request(client)`` with reconnect-and-replay on network failures."""
        attempt = 0
        while True:
            try:
                if self._client is None:
                    self._client = self._connect()
                    if replay:
                        self._replay()
                result = request(self._client)
                if reset is not None:
                    self._episode = reset
                    self._decode.reset()
                return result
            except RemoteEnvError:
                raise
            except Exception as e:
                if isinstance(e, RuntimeError) and not _network_error(e):
                    # the server answered with a protocol error (a bad action, say)
                    raise ValueError(str(e).removeprefix("Server error: ")) from None
                if not _network_error(e):
                    raise
                self._drop()
                attempt += 1
                if attempt > self.retries:
                    raise RemoteEnvError(
                        f"{self.url} ({self.task}): no answer after {self.retries} retries: {e}"
                    ) from e
                self.reconnects += 1
                time.sleep(self.backoff * attempt)

    def _replay(self) -> None:
        """Bring a new session to where the lost one was: same seed, same actions."""
        if self._episode is None:
            return
        if self._episode["seed"] is None:
            raise RemoteEnvError(
                f"{self.url} ({self.task}): the connection was lost in an unseeded episode, "
                "which cannot be replayed (reset with a seed)"
            )
        self._decode.reset()
        self._parse(self._client.reset(**self._episode))
        for fields in self._played:
            self._parse(self._client.step(fields))

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # the connection is gone already
                client.close()

    def _parse(self, result: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        data = result.observation
        obs = self._decode(data["native"])
        info = decode(data["info"])
        reward = 0.0 if result.reward is None else float(result.reward)
        return obs, reward, bool(result.done), info


def _plain(value: Any) -> Any:
    """A numpy number or bool as the Python value it holds (exact; JSON cannot carry
    ``np.int64`` or ``np.float32``), so it plays as it does in process; anything else
    as it is (the server checks it as the native environment would)."""
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        item = value.item()
        if type(item) in (int, float, bool):
            return item
    return value


def _network_error(e: BaseException) -> bool:
    """A failure of the connection or a full server (retried), not of the request."""
    if isinstance(e, (OSError, TimeoutError, EOFError)):
        return True
    if type(e).__module__.startswith("websockets"):
        return True
    return isinstance(e, RuntimeError) and "CAPACITY_REACHED" in str(e)


def remote_task_version(url: str, task: str) -> int:
    """The served task's version (``/tasks``), to check client and server agree."""
    import json
    import urllib.request

    http = url.replace("ws://", "http://").replace("wss://", "https://")
    with urllib.request.urlopen(f"{http}/tasks", timeout=10) as r:
        catalogue = json.load(r)
    for entry in catalogue["tasks"]:
        if entry["task"] == task:
            return int(entry["version"])
    raise ValueError(f"{url} does not serve {task!r}")


def check_version(url: str, task: str) -> None:
    """``ValueError`` unless the server's task version is this client's."""
    theirs, ours = remote_task_version(url, task), spec(task).version
    if theirs != ours:
        raise ValueError(f"{url} serves {task} version {theirs}; this clinbench has version {ours}")
