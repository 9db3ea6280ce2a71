"""PaperStore, the store's one public class: opened and closed here, its methods come from the parts.

PaperStore(WritesMixin, SearchMixin, SchemaMixin), all over StoreBase (base.py):
- WritesMixin (writes.py) over CatalogueMixin (catalogue.py, the catalogue cached per process) over ReadsMixin
  (reads.py): writes read back what they replace, and give the catalogue a new version;
- SearchMixin (search.py): chunk and paper searches;
- SchemaMixin (schema.py): the collections, made, checked or migrated when the store is opened.
"""

from __future__ import annotations

from ...config import Settings
from ...errors import PaperscopeError, StoreError
from ..embeddings import Embedder, embedder_for
from .connection import connect, disconnect, lite_damage
from .schema import SchemaMixin
from .search import SearchMixin
from .writes import WritesMixin


class PaperStore(WritesMixin, SearchMixin, SchemaMixin):
    """Papers and their chunks in one Milvus knowledge base (`{kb}_chunks`, `{kb}_papers`)."""

    def __init__(self, settings: Settings, embedder: Embedder, *, create: bool = True) -> None:
        """Open the knowledge base; `create=False` (every read-only command) refuses one that does not exist."""
        self.settings = settings
        self.embedder = embedder
        self.kb = settings.store.kb
        self.chunks_name = f"{self.kb}_chunks"
        self.papers_name = f"{self.kb}_papers"
        self.write_batch = settings.embedding.batch_size
        self._client, self.uri, self._lite_path = connect(settings, create)
        self._closed = False
        self._unflushed = 0
        self.chunks_recreated = False  # True when the chunks collection was missing and was made again, empty
        try:
            self._ensure_collections(create)
        except BaseException as exc:
            self.close()
            # Lite failing to read its own collections (not our checks refusing them) means damaged data.
            cause = exc.__cause__
            if self._lite_path and isinstance(exc, StoreError) and cause and not isinstance(cause, PaperscopeError):
                if damage := lite_damage(self._lite_path, self.kb):
                    raise StoreError(f"knowledge base {self.kb!r}: {damage}") from exc
                hint = f"the Milvus Lite data at {self._lite_path} looks damaged: move it aside and ingest again"
                raise StoreError(f"{' '.join(str(exc).split())}; {hint}") from exc
            raise

    @classmethod
    def open(cls, settings: Settings, embedder: Embedder | None = None, *, create: bool = True) -> PaperStore:
        """Open the knowledge base named by `settings.store.kb`, creating it unless `create` is False.

        Without `embedder`, the one named by `settings.embedding.model` is built, caching vectors
        under the data directory (the cache is opened when something is first embedded).
        """
        if embedder is None:
            embedder = embedder_for(settings)
        return cls(settings, embedder, create=create)

    def close(self) -> None:
        """Flush (Lite), release the connection, and stop the Lite server when this was its last user."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        try:
            if self.is_lite and self._unflushed:
                self.flush()
        finally:
            disconnect(self._client, self._lite_path)

    def __enter__(self) -> PaperStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
