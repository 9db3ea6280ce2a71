"""Parsing the next PDF of an ingest while this one is embedded.

A PDF is read in the parsing worker, another process (parser/bounded.py), and embedding runs in this one: parsing
file i+1 while file i is embedded puts the two on different cores. Only a file ingest will parse is read ahead (a
PDF whose paper is not stored ready, or every PDF with `force`): an unchanged library is never parsed for nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..parser.models import Paper

#: Parses one file in the parsing worker, stopping when the event is set (ingest's `parse_bounded` call).
Parse = Callable[[Path, threading.Event], Paper]


class ParseAhead:
    """One file parsed ahead at a time: `queue(path)` names the next file, `begin()` starts it (once the current
    file is parsed: the worker reads one file at a time), `take(path)` gives its Paper (or raises its ParseError)."""

    def __init__(self, parse: Parse, wanted: Callable[[Path], bool]) -> None:
        """`wanted(path)`: whether ingest will parse `path` (a new or changed paper), asked before reading ahead."""
        self._parse, self._wanted = parse, wanted
        self._next: Path | None = None
        self._pending: tuple[Path, Future[Paper]] | None = None
        self._cancel = threading.Event()
        self._pool: ThreadPoolExecutor | None = None

    def queue(self, path: Path | None) -> None:
        """The file ingest will take after the current one (None: none)."""
        self._next = path

    def begin(self) -> None:
        """Start parsing the queued file in the worker, if ingest will parse it."""
        path, self._next = self._next, None
        if path is None or self._pending is not None or not self._wanted(path):
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paperscope-parse-ahead")
        self._pending = (path, self._pool.submit(self._parse, path, self._cancel))

    def take(self, path: Path) -> Paper | None:
        """The Paper parsed ahead for `path` (waiting for it), or None when `path` was not read ahead (a file read
        ahead for nothing, e.g. a copy of the one before it, is dropped)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        if pending[0] != path:
            pending[1].cancel()
            return None
        return pending[1].result()

    def close(self) -> None:
        """Stop: a parse still running is cancelled (its worker is killed) and its result dropped."""
        self._cancel.set()
        self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
