"""Cell files: written atomically, read back with every way they can be broken detected."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

REQUIRED = ("format", "hash", "key", "config", "status")
#: Layout of a cell record. 2: the family's episode metrics under ``"metrics"`` and
#: ``"progress_by_time"`` (1 had recruitment's fields at the top level of an episode).
FORMAT = 2


class CorruptCell(ValueError):
    """A cell file that cannot be trusted (truncated, not JSON, wrong hash, incomplete)."""


def cell_path(runs: Path, cell_hash: str) -> Path:
    return runs / f"{cell_hash}.json"


def write_json_atomic(path: Path, data: Any, compact: bool = False) -> None:
    """Write to a temporary file in the same folder, then ``os.replace`` it into place.

    ``compact``: no indentation (cell files: hundreds of episodes each, committed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            if compact:
                json.dump(data, f, separators=(",", ":"), sort_keys=True)
            else:
                json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temps(folder: Path) -> list[Path]:
    """Delete the temporary files of writes a killed sweep never finished; return them."""
    stale = sorted(folder.glob(".*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def read_cell(path: Path, expected_hash: str | None = None) -> dict[str, Any]:
    """The record of a cell file, or CorruptCell saying what is wrong with it."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCell(f"{path.name}: unreadable ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(record, dict) or any(k not in record for k in REQUIRED):
        raise CorruptCell(f"{path.name}: missing fields")
    if record["format"] != FORMAT:
        raise CorruptCell(
            f"{path.name}: cell format {record['format']!r}, this clinbench reads {FORMAT} "
            "(re-run the sweep)"
        )
    if record["hash"] != path.stem or (
        expected_hash is not None and record["hash"] != expected_hash
    ):
        raise CorruptCell(f"{path.name}: hash does not match its file name")
    if record["status"] == "ok":
        if not isinstance(record.get("episodes"), list) or not record["episodes"]:
            raise CorruptCell(f"{path.name}: no evaluation episodes")
    elif record["status"] != "failed":
        raise CorruptCell(f"{path.name}: unknown status {record['status']!r}")
    return record
