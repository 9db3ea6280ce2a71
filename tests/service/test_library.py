"""The server's Library: what it makes ready before the first question."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperscope.rag.filters import SearchFilter
from paperscope.rag.store import PaperStore, StoredChunk
from paperscope.service.library import Library
from paperscope.settings_layers import load_layers


def test_the_library_searches_once_before_the_first_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Milvus Lite builds its BM25 index at the first BM25 search: the server pays for it at start, not a user.
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path))
    searched: list[str] = []
    search = PaperStore.search_bm25

    def recording(self: PaperStore, query: str, filter: SearchFilter | None = None, k: int = 10) -> list[StoredChunk]:
        searched.append(query)
        return search(self, query, filter, k)

    monkeypatch.setattr(PaperStore, "search_bm25", recording)
    library = Library(load_layers())
    try:
        assert searched == ["paperscope"]
    finally:
        library.close()
