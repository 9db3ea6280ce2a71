"""Ingest files into a knowledge base: parse -> chunk -> embed -> store, idempotently.

A paper's doc_id is the UUID5 of its file's sha256, so identical bytes are one paper wherever they
live, and a paper belongs to every path that holds it (the catalogue's `sources`). Per file, ingest
decides from the catalogue:

- unchanged: a ready paper with this doc_id exists; nothing is written (a new path is added to its
  sources);
- ingested: a new paper (or one an interrupted ingest left not ready: it is written again);
- replaced: new content at a path that held another paper; the new paper goes in first, then the path is
  taken from the old one, which is deleted unless another of its paths still holds its bytes. This also
  runs when the file is unchanged, so a crash between storing a new version and removing the old one is
  repaired by the next ingest;
- failed: the file could not be read, parsed, chunked or stored; the batch goes on, and whatever the
  failed file had written is removed again. A forced re-ingest that fails leaves the old version visible;
- repaired: the paper was listed as ready but its chunks were not all in the store (`PaperStore.damaged`:
  a damaged or vanished chunks collection). Ingest looks for such papers first and ingests each again, from
  the file given or from a recorded path that still holds its bytes; one that no file holds fails, saying so;
- updated: an unchanged file whose library record changed where only the catalogue keeps it (collections,
  tags, venue, keys); a change to its title, authors, year or ids ingests it again, as chunks and the paper's
  names carry them.

A file may come with its library's metadata (`LibraryItem`: Zotero, a .bib file, a download): it wins over what
the PDF says (sources/merge.py).

Folders are searched for PDF, Markdown and text files; README, LICENSE, CHANGELOG and the like are
skipped there (they are not papers) unless named on the command line. What a folder walk cannot read or
does not take (a folder it cannot list, a link to a folder, a broken link, a named pipe) is listed with
the reason (`IngestReport.unread`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import PaperscopeError, ParseError
from ..parser.models import Paper
from ..sources.merge import with_library
from ..sources.models import LibraryItem, PaperMeta
from .chunking import Chunk, ChunkOptions, chunk_paper
from .embeddings import Embedder
from .enrich import Cost, EnrichedPaper, Enricher
from .parse_ahead import ParseAhead
from .paths import escape_path, unescape_path
from .store import PaperRecord, PaperStore, clipped

if TYPE_CHECKING:
    from ..parser.bounded import ParseLimits

#: Namespace of paperscope doc_ids (UUID5 over the file's sha256 hex digest).
DOC_ID_NAMESPACE = uuid.UUID("6f1d8a52-3c1e-5b7a-9a43-1f6e2d0c9b11")

Status = Literal["ingested", "unchanged", "updated", "replaced", "repaired", "removed", "failed"]
Stage = Literal["reading", "parsing", "chunking", "enriching", "embedding", "done"]
#: File names (without suffix, any case) that a folder walk skips: project files, not papers.
NOT_PAPERS = frozenset(
    {"readme", "license", "licence", "copying", "changelog", "changes", "history", "news", "contributing"}
    | {"authors", "notice", "code_of_conduct", "security", "todo"}
)


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

    path: str = Field(description="The file as found (absolute; unprintable characters escaped, see paths.py).")
    status: Status
    doc_id: str | None = None
    title: str | None = None
    pages: int = 0
    chunks: int = Field(0, description="Rows written (0 when unchanged or failed).")
    seconds: float = 0.0
    error: str | None = Field(None, description="Why the file failed, naming it.")
    structure_found: bool = Field(True, description="False when the parser found no heading in the paper.")
    replaced: list[str] = Field(default_factory=list, description="doc_ids of earlier versions removed.")
    warnings: list[str] = Field(default_factory=list, description="What was stored differently from the file.")
    enrichments: list[str] = Field(default_factory=list, description="Enrichments it was indexed with (rag/enrich).")
    calls: int = Field(0, description="Model calls made to enrich it (cached replies cost none).")
    enrich_seconds: float = Field(0.0, description="Time spent enriching it (model calls included).")


class Skipped(BaseModel):
    """A path a folder walk did not take, and why."""

    path: str = Field(description="The path (absolute or as given; unprintable characters escaped).")
    reason: str


class IngestReport(BaseModel):
    """The outcome of one `ingest` call."""

    files: list[FileResult] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list, description="Files in folders that are not papers (README...).")
    unread: list[Skipped] = Field(
        default_factory=list,
        description="What folder walks could not read or do not take (unreadable folders, links to folders, "
        "broken links, pipes), with the reason.",
    )
    notes: list[str] = Field(
        default_factory=list, description="What the libraries read held besides papers (items in the trash, no PDF)."
    )
    seconds: float = 0.0
    embed_seconds: float = Field(0.0, description="Time spent computing embeddings.")
    cost: Cost | None = Field(None, description="What enrichment was planned to cost (model calls, tokens).")

    def count(self, status: Status) -> int:
        """Files with this status."""
        return sum(1 for f in self.files if f.status == status)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    @property
    def pages(self) -> int:
        return sum(f.pages for f in self.files if f.status in ("ingested", "replaced", "repaired"))

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.files)

    @property
    def calls(self) -> int:
        """Model calls made to enrich the files."""
        return sum(f.calls for f in self.files)


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest: what was done (`report`) and the file being ingested (`current`)."""

    def __init__(self, report: IngestReport, current: str | None) -> None:
        super().__init__()
        self.report = report
        self.current = current


