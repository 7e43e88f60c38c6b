"""The evaluation key: the secret (or published) root of every evaluation world.

Every world a cell is scored on, every validation world its learning curve is scored on,
every operating-characteristic world and every acting seed an agent is handed is a
keyed hash (BLAKE2b with the key) of (cell seed, purpose, index, and for acting seeds
the agent and task). Without the key, an agent that knows the small public cell seeds
and its own acting seed can infer nothing about the world it plays; an acting seed is
never a function of a world seed.

Two modes (``docs/evaluation.md``):

- ``public``: :data:`PUBLIC_KEY`, published here. Every number reproduces bit for bit,
  and so anyone can compute the evaluation worlds: an open test set for development.
- ``held_out``: a fresh key from the OS's entropy (or one handed in from a file or
  ``$CLINBENCH_EVALUATION_KEY``). While cells run, the manifest and the cell files hold
  only its SHA-256 commitment; the key itself is kept in the results folder with
  owner-only permissions and revealed by the report, so anyone can then check the
  commitment and re-run every number.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The published key of the public mode (the canonical run's). 256 bits, drawn once.
PUBLIC_KEY = bytes.fromhex("3d1938ae288a2e8a51b6d81046ea64922fb8df983729840add6965ec5f6497c0")
#: Where a held-out key is kept in a results folder (owner-only permissions).
KEY_FILE = "evaluation_key"
#: The environment variable a held-out key (hex) may be handed in by.
KEY_VARIABLE = "CLINBENCH_EVALUATION_KEY"
MODES = ("public", "held_out")
#: Keys shorter than this are refused (128 bits).
MIN_KEY_BYTES = 16


class EvaluationKeyError(ValueError):
    """A key that cannot be used (malformed, too short, or not the folder's)."""


@dataclass(frozen=True)
class EvaluationKey:
    """A key and its mode; :meth:`derive` is the one keyed derivation of every seed."""

    key: bytes
    mode: str = "public"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise EvaluationKeyError(f"unknown key mode {self.mode!r}; valid: {', '.join(MODES)}")
        if len(self.key) < MIN_KEY_BYTES or len(self.key) > 64:
            raise EvaluationKeyError(
                f"an evaluation key has {MIN_KEY_BYTES} to 64 bytes, got {len(self.key)}"
            )

    @property
    def commitment(self) -> str:
        """SHA-256 of the key (hex): published while the key is held out."""
        return commitment(self.key)

    def derive(self, *parts: Any) -> int:
        """A 64-bit integer keyed-hashed from ``parts`` (ints and strings)."""
        message = json.dumps(parts, separators=(",", ":")).encode()
        digest = hashlib.blake2b(message, key=self.key, digest_size=8).digest()
        return int.from_bytes(digest, "little")

    def about(self) -> dict[str, str]:
        """What a manifest or a cell file records of the key: its mode and commitment."""
        return {"mode": self.mode, "commitment": self.commitment}

    def __repr__(self) -> str:  # never print a held-out key by accident
        return f"EvaluationKey(mode={self.mode!r}, commitment={self.commitment[:16]}...)"


PUBLIC = EvaluationKey(PUBLIC_KEY, "public")


def commitment(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()


def verify(key: bytes, committed: str) -> bool:
    """Whether ``key`` is the key behind the commitment ``committed``."""
    return hmac.compare_digest(commitment(key), committed.lower())


def fresh() -> EvaluationKey:
    """A new held-out key from the OS's entropy (256 bits)."""
    return EvaluationKey(secrets.token_bytes(32), "held_out")


def parse(text: str, where: str) -> EvaluationKey:
    """A held-out key from its hex text; ``where`` names the source in errors."""
    text = text.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise EvaluationKeyError(f"{where}: an evaluation key is hex digits") from None
    try:
        return EvaluationKey(key, "held_out")
    except EvaluationKeyError as exc:
        raise EvaluationKeyError(f"{where}: {exc}") from None


def read(path: Path) -> EvaluationKey:
    """The held-out key stored in ``path``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise EvaluationKeyError(f"cannot read the evaluation key {path}: {exc.strerror}") from None
    return parse(text, str(path))


def store(results: Path, key: EvaluationKey) -> Path:
    """Keep a held-out key in ``results`` (owner-only), for resume and for the reveal."""
    path = results / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.key.hex() + "\n")
    os.chmod(path, 0o600)
    return path


def for_sweep(
    results: Path, *, held_out: bool, key_file: Path | None, resume: bool
) -> EvaluationKey:
    """The key of a sweep into ``results``.

    A key handed in (``key_file``, else ``$CLINBENCH_EVALUATION_KEY``) is used as given;
    else a key stored in the folder is reused when resuming; else ``held_out`` draws a
    fresh one; else the public key. A key handed in that is not the folder's stored key
    is refused on resume (the folder's cells would mix two sets of worlds).
    """
    stored_path = results / KEY_FILE
    stored = read(stored_path) if stored_path.exists() else None
    given = None
    if key_file is not None:
        given = read(key_file)
    elif os.environ.get(KEY_VARIABLE):
        given = parse(os.environ[KEY_VARIABLE], f"${KEY_VARIABLE}")
    if given is not None:
        if resume and stored is not None and stored.key != given.key:
            raise EvaluationKeyError(
                f"{results} holds another evaluation key ({KEY_FILE}, commitment "
                f"{stored.commitment[:16]}...); use another results folder or --no-resume"
            )
        return given
    if stored is not None and resume:
        return stored
    return fresh() if held_out else PUBLIC
