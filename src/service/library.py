"""The knowledge bases one server serves, each opened once and shared by every request.

A knowledge base is opened on first use (the server's `--kb` at start, created when it does not exist yet, so
uploads can go in) and stays open until the server stops: one PaperStore (a pymilvus client, safe to share
between threads; every store of a Milvus Lite file shares the in-process Lite server) and one embedder per
embedding model, shared by the knowledge bases that use it. Settings are read once at start (environment,
`$PAPERSCOPE_HOME/config.toml`, the server's flags); each request's settings are those layers with the
knowledge base's own and the request's options on top (request > kb > user file > environment > defaults).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import PaperscopeError
from ..rag.embeddings import CachedEmbedder, embedder_for
from ..rag.kb_settings import KbSettings, peek_kb_settings, read_kb_settings
from ..rag.store import PaperStore, knowledge_bases
from ..settings_layers import LayeredSettings, flatten
from .errors import UnknownKnowledgeBase

log = logging.getLogger("paperscope.service")


@dataclass
class KnowledgeBase:
    """One open knowledge base: its store and the settings layers it answers with."""

    name: str
    store: PaperStore
    layered: LayeredSettings  # the server's layers with this kb's own

    def settings(self, request: Mapping[str, Any] | None = None) -> Settings:
        """This kb's settings with a request's options on top (None values are not given); ConfigError, one
        line naming the option, for a bad one."""
        given = {k: v for k, v in flatten(request or {}).items() if v is not None}
        return self.layered.with_request({**_values(self.layered), **given, "store.kb": self.name}).settings


class Library:
    """The knowledge bases of one server (see the module docstring)."""

    def __init__(self, layered: LayeredSettings) -> None:
        """Open the default knowledge base (`layered.settings.store.kb`), creating it if needed, and load its
        embedder. StoreError or ConfigError, one line, when that cannot be done."""
        self.layered = layered
        self.settings = layered.settings
        self.default_kb = self.settings.store.kb
        self._kbs: dict[str, KnowledgeBase] = {}
        self._embedders: dict[tuple[str, int, str], CachedEmbedder] = {}
        self._lock = threading.Lock()
        self._closed = False
        found = peek_kb_settings(self.settings)  # before any store is open: it decides the embedder
        default = self._open(self.default_kb, found, create=True)
        default.store.embedder.embed_query("paperscope")  # load the model now, not in the first question
        # Milvus Lite builds its BM25 index at a library's first search (about 4 s at 100,000 chunks): now, too.
        default.store.search_bm25("paperscope", k=1)

    @property
    def home(self) -> Path:
        return Path(self.settings.home).expanduser()

    @property
    def uploads(self) -> Path:
        """Where uploaded files are kept: service.uploads, else $PAPERSCOPE_HOME/uploads."""
        return Path(self.settings.service.uploads or self.home / "uploads").expanduser()

    def names(self) -> list[str]:
        """Every knowledge base of the store (open or not)."""
        return knowledge_bases(self.get().store.client)

    def get(self, name: str | None = None, *, create: bool = False) -> KnowledgeBase:
        """The knowledge base `name` (default: the server's), opened on first use; one that does not exist is
        UnknownKnowledgeBase unless `create` (an upload creates it, as `paperscope ingest` does)."""
        name = name or self.default_kb
        with self._lock:
            if self._closed:
                raise PaperscopeError("the server is stopping")
            if name in self._kbs:
                return self._kbs[name]
            client = self._kbs[self.default_kb].store.client
            found = read_kb_settings(client, name)
            if found is None and not create:
                existing = ", ".join(repr(n) for n in knowledge_bases(client)) or "none"
                raise UnknownKnowledgeBase(
                    f"knowledge base {name!r} does not exist (existing: {existing}); "
                    f"an upload with kb={name} creates it"
                )
            return self._open_locked(name, found, create=create)

    def _open(self, name: str, found: KbSettings | None, *, create: bool) -> KnowledgeBase:
        with self._lock:
            return self._open_locked(name, found, create=create)

    def _open_locked(self, name: str, found: KbSettings | None, *, create: bool) -> KnowledgeBase:
        layered = self.layered.with_kb(found.layer() if found is not None else None)
        layered = layered.with_request({**_values(self.layered), "store.kb": name})
        settings = layered.settings
        key = (settings.embedding.model, settings.embedding.batch_size, settings.embedding.runtime)
        embedder = self._embedders.get(key)
        if embedder is None:
            embedder = embedder_for(settings)
            self._embedders[key] = embedder
        store = PaperStore(settings, embedder, create=create)
        if found is None:  # just created: its own settings (embedding model, chunking) are saved in it now
            found = read_kb_settings(store.client, name)
            layered = self.layered.with_kb(found.layer() if found is not None else None)
            layered = layered.with_request({**_values(self.layered), "store.kb": name})
            log.info("created knowledge base %r", name)
        kb = KnowledgeBase(name, store, layered)
        self._kbs[name] = kb
        return kb

    def holds(self, sha256: str) -> bool:
        """True when an open knowledge base holds a paper of these bytes (its uploaded file is still needed)."""
        with self._lock:
            kbs = list(self._kbs.values())
        return any(kb.store.get_paper_by_sha(sha256) is not None for kb in kbs)

    def close(self) -> None:
        """Close every store and embedder (flushing Milvus Lite); the library serves no more requests."""
        with self._lock:
            self._closed = True
            kbs, self._kbs = list(self._kbs.values()), {}
            embedders, self._embedders = list(self._embedders.values()), {}
        for kb in kbs:
            try:
                kb.store.close()
            except Exception as exc:  # the others must still close
                log.warning("closing knowledge base %r failed: %s", kb.name, exc)
        for embedder in embedders:
            embedder.close()


def _values(layered: LayeredSettings) -> dict[str, Any]:
    """The request layer's values of the server's settings (its flags: --kb, --host, --port)."""
    layer = layered.layer("request")
    return dict(layer.values) if layer is not None else {}