#: progress(path, stage, done, total): stage changes, and embedding progress in chunks.
Progress = Callable[[Path, Stage, int, int], None]


def supported(suffix: str) -> bool:
    """True for the suffix of a file type the parsers read (.pdf, .md, .markdown, .txt)."""
    # Imported here: the parsers import PyMuPDF (a second), which `check` and the other readers of this module
    # never need.
    from ..parser.files import SUPPORTED

    return suffix.lower() in SUPPORTED


def is_paper_file(file: Path) -> bool:
    """A supported file a folder walk takes: not hidden, not a README, LICENSE, CHANGELOG or the like."""
    return (
        os.path.isfile(file)  # False, not PermissionError, in a folder that cannot be searched
        and supported(file.suffix)
        and not file.name.startswith(".")
        and file.stem.lower() not in NOT_PAPERS
    )


class Discovered(NamedTuple):
    """What `discover` found among the paths given."""

    files: list[Path]  #: files to ingest
    #: failures for paths given that are no file or folder (or no regular file), and for papers a folder walk
    #: found in a folder it may list but not search (their names are known, their files out of reach)
    missing: list[FileResult]
    skipped: list[Path]  #: files in folders that are not papers (README, LICENSE, ...)
    unread: list[Skipped]  #: what a folder walk could not read or does not take, with the reason


def discover(paths: Iterable[str | Path]) -> Discovered:
    """Files to ingest among `paths`, and what was left and why.

    Folders are searched recursively (links to folders are not followed); a file named explicitly is
    always taken. What a walk meets and cannot take is listed with the reason, never passed over in
    silence: a folder it cannot list (permissions, a path too long), a link to a folder, and, among names
    with a paper's suffix, links that lead nowhere or in a loop and things that are no regular file (a
    named pipe would block the read for ever).
    """
    found: dict[Path, None] = {}
    missing: list[FileResult] = []
    skipped: dict[Path, None] = {}
    unread: list[Skipped] = []
    for raw in paths:
        path = Path(raw).expanduser()
        # os.path, not Path: a path inside a folder without search permission is False, not PermissionError.
        if os.path.isdir(path):
            _walk(path, found, skipped, unread, missing)
        elif os.path.isfile(path):
            found.setdefault(path.resolve(), None)
        else:
            shown = escape_path(path)
            missing.append(FileResult(path=shown, status="failed", error=f"{shown}: {_not_there(path)}"))
    return Discovered(list(found), missing, [p for p in skipped if p not in found], unread)


