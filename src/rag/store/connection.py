"""Opening Milvus: where a knowledge base lives (a Milvus Lite data directory or a server URI), the Lite lock,
and the in-process Lite server that every store of one path shares.

Milvus Lite notes (checked against milvus-lite 3.2.2 + pymilvus 3.0.2):
- The Lite file is a directory, locked by the process that serves it (an flock on its LOCK file): one
  process at a time. Opening fails the same way when the lock is held and when the data is damaged, so
  the store probes the lock itself to say which (`lite_problem`).
- Lite builds its BM25 index in Python tuples on the first search (1.2 GB at 100,000 chunks): the store has it
  build `lite_bm25.CompactBM25` instead, the same scores in arrays, before it opens a Lite path.
- A Lite file is served by an in-process gRPC server shared by every client of that path; the last
  PaperStore to close it stops the server (and frees the data directory's lock): `connect` counts the
  users of a path and `disconnect` releases the server when the count reaches zero.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...config import Settings
from ...errors import StoreError
from ..lite_files import damaged_file, is_server_uri, lite_path
from ..writable import read_only_problem
from .milvus import MilvusClient

# Stores open on each Lite path in this process (see the module notes).
_LITE_USERS: dict[str, int] = {}
_LITE_LOCK = threading.Lock()
# Lite servers `peek_client(keep_warm=True)` left running for the store opened next (see `release_warm`).
_WARM: set[str] = set()
LOCK_WAIT = 5.0  # seconds a failing connection to this process's own Lite server is tried again


def _release(path: str) -> None:
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def _why(lite: str | None, exc: Exception) -> str:
    """Why connecting failed, in one line: for a Lite path, what holds it (another program, a damaged file), unless
    this process serves it itself, when what failed is the connection."""
    if not lite:
        return str(exc)
    if _lite_running(lite):  # the lock is this process's own: say what failed
        return f"this process serves it, and connecting failed: {' '.join(str(exc).split())[:300]}"
    return lite_problem(lite)


def _client(target: str, token: str, lite: str | None) -> MilvusClient:
    """A client of `target`, tried again (up to LOCK_WAIT seconds) when it is a Lite path this process serves: its
    gRPC server, busy in another thread, was slow to answer the connection."""
    if lite is not None:
        from .lite_bm25 import install  # imports milvus_lite (0.1 s), which a server URI never needs

        install()
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            return MilvusClient(uri=target, token=token)
        except Exception:
            if lite is None or time.monotonic() > deadline or not _lite_running(lite):
                raise
            time.sleep(0.2)


def resolve_uri(settings: Settings, create: bool = True) -> tuple[str, str | None]:
    """(uri for MilvusClient, Lite data path or None for a server); no directory is made unless `create`."""
    uri = settings.store.uri or ""
    kb = settings.store.kb
    if is_server_uri(uri):
        return uri, None
    file = lite_path(settings)
    if file is None:
        raise StoreError(
            f"knowledge base {kb!r}: MILVUS_URI {uri!r} is neither a server (http://host:19530) nor a "
            f"Milvus Lite file, whose name must end in .db (e.g. {uri.rstrip('/')}/milvus.db)"
        )
    if not create and not file.exists():
        raise StoreError(
            f"knowledge base {kb!r} does not exist: there is no store at {file} yet "
            f"(`paperscope ingest PATH --kb {kb}` creates it)"
        )
    if file.exists() and not file.is_dir():
        raise StoreError(f"knowledge base {kb!r}: {lite_problem(str(file))}")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"knowledge base {kb!r}: cannot create {file.parent}: {exc.strerror or exc}") from exc
    return str(file), str(file)


def connect(settings: Settings, create: bool = True) -> tuple[MilvusClient, str, str | None]:
    """(client, uri, Lite data path or None) for the store `settings` name; a Lite path gains a user, which
    `disconnect` gives back."""
    kb = settings.store.kb
    uri, lite_path = resolve_uri(settings, create)
    try:
        client = _client(uri, settings.store.token or "", lite_path)
    except Exception as exc:
        raise StoreError(f"knowledge base {kb!r}: cannot open Milvus at {uri}: {_why(lite_path, exc)}") from exc
    if lite_path is not None:
        with _LITE_LOCK:
            _LITE_USERS[lite_path] = _LITE_USERS.get(lite_path, 0) + 1
    return client, uri, lite_path


def disconnect(client: MilvusClient, lite_path: str | None) -> None:
    """Close `client`, and stop the Lite server of `lite_path` when no other store of this process uses it."""
    try:
        client.close()
    finally:
        if lite_path is not None:
            with _LITE_LOCK:
                users = _LITE_USERS.get(lite_path, 1) - 1
                if users > 0:
                    _LITE_USERS[lite_path] = users
                else:
                    _LITE_USERS.pop(lite_path, None)
            if users <= 0:
                _release(lite_path)
                with _LITE_LOCK:
                    _WARM.discard(lite_path)


def release_warm() -> None:
    """Stop the Lite servers kept warm for a store that was never opened (a command that failed before it)."""
    with _LITE_LOCK:
        idle = [path for path in _WARM if not _LITE_USERS.get(path)]
        _WARM.difference_update(idle)
    for path in idle:
        _release(path)


def knowledge_bases(client: MilvusClient) -> list[str]:
    """Names of the knowledge bases in a Milvus instance (both collections present)."""
    names = set(client.list_collections())
    return sorted(n[: -len("_chunks")] for n in names if n.endswith("_chunks") and f"{n[:-7]}_papers" in names)


def lite_problem(path: str) -> str:
    """Why a Milvus Lite data directory cannot be opened: another process holds its lock, or it is damaged.

    Lite reports both as "Open local milvus failed"; the lock (an flock on LOCK) tells them apart.
    """
    data = Path(path)
    if data.exists() and not data.is_dir():
        return (
            f"{data} is not a Milvus Lite data directory (a file is in its place, e.g. from an older Milvus Lite); "
            "move it aside and ingest again"
        )
    if read_only := read_only_problem(data):  # fails to open like damaged data (see writable.py)
        return read_only
    lock = data / "LOCK"
    try:
        import fcntl
    except ImportError:  # Windows: no flock to probe
        return "another process may be using this Milvus Lite file, or it is damaged"
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return f"the Milvus Lite data at {data} is damaged (no readable LOCK file); move it aside and ingest again"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return "another process is using this Milvus Lite file (it holds the lock); wait for it to finish"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return f"the Milvus Lite data at {data} is damaged; move it aside and ingest again"


def lite_damage(path: str | Path, kb: str) -> str | None:
    """Which file of knowledge base `kb` in the Milvus Lite data at `path` is damaged and what to do, one line; None
    when every file of its two collections reads (Milvus Lite's own errors name none)."""
    for collection in (f"{kb}_chunks", f"{kb}_papers"):
        folder = Path(path) / "collections" / collection
        found = damaged_file(folder) if folder.is_dir() else None
        if found is None:
            continue
        file, why = found
        if file.parent.name == "indexes":
            todo = "delete that file: Milvus Lite builds it again from the collection's data"
        elif collection.endswith("_chunks"):
            todo = (
                f"move {folder} aside, then `paperscope check --repair --kb {kb}` makes the collection again and "
                "ingests its papers again from their files"
            )
        else:
            todo = (
                f"move {folder} aside and ingest the papers' files again (`paperscope ingest PATH --kb {kb}`); "
                f"`paperscope check --repair --kb {kb}` then deletes the chunks no paper claims"
            )
        return f"collection {collection} is damaged: {file} cannot be read ({why}); {todo}"
    return None


def _lite_running(path: str) -> bool:
    """True when this process already serves the Milvus Lite data at `path` (a store is open on it)."""
    from milvus_lite.server_manager import server_manager_instance

    return os.path.abspath(path) in getattr(server_manager_instance, "_servers", {path: None})


@contextmanager
def peek_client(settings: Settings, *, keep_warm: bool = False) -> Iterator[MilvusClient | None]:
    """A client of the Milvus that `settings.store` names, or None when it is a Milvus Lite file not made yet.

    Creates nothing. A Milvus Lite server this opens is stopped again on exit (one a store of this
    process serves is left alone), unless `keep_warm`: then the store the caller opens next serves from it
    (opening Milvus Lite loads every collection, a good part of a short command's time) and stops it when it
    closes, or the process does at exit. StoreError, one line, when Milvus cannot be reached.
    """
    uri, kb = settings.store.uri, settings.store.kb
    lite: str | None = None
    if not is_server_uri(uri):
        path = lite_path(settings)
        if path is None or not path.is_dir():
            yield None  # no Lite data yet, or not a Lite file name (the store says so when it is opened)
            return
        lite = str(path)
    target = lite or str(uri)
    started = lite is not None and not _lite_running(lite)
    try:
        client = _client(target, settings.store.token or "", lite)
    except Exception as exc:
        raise StoreError(f"knowledge base {kb!r}: cannot open Milvus at {target}: {_why(lite, exc)}") from exc
    try:
        yield client
    finally:
        try:
            client.close()
        finally:
            if started and lite is not None and keep_warm:
                with _LITE_LOCK:
                    _WARM.add(lite)
            elif started and lite is not None:
                _release(lite)
