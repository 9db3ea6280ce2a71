"""A LangChain `BaseRetriever` over the engine, to plug paperscope into one's own chains."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from .engine import Engine
from .filters import SearchFilter
from .store import PaperStore, StoredChunk


def chunk_document(chunk: StoredChunk) -> Document:
    """A chunk as a LangChain Document: its text, and where it comes from in the metadata."""
    return Document(
        page_content=chunk.text,
        metadata={
            "citation": chunk.citation,
            "doc_id": chunk.doc_id,
            "title": chunk.title,
            "year": chunk.year,
            "chunk_index": chunk.chunk_index,
            "section_title": chunk.section_title,
            "parent_section": chunk.parent_section,
            "section_category": chunk.section_category.name,
            "page_number": chunk.page_number,
            "score": chunk.score,
        },
    )


class PaperscopeRetriever(BaseRetriever):
    """Chunks from a paperscope knowledge base as LangChain Documents."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: PaperStore = Field(description="An open PaperStore.")
    retriever: str | None = Field(None, description="A retriever spec (bm25, dense, hybrid, ...); None = settings'.")
    k: int = Field(5, ge=1, le=50, description="Documents returned.")
    search_filter: SearchFilter | None = Field(None, description="Papers, categories, years to search in.")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # The engine's passage search: the same ranking the agent's search_by_section and `retrieve` use.
        settings = self.store.settings
        if self.retriever is not None:
            settings = settings.with_overrides(retrieval={"retriever": self.retriever})
        hits = Engine(self.store, settings).search(query, self.search_filter, self.k).chunks
        return [chunk_document(c) for c in hits]