def _walk(
    top: Path, found: dict[Path, None], skipped: dict[Path, None], unread: list[Skipped], failed: list[FileResult]
) -> None:
    """Add what a folder holds to `found`, `skipped` (not papers), `unread` (with the reason) and `failed` (papers
    that cannot be reached)."""

    def left(path: str | Path, reason: str) -> None:
        unread.append(Skipped(path=escape_path(os.path.abspath(path)), reason=reason))

    def cannot_list(exc: OSError) -> None:
        left(exc.filename or top, f"cannot read this folder: {exc.strerror or exc}")

    entries: list[Path] = []
    for root, dirs, files in os.walk(top, onerror=cannot_list):
        dirs.sort()
        for name in dirs:
            if not name.startswith(".") and os.path.islink(os.path.join(root, name)):
                left(os.path.join(root, name), "a link to a folder: not followed (name it to ingest it)")
        entries.extend(Path(root, name) for name in files)
    for file in sorted(entries):  # the order of the paths, as before (not the walk's, folder by folder)
        if file.name.startswith(".") or not supported(file.suffix):
            continue
        if is_paper_file(file):
            found.setdefault(file.resolve(), None)
        elif os.path.isfile(file):
            skipped.setdefault(file.resolve(), None)
        elif (why := _not_a_file(file)).startswith("cannot read") and file.stem.lower() not in NOT_PAPERS:
            # A paper in a folder that may be listed but not searched: it fails like any file that cannot be read.
            shown = escape_path(os.path.abspath(file))
            failed.append(FileResult(path=shown, status="failed", error=f"{shown}: {why}"))
        else:
            left(file, why)


def _not_there(path: Path) -> str:
    """Why a path given is neither a folder nor a regular file: missing, out of reach, or another kind of thing."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "no such file or folder"
    except OSError as exc:  # a folder on the way that cannot be searched
        return f"cannot read: {exc.strerror or exc}"
    return _not_a_file(path)


def _not_a_file(path: Path) -> str:
    """Why `path`, which exists as a name, is no regular file that can be read."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a link to nothing (what it points to does not exist)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a link that leads back to itself ({exc.strerror})"
        return f"cannot read: {exc.strerror or exc}"
    kinds = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"))
    for test, kind in (*kinds, (stat.S_ISBLK, "a device")):
        if test(mode):
            return f"not a regular file ({kind})"
    return "not a regular file"


@dataclass
class IngestPlan:
    """What enriching a batch will cost (`plan_enrichment`), and the files it parsed to find out."""

    cost: Cost = field(default_factory=Cost)
    calls: dict[Path, int] = field(default_factory=dict)  # model calls planned per file (for progress)
    prepared: dict[Path, tuple[Paper, list[Chunk]]] = field(default_factory=dict)  # parsed and chunked


#: Parsed files a plan keeps for ingest to reuse (more are parsed again: memory stays bounded).
PREPARED_KEPT = 64


def parse_limits(settings: Settings) -> ParseLimits:
    """The parser's limits of these settings (`parsing.*`)."""
    from ..parser.bounded import ParseLimits  # PyMuPDF: imported when a file is parsed (reading commands never do)

    p = settings.parsing
    return ParseLimits(
        max_pages=p.max_pages,
        max_text_bytes=p.max_text_bytes,
        max_page_glyphs=p.max_page_glyphs,
        max_page_paths=p.max_page_paths,
        memory_mb=p.max_memory_mb,
        page_seconds=p.page_seconds,
        isolate=p.isolate,
    )


def prepare(
    path: Path, settings: Settings, embedder: Embedder, meta: PaperMeta | None = None, parsed: Paper | None = None
) -> tuple[Paper, list[Chunk]]:
    """Parse (in the parsing worker, within `parsing.*`; or take `parsed`, the file read ahead) and chunk one file
    as ingest does, with its library's title, authors, year and ids where `meta` has them; ParseError when nothing
    is left to index."""
    from ..parser.bounded import parse_bounded

    paper = with_library(parsed or parse_bounded(path, parse_limits(settings)), meta)
    options = ChunkOptions(**settings.chunking.model_dump(exclude={"strategy"}), embed=embedder.embed_documents)
    chunks = chunk_paper(paper, embedder.token_counter, settings.chunking.strategy, options)
    if not any(c.kind == "chunk" for c in chunks):
        raise ParseError(path, "no text to index after parsing")
    return paper, chunks


