"""The catalogue kept in memory: every paper's brief row, read again only when the catalogue changed.

Routing, the paper locator, the agent's prompt and its tools need the whole catalogue for every question; read
from Milvus each time it cost ~130 ms at 270 papers and ~1.7 s at 2,700 (Milvus Lite materialises every row in
Python). `catalogue()` reads it once and then only checks that it is still current, with two cheap calls:

- a version token, the collection property `paperscope.catalogue` of the papers collection, which every write to
  the catalogue made through PaperStore replaces with a fresh random value (writes by any process, on a server);
- the number of rows, so that rows written or deleted behind the store's back (a process killed between its write
  and the token, or a raw client) are seen too.

Stores of one knowledge base in one process share the cached catalogue, and a write through any of them drops
it at once. Readiness for searches and reads is not taken from this cache: it is checked against Milvus on every
call (base.py), so a paper that stops being ready is hidden at once, whatever wrote the change.

`pinned()` is the exception, for one answer: the catalogue is checked once when the block begins, and until it
ends `catalogue()` returns that copy and searches and reads take readiness from it. An answer then sees the
library as it was when it started (a paper removed meanwhile may still be searched, its chunks gone), for two
round trips at the start instead of one readiness query per search and read (measured at 10k chunks: 15 of the
answer's 175 ms).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .base import CONSISTENCY, PINNED
from .reads import ReadsMixin
from .records import Catalogue
from .schema import PROP_CATALOGUE, new_version

# (uri, kb) -> the catalogue last read in this process; shared by every PaperStore of that knowledge base.
_CACHE: dict[tuple[str, str], Catalogue] = {}
_CACHE_LOCK = threading.Lock()


class CatalogueMixin(ReadsMixin):
    """`catalogue()`: the brief catalogue, cached per knowledge base and process (see the module docstring)."""

    def catalogue(self, *, checked: bool = True) -> Catalogue:
        """Every paper's brief row (ready or not, by title), from memory unless the catalogue changed.

        `checked=False`: the copy this process last read, without asking whether it is still current (two round
        trips saved), when there is one; for what only names papers (an answer's bibliography after its
        retrieval read the catalogue), never for what decides which papers are searched."""
        key = (self.uri, self.kb)
        if (held := self._pinned()) is not None:
            return held
        if not checked:
            with _CACHE_LOCK:
                held = _CACHE.get(key)
            if held is not None:
                return held
        # The version is read before the rows: a write landing in between makes the next call read them again,
        # never labels old rows with the new version.
        version = self._catalogue_version()
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
        if cached is not None and cached.version == version:
            return cached
        fresh = Catalogue(version, tuple(self.list_papers(brief=True)))
        with _CACHE_LOCK:
            _CACHE[key] = fresh
        return fresh

    @contextmanager
    def pinned(self) -> Iterator[Catalogue]:
        """Within: the catalogue checked once, at the start, and readiness taken from it (see the module docstring).
        Per thread or task; a block inside another one of the same knowledge base keeps the outer one's."""
        if (held := self._pinned()) is not None:
            yield held
            return
        catalogue = self.catalogue()
        token = PINNED.set(((self.uri, self.kb), catalogue))
        try:
            yield catalogue
        finally:
            PINNED.reset(token)

    def _catalogue_version(self) -> tuple[str, int]:
        """(token, rows): the token the last write through a PaperStore left, and the number of catalogue rows."""
        with self._failing("reading the catalogue version"):
            props = self._client.describe_collection(self.papers_name).get("properties") or {}
            rows = self._client.query(
                self.papers_name, filter="", output_fields=["count(*)"], consistency_level=CONSISTENCY
            )
        return str(props.get(PROP_CATALOGUE, "")), int(rows[0]["count(*)"]) if rows else 0

    def _catalogue_changed(self) -> None:
        """After a write to the catalogue: a new version token for every process, this one's copy dropped."""
        with _CACHE_LOCK:
            _CACHE.pop((self.uri, self.kb), None)
        with self._failing("recording a catalogue change"):
            self._client.alter_collection_properties(self.papers_name, properties={PROP_CATALOGUE: new_version()})
