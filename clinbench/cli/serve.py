"""``clinbench serve``: one task (any registered task on reset) as an OpenEnv app.

Needs the optional extra ``serve``. See :mod:`clinbench.serve.app` for the protocol and
``docs/serving.md`` for clients.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Annotated

import typer

from clinbench.cli.common import err_console, examples, fail, resolve_task
from clinbench.serve import INSTALL_HINT, available


def register(app: typer.Typer) -> None:
    app.command(
        "serve",
        epilog=examples(
            "clinbench serve --task recruitment/hard_bench",
            "clinbench serve -t effective_drug --port 8000 --max-sessions 32",
            "clinbench sweep --agents heuristic,random env.remote=ws://127.0.0.1:7860",
            "clinbench run -a heuristic -t hard_bench -s 1 --remote ws://127.0.0.1:7860",
        ),
    )(serve_command)


def serve_command(
    task: Annotated[
        str,
        typer.Option(
            "--task",
            "-t",
            help="Task served by default, e.g. hard_bench (a reset may name any other task).",
        ),
    ],
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535)] = 7860,
    max_sessions: Annotated[
        int, typer.Option("--max-sessions", min=1, help="Concurrent WebSocket sessions.")
    ] = 64,
    idle_timeout: Annotated[
        float,
        typer.Option(
            "--idle-timeout", min=0.0, help="Close a session silent this many seconds (0: never)."
        ),
    ] = 300.0,
    max_message_bytes: Annotated[
        int, typer.Option("--max-message-bytes", min=1024, help="Largest message accepted.")
    ] = 1 << 20,
) -> None:
    """Serve a task over OpenEnv's WebSocket protocol (/ws), with /health, /schema, /tasks."""
    env_id = resolve_task(task)
    if not available():
        fail(f"clinbench serve needs the serve extra: {INSTALL_HINT}")
    sock = _bind(host, port)  # first: announce only an address that is really served
    if not _is_loopback(host):
        err_console.print(
            f"[bold yellow]warning:[/] binding {host}: any machine that reaches this port can "
            "open sessions (there is no authentication)"
        )
    from clinbench.serve.app import server

    srv = server(
        env_id,
        host=host,
        port=port,
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        max_message_bytes=max_message_bytes,
        log_level="info",
    )
    err_console.print(f"serving {env_id} on ws://{host}:{port}/ws (Ctrl-C stops)")
    srv.run(sockets=[sock])


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, else exit 2 saying why (busy port, unknown host)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        fail(f"cannot resolve --host {host!r}: {exc.strerror}")
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)  # clients that connect before the app starts wait, not fail
    except OSError as exc:
        sock.close()
        busy = exc.errno == errno.EADDRINUSE
        hint = " (another server listens there; choose --port)" if busy else ""
        fail(f"cannot listen on {host}:{port}: {exc.strerror}{hint}")
    return sock


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