def plan_enrichment(
    paths: Iterable[str | Path],
    settings: Settings,
    enricher: Enricher,
    embedder: Embedder,
    store: PaperStore | None = None,
    *,
    force: bool = False,
) -> IngestPlan:
    """What enriching the files ingest would index (new, changed, damaged, or all with `force`) costs, before
    any model call: calls to make, calls the cache answers, tokens. Without `store` (a knowledge base not made
    yet) every file is new. Files that cannot be read or parsed are left out (ingest reports them)."""
    plan = IngestPlan()
    damaged = set(store.damaged()) if store is not None else set()
    count, embed = embedder.token_counter.count, embedder.embed_documents
    for path in discover(paths).files:
        try:
            existing = store.get_paper(doc_id_for(file_sha256(path))) if store is not None else None
            if existing is not None and existing.ready and not force and existing.doc_id not in damaged:
                continue
            paper, chunks = prepare(path, settings, embedder)
        except (OSError, PaperscopeError):
            continue
        stats = enricher.plan(paper, chunks, count, embed)
        plan.cost.add(stats, sum(1 for c in chunks if c.kind == "chunk"))
        plan.calls[path] = stats.planned
        if len(plan.prepared) < PREPARED_KEPT:
            plan.prepared[path] = (paper, chunks)
    return plan


def ingest(
    paths: Iterable[str | Path],
    settings: Settings,
    store: PaperStore | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
    repair: bool = True,
    enricher: Enricher | None = None,
    plan: IngestPlan | None = None,
    items: Sequence[LibraryItem] = (),
    sync: str | None = None,
) -> IngestReport:
    """Ingest files and folders (PDF, Markdown, text) and the PDFs of library items into the knowledge base of
    `settings`.

    Opens (and closes) the store when none is given. `force` re-ingests unchanged files, e.g. after
    changing the chunking strategy or the enrichments. `repair`: first look for papers listed as ready whose
    chunks are not all stored, and ingest them again (see the module docstring). `enricher`: index-time
    enrichment (rag/enrich), every generated text of a paper computed before anything of it is written;
    `plan`: what `plan_enrichment` found (its parsed files are reused); `items`: papers of a library, each
    ingested with its metadata (one without a readable PDF fails, named by its `problem`); `sync`: the library
    `items` are the whole of (`PaperMeta.library`): its papers whose item is no longer among them (deleted, in the
    trash) or whose item now holds another PDF are removed. Ctrl-C raises IngestInterrupted carrying what was done.
    """
    started = time.perf_counter()
    files, report_files, skipped, unread = discover(paths)
    metas: dict[Path, PaperMeta] = {}
    for item in items:
        if item.pdf is None:
            report_files.append(
                FileResult(path=item.meta.title or item.meta.item_key, status="failed", error=item.problem)
            )
            continue
        path = item.pdf.absolute()
        if path not in metas:
            files.append(path)
        metas[path] = item.meta
    own = store is None
    store = store or PaperStore.open(settings)
    embed_before = getattr(store.embedder, "seconds", 0.0)

    def report() -> IngestReport:
        return IngestReport(
            files=report_files,
            skipped=[escape_path(p) for p in skipped],
            unread=unread,
            seconds=time.perf_counter() - started,
            embed_seconds=getattr(store.embedder, "seconds", 0.0) - embed_before,
            cost=plan.cost if plan is not None else None,
        )

    current: Path | None = None
    ahead = _parse_ahead(settings, store, force, plan)
    try:
        damaged = _damaged(store) if repair else {}
        job = _Job(settings, store, progress, enricher, plan, ahead)
        for i, current in enumerate(files):
            ahead.queue(files[i + 1] if i + 1 < len(files) else None)
            report_files.append(_ingest_file(current, job, force, damaged, metas.get(current)))
        ahead.queue(None)
        if sync is not None:
            held = {
                metas[Path(unescape_path(f.path))].item_key: f.doc_id for f in report_files if _holds_item(f, metas)
            }
            keys = {i.meta.item_key for i in items}
            report_files.extend(_sync_removals(store, sync, keys, held))
        for paper, stored in list(damaged.values()):  # damaged papers no file of this batch holds
            holder = next((unescape_path(s) for s in paper.sources if holds(s, paper.sha256)), None)
            if holder is None:
                report_files.append(_unrepairable(paper, stored))
                continue
            current = holder
            report_files.append(_ingest_file(holder, job, True, damaged))
        current = None
    except KeyboardInterrupt as exc:
        raise IngestInterrupted(report(), escape_path(current) if current else None) from exc
    finally:
        ahead.close()
        if own:
            store.close()
        else:
            store.flush()
    return report()


