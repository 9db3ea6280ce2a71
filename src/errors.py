"""Domain errors. Each message names the file, page or doc_id it is about."""

from __future__ import annotations

from pathlib import Path


class PaperscopeError(Exception):
    """Base class of every error paperscope raises on purpose."""


class ParseError(PaperscopeError):
    """A file could not be turned into a Paper."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{Path(self.path).name}: {reason}")

    def __reduce__(self) -> tuple[object, ...]:  # raised in a worker process, it crosses back pickled
        return (type(self), (self.path, self.reason))


class ConfigError(PaperscopeError):
    """Settings are missing or inconsistent."""


class ChunkingError(PaperscopeError):
    """A paper could not be cut into chunks."""


class SourceError(PaperscopeError):
    """A library or a download could not be read: a Zotero data directory, a .bib file, an arXiv id, a DOI, a URL."""


class RerankError(PaperscopeError):
    """A reranker could not score passages: its endpoint failed or replied with something unusable."""


class StoreError(PaperscopeError):
    """The Milvus store refused an operation or holds inconsistent data."""


class LLMError(PaperscopeError):
    """The chat model's endpoint failed, was too slow, or sent something that is not a reply.

    `kind` says what happened: unreachable, timeout, server (HTTP 5xx), rejected (HTTP 4xx), bad_response, budget,
    cancelled (the question was given up).
    The message is one line naming the model and the endpoint, for the user.
    """

    def __init__(self, model: str, endpoint: str, kind: str, reason: str) -> None:
        self.model = model
        self.endpoint = endpoint
        self.kind = kind
        self.reason = reason
        super().__init__(f"model {model} at {endpoint} failed: {reason}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.model, self.endpoint, self.kind, self.reason))

    @property
    def endpoint_down(self) -> bool:
        """True when later calls would fail the same way (not for a request the endpoint merely refused)."""
        return self.kind != "rejected"


class UnknownPaper(ConfigError):
    """A doc_id (or prefix), or a paper's name, that names no paper of the knowledge base, or several."""
