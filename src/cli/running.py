"""`$PAPERSCOPE_HOME/serve.json`: where the `paperscope serve` of a data directory runs, while it runs.

The server holds the Milvus Lite file's lock for as long as it runs, so a command of the same home cannot open
the store. `ask`, `retrieve`, `papers` and `chat` then go through it by themselves (`own_server`): the model and
the store are loaded there already, so the answer comes in a fraction of a fresh process's time. The other
commands, finding this record (its process alive), say where the server is and how to use it (`--server URL`, or
PAPERSCOPE_SERVER) instead of failing on the lock. A record left by a server that died is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

RECORD = "serve.json"
SERVER_ENV = "PAPERSCOPE_SERVER"


def record_path(home: Path) -> Path:
    return Path(home).expanduser() / RECORD


def write_record(home: Path, url: str, kb: str) -> Path:
    """Say that this process serves `home` at `url`."""
    path = record_path(home)
    data = {"url": url, "pid": os.getpid(), "kb": kb, "home": str(Path(home).expanduser().resolve()), "at": time.time()}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)
    return path


def remove_record(home: Path) -> None:
    """Remove the record if it is this process's."""
    found = read_record(home, alive_only=False)
    if found is not None and found.get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            record_path(home).unlink()


def read_record(home: Path, *, alive_only: bool = True) -> dict[str, Any] | None:
    """The record of `home`'s server ({"url", "pid", "kb", ...}), or None (none, unreadable, or its process gone)."""
    try:
        data = json.loads(record_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str) or not isinstance(data.get("pid"), int):
        return None
    if alive_only and not _alive(data["pid"]):
        return None
    return data


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def home_from_env() -> Path:
    """The data directory as the environment names it (only PAPERSCOPE_HOME sets it)."""
    from ..config import Settings

    return Path(os.environ.get("PAPERSCOPE_HOME") or Settings.model_fields["home"].default).expanduser()


def own_server(home: Path | None = None) -> str | None:
    """The URL of the `paperscope serve` running on this data directory (PAPERSCOPE_HOME), or None."""
    found = read_record(home or home_from_env())
    return str(found["url"]) if found is not None else None


def server_hint(home: Path | None = None) -> str | None:
    """One line for a command that found the store locked by a running server of this home, or None."""
    found = read_record(home or home_from_env())
    if found is None:
        return None
    url = found["url"]
    return (
        f"paperscope serve is running at {url} (pid {found['pid']}) and holds this store: use --server {url} "
        f"(or {SERVER_ENV}={url}); ask, retrieve, chat, papers, ingest, remove and check take it"
    )