Damaged = dict[str, tuple[PaperRecord, int]]  # doc_id -> (catalogue row, body chunks stored)


def _parse_ahead(settings: Settings, store: PaperStore, force: bool, plan: IngestPlan | None) -> ParseAhead:
    """Reads the next PDF in the parsing worker while this one is embedded: only one ingest will parse (isolated
    parsing, a paper not stored ready or `force`, not already parsed by the plan)."""
    from ..parser.bounded import parse_bounded
    from ..parser.files import PDF_SUFFIXES

    limits = parse_limits(settings)

    def wanted(path: Path) -> bool:
        # Only what parse_bounded sends to the worker: the rest is parsed here, where this process is busy embedding.
        if path.suffix.lower() not in PDF_SUFFIXES or not limits.isolate:
            return False
        if plan is not None and path in plan.prepared:
            return False  # parsed already by the plan
        if force:
            return True
        try:
            stored = store.get_paper(doc_id_for(file_sha256(path)))
        except (OSError, PaperscopeError):
            return False  # ingest names the problem when it reaches the file
        return stored is None or not stored.ready

    return ParseAhead(lambda path, cancel: parse_bounded(path, limits, cancel=cancel), wanted)


def _damaged(store: PaperStore) -> Damaged:
    """The ready papers whose chunks are not all stored (see `PaperStore.damaged`)."""
    return {d: (p, n) for d, n in store.damaged().items() if (p := store.get_paper(d)) is not None}


def damaged_detail(listed: int, stored: int) -> str:
    """What is wrong with a damaged paper, e.g. "listed with 87 chunks, none stored"."""
    return f"listed with {listed} chunks, {stored or 'none'} stored"


def _unrepairable(paper: PaperRecord, stored: int) -> FileResult:
    where = ", ".join(paper.sources) or "no recorded path"
    error = (
        f"{paper.title or paper.doc_id}: damaged ({damaged_detail(paper.n_chunks, stored)}) and no file holds it "
        f"any more ({where}); ingest its file again, or `paperscope remove {paper.doc_id[:8]}`"
    )
    return FileResult(path=paper.source, status="failed", doc_id=paper.doc_id, title=paper.title, error=error)


@dataclass
class _Job:
    """What every file of one ingest call shares."""

    settings: Settings
    store: PaperStore
    progress: Progress | None = None
    enricher: Enricher | None = None
    plan: IngestPlan | None = None
    ahead: ParseAhead | None = None


