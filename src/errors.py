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


class ConfigError(PaperscopeError):
    """Settings are missing or inconsistent."""


class ChunkingError(PaperscopeError):
    """A paper could not be cut into chunks."""


class StoreError(PaperscopeError):
    """The Milvus store refused an operation or holds inconsistent data."""
