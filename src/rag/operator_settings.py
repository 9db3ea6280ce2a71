"""The operators a Settings names, checked against the registry where settings come into rag.

`config.py` sits below rag and cannot ask the registry (rag's modules register the operators as they load, and
plugins through their entry points), so a Settings holds any name; the names are checked here, by the registry,
when the CLI or the service loads its settings (`kb_settings.load_kb_layers`, `paperscope serve`), and anyway
where an operator is built (the engine, ingest, the enrichers). Each error names the setting and the known names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..errors import ChunkingError, ConfigError
from . import registry
from .chunking import chunker
from .rerank import check_rerank_spec
from .retrievers import make_retriever


def check_operators(settings: Settings) -> None:
    """A ConfigError, "retrieval.retriever: unknown retriever 'bm52'; did you mean 'bm25'? (one of: ...)", for the
    first operator setting that does not name (or, for a retriever spec, build) a registered operator. Nothing is
    loaded or opened: a reranker and a chunker are checked by name."""
    r = settings.retrieval
    _check("retrieval.retriever", make_retriever, r.retriever, r)
    _check("retrieval.hyde_retriever", make_retriever, r.hyde_retriever, r)
    _check("retrieval.ensemble", make_retriever, f"ensemble:{r.ensemble}", r)
    if r.rerank is not None:
        _check("retrieval.rerank", check_rerank_spec, r.rerank)
    for name in r.transforms:
        _check("retrieval.transforms", registry.build, "transform", name)
    for name in settings.enrichment.strategies:
        _check("enrichment.strategies", registry.get, "enricher", name)
    _check("chunking.strategy", chunker, settings.chunking.strategy)


def _check(field: str, build: Callable[..., Any], *args: Any) -> None:
    try:
        build(*args)
    except (ConfigError, ChunkingError) as exc:
        raise ConfigError(f"{field}: {exc}") from exc