def _ingest_file(
    path: Path, job: _Job, force: bool, damaged: Damaged | None = None, meta: PaperMeta | None = None
) -> FileResult:
    """Ingest one file (with its library's metadata, if any); a paper in `damaged` is ingested again whatever
    `force` says, and taken out of it."""
    store, progress, enricher = job.store, job.progress, job.enricher
    started = time.perf_counter()
    source = escape_path(path)  # what the catalogue stores and messages show
    name = escape_path(path.name)

    def report(stage: Stage, done: int = 0, total: int = 0) -> None:
        if progress is not None:
            progress(path, stage, done, total)

    def failed(error: str, doc_id: str | None = None) -> FileResult:
        report("done")
        took = time.perf_counter() - started
        return FileResult(path=source, status="failed", doc_id=doc_id, error=error, seconds=took)

    report("reading")
    try:
        sha = file_sha256(path)
    except OSError as exc:
        return failed(f"{name}: cannot read: {exc.strerror or exc}")
    doc_id = doc_id_for(sha)
    repairing = damaged is not None and damaged.pop(doc_id, None) is not None
    force = force or repairing
    try:
        existing = store.get_paper(doc_id)
        earlier = [p for p in store.papers_from_source(source) if p.doc_id != doc_id]
        change = library_change(existing, meta) if existing is not None else "none"
        force = force or change == "paper"
        if existing is not None and existing.ready and not force:
            if change == "catalogue" and meta is not None:
                store.set_meta(doc_id, catalogue_meta(existing.meta, meta))
            if source not in existing.sources:
                store.set_sources(doc_id, [*existing.sources, source])
            replaced = _release(store, earlier, source)
            report("done")
            hint = []
            if enricher is not None and existing.enrichments != enricher.strategies:
                had = ", ".join(existing.enrichments) or "no enrichment"
                hint = [f"{name}: stored with {had}; `ingest --force` indexes it with {', '.join(enricher.strategies)}"]
            return FileResult(
                path=source,
                status="replaced" if replaced else "updated" if change == "catalogue" else "unchanged",
                doc_id=doc_id,
                title=existing.title,
                pages=existing.pages,
                seconds=time.perf_counter() - started,
                replaced=replaced,
                warnings=hint,
                enrichments=existing.enrichments,
            )
    except PaperscopeError as exc:
        return failed(_message(exc, path, name), doc_id)

    wrote = False
    enriched: EnrichedPaper | None = None
    try:
        report("parsing")
        # A plan parsed the file without its library's record: parsed again with it.
        prepared = job.plan.prepared.pop(path, None) if job.plan is not None and meta is None else None
        if prepared is None:
            parsed = job.ahead.take(path) if job.ahead is not None else None
            prepared = prepare(path, job.settings, store.embedder, meta, parsed)
        paper, chunks = prepared
        if job.ahead is not None:
            job.ahead.begin()  # the next file is read while this one is embedded
        report("chunking")
        if enricher is not None and enricher.strategies:
            enriched = _enrich(path, job, enricher, paper, chunks, lambda done, total: report("enriching", done, total))
            chunks = enriched.chunks
        report("embedding", 0, len(chunks))
        wrote = True
        n = store.insert_paper_chunks(
            paper,
            chunks,
            doc_id,
            sha,
            source,
            # Only when someone listens: an embedder that reports no progress is asked for none.
            on_batch=(lambda done, total: report("embedding", done, total)) if progress is not None else None,
            enrichments=enriched.enrichments if enriched else (),
            summary=enriched.summary if enriched else "",
            meta=meta,
        )
        replaced = _release(store, earlier, source)
    except Exception as exc:
        # A domain error names its cause; anything else is a bug, but it must not end the batch either.
        if wrote and existing is None:
            _forget(store, doc_id)
        if isinstance(exc, PaperscopeError):
            return failed(_message(exc, path, name), doc_id)
        return failed(f"{name}: unexpected error: {type(exc).__name__}: {exc}", doc_id)
    except BaseException:
        # Ctrl-C: take back what this file wrote; a paper left "ingesting" is hidden anyway.
        if wrote and existing is None:
            _forget(store, doc_id)
        raise
    warnings = [
        f"{name}: the {what} is longer than the store keeps ({limit}); it was cut"
        for what, text, field, limit in (
            ("title", paper.title, "title", "2,048 bytes"),
            ("abstract", paper.abstract, "abstract", "65,535 bytes"),
        )
        if clipped(text, field)
    ]
    if enriched is not None:
        warnings += [f"{name}: {w}" for w in enriched.warnings]
    report("done")
    return FileResult(
        path=source,
        status="replaced" if replaced else "repaired" if repairing else "ingested",
        doc_id=doc_id,
        title=paper.title,
        pages=paper.pages,
        chunks=n,
        seconds=time.perf_counter() - started,
        replaced=replaced,
        warnings=warnings,
        structure_found=paper.structure_found,
        enrichments=enriched.enrichments if enriched else [],
        calls=enriched.stats.made if enriched else 0,
        enrich_seconds=enriched.seconds if enriched else 0.0,
    )


def _enrich(
    path: Path, job: _Job, enricher: Enricher, paper: Paper, chunks: list[Chunk], on_call: Callable[[int, int], None]
) -> EnrichedPaper:
    """Every generated text of the paper (EnrichmentError when a call fails: nothing of it is written)."""
    began = time.perf_counter()
    embedder = job.store.embedder
    count, embed = embedder.token_counter.count, embedder.embed_documents
    total = job.plan.calls.get(path) if job.plan is not None else None
    if total is None:
        total = enricher.plan(paper, chunks, count, embed).planned
    on_call(0, total)
    enriched = enricher.enrich(paper, chunks, count, embed, on_call=on_call, total=total)
    enriched.seconds = time.perf_counter() - began
    return enriched


