"""Agent isolation for evaluation: the trained agent in a process of its own.

In-process, the agent contract keeps accidents out but is no security boundary: code in
the harness's interpreter can reach the scored environment, the evaluation key and the
results folder. ``--isolate-agents`` closes that: after training, the agent is pickled
into a fresh interpreter (started with ``python -m clinbench.isolation``, so it inherits
no memory of the harness, in a temporary working folder, without the key's
environment variable) that receives observations and returns actions over a socket.
The scored environment, the key and the results folder stay in the harness.

The child plays exactly what the in-process agent would: it unpickles the same state
and is reset with the same acting seeds (tested). Observations often refer to the same
read-only arrays step after step (a world's visible attributes): each is sent once per
episode and recalled by reference after that (:class:`_Wire`), which halves the cost
of a step.
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import os
import pickle
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from clinbench.agents.registry import PLUGIN_MODULE_PREFIX
from clinbench.evaluation_key import KEY_VARIABLE

#: Arrays smaller than this are sent every time (a reference would save nothing).
_MIN_SHARED_BYTES = 512
#: The child's arrays received this episode, by the harness's id of them.
_RECEIVED: dict[int, np.ndarray] = {}


def _immutable(a: np.ndarray) -> bool:
    """Read-only all the way down (a read-only view of a writeable array may change)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None or isinstance(a, bytes)


def _remember(key: int, data: bytes, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    array = np.frombuffer(data, dtype=dtype).reshape(shape)  # read-only, like the original
    _RECEIVED[key] = array
    return array


def _recall(key: int) -> np.ndarray:
    return _RECEIVED[key]


class _Wire:
    """Pickles what the harness sends; a large read-only array goes once per episode."""

    def __init__(self) -> None:
        self.sent: dict[int, np.ndarray] = {}  # kept alive, so no id is reused
        self.table = copyreg.dispatch_table.copy()
        self.table[np.ndarray] = self._reduce

    def _reduce(self, a: np.ndarray):
        if a.nbytes < _MIN_SHARED_BYTES or a.dtype.hasobject or not _immutable(a):
            return a.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        key = id(a)
        if key in self.sent:
            return _recall, (key,)
        self.sent[key] = a
        return _remember, (key, a.tobytes(), a.dtype.str, a.shape)

    def dumps(self, message: Any) -> bytes:
        f = io.BytesIO()
        pickler = pickle.Pickler(f, pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = self.table
        pickler.dump(message)
        return f.getvalue()

    def new_episode(self) -> None:
        self.sent.clear()


_HEADER = struct.Struct("<Q")


def send_frame(sock: socket.socket, payload: bytes) -> None:
    """One length-prefixed frame, in one system call."""
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def recv_frame(sock: socket.socket) -> bytes:
    """The next frame (``EOFError`` when the other side has gone)."""
    data = sock.recv(1 << 16)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = sock.recv(1 << 20)
        if not more:
            raise EOFError("the other side closed the socket")
        data += more
    return data[_HEADER.size :]


class IsolatedAgentError(RuntimeError):
    """The agent's process failed or died (its error is in the message)."""


class IsolatedAgent:
    """A proxy with the agent interface (``reset``, ``act``, ``episode_stats``) whose
    agent lives in a child process."""

    def __init__(self, agent: Any):
        self.name = getattr(agent, "name", type(agent).__name__)
        self.learning = getattr(agent, "learning", False)
        try:
            payload = pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - any pickling failure is the agent's
            raise IsolatedAgentError(
                f"agent {self.name!r} cannot be isolated: it does not pickle ({exc})"
            ) from None
        ours, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if k != KEY_VARIABLE}
        self._cwd = tempfile.TemporaryDirectory(prefix="clinbench-agent-")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "clinbench.isolation", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            env=env,
            cwd=self._cwd.name,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._sock = ours
        self._wire = _Wire()
        # plugin files are imported under a module name of their path's hash: the
        # child imports the same files the same way before it unpickles the agent
        files = [
            m.__file__
            for name, m in list(sys.modules.items())
            if name.startswith(PLUGIN_MODULE_PREFIX) and getattr(m, "__file__", None)
        ]
        self._call("load", (files, payload))

    def _call(self, op: str, arg: Any = None) -> Any:
        try:
            send_frame(self._sock, self._wire.dumps((op, arg)))
            status, value = pickle.loads(recv_frame(self._sock))
        except (EOFError, OSError) as exc:
            code = self._proc.poll()
            raise IsolatedAgentError(
                f"agent {self.name!r}: its process ended (exit code {code}) during {op!r}: {exc}"
            ) from None
        if status != "ok":
            raise IsolatedAgentError(f"agent {self.name!r} failed in {op!r}:\n{value}")
        return value

    def reset(self, seed: Any = None) -> None:
        self._wire.new_episode()
        self._call("reset", seed)

    def act(self, obs: Any) -> Any:
        return self._call("act", obs)

    def episode_stats(self) -> dict[str, float]:
        return self._call("episode_stats")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            send_frame(self._sock, pickle.dumps(("close", None)))
        with contextlib.suppress(Exception):
            self._sock.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._cwd.cleanup()


@contextlib.contextmanager
def player(agent: Any, isolate: bool) -> Iterator[Any]:
    """``agent`` itself, or (``isolate``) its proxy in a child process, closed after."""
    if not isolate:
        yield agent
        return
    proxy = IsolatedAgent(agent)
    try:
        yield proxy
    finally:
        proxy.close()


def _serve(sock: socket.socket) -> None:
    """The child's loop: load the agent, then answer reset / act / episode_stats."""
    import traceback

    agent = None
    while True:
        try:
            op, arg = pickle.loads(recv_frame(sock))
        except EOFError:
            return
        if op == "close":
            return
        try:
            if op == "load":
                from clinbench.agents.registry import load_plugin_file

                files, payload = arg
                for path in files:
                    load_plugin_file(path)
                agent, value = pickle.loads(payload), None
            elif op == "reset":
                _RECEIVED.clear()
                value = agent.reset(arg)
            elif op == "act":
                value = agent.act(arg)
            elif op == "episode_stats":
                stats = getattr(agent, "episode_stats", None)
                value = dict(stats()) if stats is not None else {}
            else:
                raise ValueError(f"unknown request {op!r}")
        except Exception:  # noqa: BLE001 - reported to the harness, which raises
            send_frame(sock, pickle.dumps(("error", traceback.format_exc())))
        else:
            send_frame(sock, pickle.dumps(("ok", value), pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        _serve(socket.socket(fileno=int(sys.argv[1])))
