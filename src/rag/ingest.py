"""Ingest files into a knowledge base: parse -> chunk -> embed -> store, idempotently.

A paper's doc_id is the UUID5 of its file's sha256, so identical bytes are one paper wherever they
live. Per file, ingest decides from the catalogue:

- unchanged: a ready paper with this doc_id exists; nothing is written;
- ingested: a new paper (or one an interrupted ingest left not ready: it is written again);
- replaced: new content at a path that held another paper; the new paper goes in first, then the old
  one is deleted, so search never sees neither and never sees both as the same file;
- failed: the file could not be read, parsed, chunked or stored; the batch goes on, and whatever the
  failed file had written is removed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import PaperscopeError, ParseError
from ..parser import parse_file
from ..parser.files import SUPPORTED
from .chunking import ChunkOptions, chunk_paper
from .store import PaperStore

#: Namespace of paperscope doc_ids (UUID5 over the file's sha256 hex digest).
DOC_ID_NAMESPACE = uuid.UUID("6f1d8a52-3c1e-5b7a-9a43-1f6e2d0c9b11")

Status = Literal["ingested", "unchanged", "replaced", "failed"]
Stage = Literal["reading", "parsing", "chunking", "embedding", "done"]


def doc_id_for(sha256: str) -> str:
    """The stable doc_id of a file with this sha256."""
    return str(uuid.uuid5(DOC_ID_NAMESPACE, sha256.lower()))


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FileResult(BaseModel):
    """What happened to one file."""

    path: str = Field(description="The file as found (absolute).")
    status: Status
    doc_id: str | None = None
    title: str | None = None
    pages: int = 0
    chunks: int = Field(0, description="Rows written (0 when unchanged or failed).")
    seconds: float = 0.0
    error: str | None = Field(None, description="Why the file failed, naming it.")
    structure_found: bool = Field(True, description="False when the parser found no heading in the paper.")
    replaced: list[str] = Field(default_factory=list, description="doc_ids of earlier versions removed.")


class IngestReport(BaseModel):
    """The outcome of one `ingest` call."""

    files: list[FileResult] = Field(default_factory=list)
    seconds: float = 0.0
    embed_seconds: float = Field(0.0, description="Time spent computing embeddings.")

    def count(self, status: Status) -> int:
        """Files with this status."""
        return sum(1 for f in self.files if f.status == status)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def pages(self) -> int:
        return sum(f.pages for f in self.files if f.status in ("ingested", "replaced"))

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files)


#: progress(path, stage, done, total): stage changes, and embedding progress in chunks.
Progress = Callable[[Path, Stage, int, int], None]


def discover(paths: Iterable[str | Path]) -> tuple[list[Path], list[FileResult]]:
    """Expand folders (recursively) into supported files; missing paths come back as failures."""
    found: dict[Path, None] = {}
    missing: list[FileResult] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and file.suffix.lower() in SUPPORTED and not file.name.startswith("."):
                    found.setdefault(file.resolve(), None)
        elif path.is_file():
            found.setdefault(path.resolve(), None)
        else:
            missing.append(FileResult(path=str(path), status="failed", error=f"{path}: no such file or folder"))
    return list(found), missing


def ingest(
    paths: Iterable[str | Path],
    settings: Settings,
    store: PaperStore | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> IngestReport:
    """Ingest files and folders (PDF, Markdown, text) into the knowledge base of `settings`.

    Opens (and closes) the store when none is given. `force` re-ingests unchanged files, e.g. after
    changing the chunking strategy.
    """
    started = time.perf_counter()
    files, report_files = discover(paths)
    own = store is None
    store = store or PaperStore.open(settings)
    embed_before = getattr(store.embedder, "seconds", 0.0)
    try:
        for path in files:
            report_files.append(_ingest_file(path, settings, store, force, progress))
    finally:
        if own:
            store.close()
        else:
            store.flush()
    return IngestReport(
        files=report_files,
        seconds=time.perf_counter() - started,
        embed_seconds=getattr(store.embedder, "seconds", 0.0) - embed_before,
    )


def _ingest_file(
    path: Path, settings: Settings, store: PaperStore, force: bool, progress: Progress | None
) -> FileResult:
    started = time.perf_counter()

    def report(stage: Stage, done: int = 0, total: int = 0) -> None:
        if progress is not None:
            progress(path, stage, done, total)

    def failed(error: str, doc_id: str | None = None) -> FileResult:
        report("done")
        return FileResult(
            path=str(path), status="failed", doc_id=doc_id, error=error, seconds=time.perf_counter() - started
        )

    report("reading")
    try:
        sha = file_sha256(path)
    except OSError as exc:
        return failed(f"{path.name}: cannot read: {exc.strerror or exc}")
    doc_id = doc_id_for(sha)
    source = str(path)
    try:
        existing = store.get_paper(doc_id)
        earlier = [p.doc_id for p in store.papers_from_source(source) if p.doc_id != doc_id]
    except PaperscopeError as exc:
        return failed(f"{path.name}: {exc}", doc_id)
    if existing is not None and existing.ready and not force:
        report("done")
        return FileResult(
            path=source,
            status="unchanged",
            doc_id=doc_id,
            title=existing.title,
            pages=existing.pages,
            seconds=time.perf_counter() - started,
        )

    wrote = False
    try:
        report("parsing")
        paper = parse_file(path)
        report("chunking")
        options = ChunkOptions(**settings.chunking.model_dump(exclude={"strategy"}))
        chunks = chunk_paper(paper, store.embedder.token_counter, settings.chunking.strategy, options)
        if not any(c.kind == "chunk" for c in chunks):
            raise ParseError(path, "no text to index after parsing")
        report("embedding", 0, len(chunks))
        wrote = True
        n = store.insert_paper_chunks(
            paper, chunks, doc_id, sha, source, on_batch=lambda done, total: report("embedding", done, total)
        )
        for old in earlier:
            store.delete_paper(old)
    except PaperscopeError as exc:
        if wrote and existing is None:
            _forget(store, doc_id)
        message = str(exc) if path.name in str(exc) else f"{path.name}: {exc}"
        return failed(message, doc_id)
    except BaseException:
        # Ctrl-C or a bug: take back what this file wrote; a paper left "ingesting" is hidden anyway.
        if wrote and existing is None:
            _forget(store, doc_id)
        raise
    report("done")
    return FileResult(
        path=source,
        status="replaced" if earlier else "ingested",
        doc_id=doc_id,
        title=paper.title,
        pages=paper.pages,
        chunks=n,
        seconds=time.perf_counter() - started,
        replaced=earlier,
        structure_found=paper.structure_found,
    )


def _forget(store: PaperStore, doc_id: str) -> None:
    """Best-effort removal of a half-written paper (it stays hidden from search if this fails too)."""
    with contextlib.suppress(Exception):  # the original error is the one to report
        store.delete_paper(doc_id)