def _message(exc: Exception, path: Path, name: str) -> str:
    """The error, naming the file by its escaped name."""
    text = str(exc).replace(path.name, name)
    return text if name in text else f"{name}: {text}"


def holds(stored_source: str, sha256: str) -> bool:
    """True when the file at a stored (escaped) path still holds the bytes with this sha256."""
    path = unescape_path(stored_source)
    try:
        return path.is_file() and file_sha256(path) == sha256
    except OSError:
        return False


def _holds_item(result: FileResult, metas: dict[Path, PaperMeta]) -> bool:
    """True when `result` is a library item's file that is now stored (whatever it was before)."""
    return result.status != "failed" and result.doc_id is not None and Path(unescape_path(result.path)) in metas


def _sync_removals(store: PaperStore, library: str, keys: set[str], held: dict[str, str | None]) -> list[FileResult]:
    """Remove the papers of `library` whose item is gone (`keys`: the items it has now) or holds another paper now
    (`held`: item key -> the doc_id stored for it in this run)."""
    removed = []
    for paper in store.list_papers(brief=True):
        meta = paper.meta
        if meta.library != library or not meta.key:
            continue
        if meta.key in keys and held.get(meta.key, paper.doc_id) == paper.doc_id:
            continue
        store.delete_paper(paper.doc_id)
        why = "no longer in the library (deleted or in the trash)" if meta.key not in keys else "replaced"
        removed.append(
            FileResult(path=paper.source, status="removed", doc_id=paper.doc_id, title=paper.title,
                       warnings=[f"{paper.title or paper.doc_id}: {why}"])
        )  # fmt: skip
    return removed


def library_change(existing: PaperRecord, meta: PaperMeta | None) -> Literal["none", "catalogue", "paper"]:
    """How a stored paper's library record changed: "paper" when its title, authors, year, ids or citation key did
    (chunks and the paper's names carry them: it is ingested again), "catalogue" when only what the catalogue alone
    keeps did (collections, tags, venue, url, the item's key or library), "none" when nothing did."""
    if meta is None:
        return "none"
    kept = existing.meta
    names = (
        (meta.title.strip() and meta.title.strip() != existing.title)
        or (meta.authors and meta.authors != existing.authors)
        or (meta.year and meta.year != existing.year)
        or (meta.doi and meta.doi != kept.doi)
        or (meta.arxiv_id and meta.arxiv_id != kept.arxiv_id)
        or meta.citation_key != kept.citation_key
    )
    if names:
        return "paper"
    return "catalogue" if catalogue_meta(kept, meta) != kept else "none"


def catalogue_meta(kept: PaperMeta, meta: PaperMeta) -> PaperMeta:
    """The stored record `kept` with what the catalogue alone keeps taken from the library's `meta`."""
    fields = ("venue", "url", "item_key", "collections", "tags", "origin", "library")
    return kept.model_copy(update={f: getattr(meta, f) for f in fields})


def _release(store: PaperStore, earlier: list[PaperRecord], source: str) -> list[str]:
    """Take `source` from the papers it held before; delete those no other path still holds.

    Returns the doc_ids deleted (replaced). A paper whose other path still holds its bytes stays, with
    the paths that do recorded as its sources.
    """
    removed: list[str] = []
    for old in earlier:
        keep = [s for s in old.sources if s != source and holds(s, old.sha256)]
        if keep:
            store.set_sources(old.doc_id, keep, source=keep[0] if old.source == source else None)
        else:
            store.delete_paper(old.doc_id)
            removed.append(old.doc_id)
    return removed


def _forget(store: PaperStore, doc_id: str) -> None:
    """Best-effort removal of a half-written paper (it stays hidden from search if this fails too)."""
    with contextlib.suppress(Exception):  # the original error is the one to report
        store.delete_paper(doc_id)
