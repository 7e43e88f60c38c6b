"""Served environments (OpenEnv apps) and the remote client that plays them.

Needs the optional extra ``serve`` (``openenv-core``;
``pip install -c constraints.txt -e ".[serve]"``):
:mod:`clinbench.serve.app` builds the server (``clinbench serve``),
:mod:`clinbench.serve.remote` the :class:`~clinbench.env.base.Env` client, and
:mod:`clinbench.serve.wire` the exact encoding of native observations they share.
"""

from typing import Any
from urllib.parse import urlsplit

INSTALL_HINT = 'pip install -c constraints.txt -e ".[serve]"'


def available() -> bool:
    """Whether the ``serve`` extra (openenv-core) is installed."""
    try:
        import openenv.core.env_server  # noqa: F401
    except ImportError:
        return False
    return True


def remote_address(url: Any) -> str:
    """``url`` as ``ws://host:port`` if it is the address of a server (``ValueError``
    otherwise, or when the ``serve`` extra is missing)."""
    parts = urlsplit(url) if isinstance(url, str) else None
    valid = parts is not None and parts.scheme in ("ws", "wss") and bool(parts.netloc)
    if not valid or parts.path.strip("/"):
        raise ValueError(f"expected ws://host:port (a clinbench serve server), got {url!r}")
    if not available():
        raise ValueError(f"playing a served environment needs the serve extra: {INSTALL_HINT}")
    return url.rstrip("/")
