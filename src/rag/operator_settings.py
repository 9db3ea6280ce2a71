"""The operators a Settings names, checked against the registry where settings come into rag.

`config.py` sits below rag and cannot ask the registry (rag's modules register the operators as they load, and
plugins through their entry points), so a Settings holds any name; the names are checked here, by the registry,
when the CLI or the service loads its settings (`kb_settings.load_kb_layers`, `paperscope serve`), and anyway
where an operator is built (the engine, ingest, the enrichers). Each error names the setting and the known names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import RetrievalSettings, Settings
from ..errors import ChunkingError, ConfigError
from . import registry
from .chunking import chunker
from .rerank import check_rerank_spec
from .retrievers import make_retriever

#: The settings that name operators, and the kind of operator each names (in the order they are checked).
NAMED: dict[str, str] = {
    "retrieval.retriever": "retriever",
    "retrieval.hyde_retriever": "retriever",
    "retrieval.ensemble": "retriever",  # the members of `ensemble:<members>`
    "retrieval.rerank": "reranker",
    "retrieval.transforms": "transform",
    "enrichment.strategies": "enricher",
    "chunking.strategy": "chunker",
}


class OperatorSettingError(ConfigError):
    """A setting that names no registered operator: `setting` is its dotted name, `reason` what is wrong."""

    def __init__(self, setting: str, reason: str) -> None:
        self.setting = setting
        self.reason = reason
        super().__init__(f"{setting}: {reason}")


def check_spec(kind: str, spec: str, retrieval: RetrievalSettings | None = None) -> None:
    """A ConfigError saying what is wrong unless `spec` names a registered operator of `kind`. Nothing is loaded or
    opened: a retriever spec is built (names, nesting, weights; it searches nothing), the others are checked by
    name."""
    if kind == "retriever":
        make_retriever(spec, retrieval)
    elif kind == "reranker":
        check_rerank_spec(spec)
    elif kind == "chunker":
        try:
            chunker(spec)
        except ChunkingError as exc:
            raise ConfigError(str(exc)) from exc
    elif kind == "transform":
        registry.build("transform", spec)  # a name a request may choose (not one that always runs)
    else:
        registry.get(kind, spec)  # type: ignore[arg-type]  # a Kind: NAMED's values


def specs(value: str | list[str] | None) -> list[str]:
    """The specs a setting or an option holds: none, one, or a list of them."""
    return value if isinstance(value, list) else [] if value is None else [value]


def check_values(values: Mapping[str, Any], retrieval: RetrievalSettings | None = None) -> None:
    """The operator settings among dotted `values` ({"retrieval.retriever": "bm52", ...}) checked against the
    registry; an OperatorSettingError for the first that names no registered operator. Other values pass."""
    for setting, kind in NAMED.items():
        for spec in specs(values.get(setting)):
            try:
                check_spec(kind, f"ensemble:{spec}" if setting == "retrieval.ensemble" else spec, retrieval)
            except ConfigError as exc:
                raise OperatorSettingError(setting, str(exc)) from exc


def check_operators(settings: Settings) -> None:
    """An OperatorSettingError, "retrieval.retriever: unknown retriever 'bm52'; did you mean 'bm25'? (one of:
    ...)", for the first operator setting of `settings` that does not name (or, for a retriever spec, build) a
    registered operator."""
    values = {name: getattr(getattr(settings, part), field) for name in NAMED for part, field in [name.split(".")]}
    check_values(values, settings.retrieval)
