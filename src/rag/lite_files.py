"""Where a Milvus Lite knowledge base keeps its files, and the papers listing kept beside them.

`paperscope papers` on a fresh process spent ~1 s importing pymilvus alone (it imports pandas) to read a catalogue
that had not changed since the last time. So after reading the catalogue from the store, `papers` writes what it
listed to `listings/<Lite file name>.<kb>.json` beside the Lite data directory (by default
`$PAPERSCOPE_HOME/listings/milvus.db.papers.json`) with a signature of that directory: the path, size and
modification time of each of its files. The next `papers` uses that file only while the signature is the same.

Why the signature is enough: every write to the store (an ingest, a removal, a repair, a crash that left rows
behind) changes the files of the data directory by the time its process closes the store, and reads change none
(checked against milvus-lite 3.2.2, and in the tests). Only one process can open a Lite data directory at a time
(its lock), and `papers` writes nothing: the rows it read and the files it signs, both while it holds the store
open, are of the same state. Lite may still seal a write in the background after it returned, which makes a
listing written in the writer's own process go stale at once: safe (the store is read again), only slower.
A store a server holds (MILVUS_URI) is always read: its files are not here to sign. This module imports no Milvus code.

When Milvus Lite cannot read a collection, its error names no file; `damaged_file` reads the collection's files as
Milvus Lite reads them (checked against milvus-lite 3.2.2: schema.json and manifest.json are JSON, data and delta
files Parquet, index files faiss (.idx) or Arrow IPC (.sidx)) to say which one is damaged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Settings

_SERVER = re.compile(r"^(https?|tcp|unix)://|^unix:")
LISTING_VERSION = 2  # 2: rows with planned_chunks, n_chunks stored of a paper that is not ready


def is_server_uri(uri: str | None) -> bool:
    """True when the URI names a Milvus server (http, tcp or unix socket), not a Lite data directory."""
    return bool(_SERVER.match(uri or ""))


def lite_path(settings: Settings) -> Path | None:
    """The Lite data directory `settings` name (unset URI: milvus.db in the data directory); None for a server or
    a URI that is neither (connection.resolve_uri says why)."""
    uri = settings.store.uri
    if not uri:
        return (Path(settings.home).expanduser() / "milvus.db").resolve()
    if is_server_uri(uri) or not uri.endswith(".db"):
        return None
    return Path(uri).expanduser().resolve()


def signature(data_dir: Path) -> str | None:
    """A digest of every file's relative path, size and modification time under `data_dir`; None when it is
    missing or cannot be read whole."""
    if not data_dir.is_dir():
        return None
    entries = []
    try:
        for root, dirs, files in os.walk(data_dir):
            dirs.sort()
            for name in sorted(files):
                st = os.stat(os.path.join(root, name))
                entries.append(f"{os.path.relpath(os.path.join(root, name), data_dir)}\0{st.st_size}\0{st.st_mtime_ns}")
    except OSError:
        return None
    return hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape")).hexdigest()


def _listing_file(data_dir: Path, kb: str) -> Path:
    return data_dir.parent / "listings" / f"{data_dir.name}.{kb}.json"


def _settings_digest(settings: Settings) -> str:
    return hashlib.sha256(settings.model_dump_json().encode()).hexdigest()


def read_listing(settings: Settings) -> list[dict[str, Any]] | None:
    """The rows `write_listing` left for this knowledge base, while the store's files and the settings (without
    the knowledge base's own layer, which is kept in the store) are unchanged since."""
    data_dir = lite_path(settings)
    if data_dir is None:
        return None
    try:
        saved = json.loads(_listing_file(data_dir, settings.store.kb).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("version") != LISTING_VERSION:
        return None
    if not isinstance(saved.get("rows"), list) or saved.get("settings") != _settings_digest(settings):
        return None
    current = signature(data_dir)
    return saved["rows"] if current is not None and saved.get("signature") == current else None


def write_listing(settings: Settings, rows: list[dict[str, Any]]) -> None:
    """Keep `rows` (what `papers` lists) for the next `papers` with these settings (without the knowledge base's
    layer); call it while the store is open, so that no other process can write between reading the rows and
    signing them. Best effort: a listing that cannot be written is read from the store next time."""
    data_dir = lite_path(settings)
    current = signature(data_dir) if data_dir is not None else None
    if data_dir is None or current is None:
        return
    target = _listing_file(data_dir, settings.store.kb)
    try:
        target.parent.mkdir(exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(
            json.dumps(
                {
                    "version": LISTING_VERSION,
                    "signature": current,
                    "settings": _settings_digest(settings),
                    "rows": rows,
                },
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        os.replace(partial, target)  # whole or not at all: a reader never sees half a listing
    except OSError:
        return


def damaged_file(collection_dir: Path) -> tuple[Path, str] | None:
    """The first file of a Milvus Lite collection (its folder) that cannot be read, and why (one line): its schema,
    its manifest, a data or delta file, an index file; None when each one reads."""
    schema = collection_dir / "schema.json"
    try:
        _json_object(schema)
    except (OSError, ValueError) as exc:
        return schema, _why(exc)
    manifest = collection_dir / "manifest.json"
    try:
        listed = _json_object(manifest)
    except (OSError, ValueError) as exc:
        try:  # Milvus Lite falls back on the previous manifest: only both unreadable is damage
            listed = _json_object(collection_dir / "manifest.json.prev")
        except (OSError, ValueError):
            return manifest, _why(exc)
    partitions = listed.get("partitions")
    for name, part in (partitions if isinstance(partitions, dict) else {}).items():
        files = [*part.get("data_files", []), *part.get("delta_files", [])] if isinstance(part, dict) else []
        for rel in files:
            path = collection_dir / "partitions" / str(name) / str(rel)
            if why := _unreadable(path, _read_parquet):
                return path, why
    for index in sorted(collection_dir.glob("partitions/*/indexes/*")):
        read = _read_faiss if index.suffix == ".idx" else _read_arrow if index.suffix == ".sidx" else None
        if read is not None and (why := _unreadable(index, read)):
            return index, why
    return None


def _json_object(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _why(exc: BaseException) -> str:
    """An error as one line (Parquet's and faiss' span several)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def _unreadable(path: Path, read: Callable[[str], object]) -> str | None:
    try:
        read(str(path))
    except Exception as exc:  # whatever the reader raises on bytes it cannot decode
        return _why(exc)
    return None


def _read_parquet(path: str) -> object:
    import pyarrow.parquet as pq  # Milvus Lite's own reader; imported only when a collection failed

    return pq.read_table(path)


def _read_faiss(path: str) -> object:
    import faiss  # type: ignore[import-not-found]

    return faiss.read_index(path)


def _read_arrow(path: str) -> object:
    import pyarrow as pa

    with pa.memory_map(path, "r") as source:
        return pa.ipc.open_file(source).read_all()
