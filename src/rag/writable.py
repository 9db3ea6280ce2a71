"""Can Milvus Lite write its data directory? It cannot open one it cannot write, not even to read it.

Milvus Lite 3.2 opens its LOCK file for writing (`O_CREAT | O_RDWR`, to flock it) before anything else
(`milvus_lite/db.py`, `_acquire_lock`), and a new data directory has to be created, so a read-only one
(`chmod -R a-w`, a read-only mount, immutable files) fails to open for every command that uses the store,
`papers` and `ask` as much as `ingest`, and fails the same way damaged data does. `read_only_problem` tells
the two apart by doing what Lite does first: create a file in the data directory (in its nearest existing
parent when there is none yet) and open LOCK for writing. The folders below are checked with
`os.access(W_OK)`, the kernel's own answer for this process: false on a read-only mount even for root,
true for root elsewhere, where root may indeed write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

__all__ = ["read_only_problem"]

_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}


def read_only_problem(data_dir: str | Path) -> str | None:
    """One line saying which path keeps Milvus Lite from writing `data_dir` and what still works; None if none."""
    data = Path(data_dir)
    if data.exists() and not data.is_dir():
        return None  # a file in its place: not a question of permissions
    found = _first_unwritable(data)
    if found is None:
        return None
    path, exc = found
    what = "is read-only" if exc.errno in _READ_ONLY else "cannot be written"
    why = f"{path} {what} ({exc.strerror or exc})"
    if not data.exists():
        return f"{why}: the Milvus Lite data {data} cannot be created there; set PAPERSCOPE_HOME to a writable folder"
    return (
        f"{why}: Milvus Lite must write to its data even to read it, so ingest, papers, ask, chat, eval, check and "
        "remove cannot use it (`paperscope parse` needs no store); make it writable, or copy it somewhere writable "
        "and point PAPERSCOPE_HOME (or MILVUS_URI) at the copy"
    )


def _first_unwritable(data: Path) -> tuple[Path, OSError] | None:
    """The first path Milvus Lite would fail to write when opening `data`, with the error; None if none."""
    existing = data
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".paperscope-write-probe-", dir=existing)
    except OSError as exc:
        return existing, exc
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    if existing != data:
        return None
    lock = data / "LOCK"
    if lock.exists():
        try:
            os.close(os.open(lock, os.O_RDWR))
        except OSError as exc:
            return lock, exc
    for root, dirs, _ in os.walk(data):
        for name in sorted(dirs):
            folder = Path(root, name)
            if not os.access(folder, os.W_OK):
                return folder, PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
    return None
