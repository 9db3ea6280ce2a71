"""Documents and ingest jobs: upload (a job), the papers list, remove, a chunk with its neighbours."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Path, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ...config import KB_PATTERN, Settings
from ...errors import ConfigError, PaperscopeError, UnknownPaper
from ...operations import check_doc_id, matching_doc_ids, paper_rows
from ...rag.ingest import doc_id_for
from ...rag.store import PaperRecord, StoredChunk
from ..errors import ApiError
from ..jobs import Job
from ..library import KnowledgeBase
from ..state import Service, ServiceDep
from ..uploads import check_content_type, check_name, remove_uploads, store_upload

router = APIRouter(tags=["documents"])

UPLOAD_FIELDS = {"file", "kb", "strategy", "chunk_size", "enrich"}
MAX_WINDOW = 5
KbQuery = Annotated[str | None, Query(pattern=KB_PATTERN, description="Knowledge base (default: the server's).")]
DocId = Annotated[str, Path(description="A doc_id, or its first characters (4 or more) when they name one paper.")]


class Accepted(BaseModel):
    """An upload taken: its ingest job, queued."""

    job_id: str
    doc_id: str = Field(description="The paper's doc_id, from the file's bytes.")
    kb: str
    file: str
    state: str


class Removed(BaseModel):
    doc_id: str
    title: str
    removed: bool = True
    chunks: int = Field(description="Chunk rows deleted.")


@router.post("/v1/documents", status_code=202, response_model=Accepted, summary="Upload a paper to ingest")
async def upload(
    service: ServiceDep,
    request: Request,
    file: Annotated[UploadFile, File(description="A PDF, Markdown or text file; its name without path parts.")],
    kb: Annotated[str | None, Form(pattern=KB_PATTERN, description="Knowledge base (created if new).")] = None,
    strategy: Annotated[str | None, Form(description="Chunking strategy (see `paperscope operators`).")] = None,
    chunk_size: Annotated[int | None, Form(description="Chunk size in embedding-model tokens.")] = None,
    enrich: Annotated[str | None, Form(description="Enrichers to run, comma-separated (registered ones).")] = None,
) -> JSONResponse:
    """Store the file and queue its ingest; 202 with the job to follow at GET /v1/jobs/{job_id}."""
    form = await request.form()
    unknown = sorted(set(form.keys()) - UPLOAD_FIELDS)
    if unknown:
        raise ApiError(
            400, "invalid_option", f"unknown field {unknown[0]!r}; the fields are {', '.join(sorted(UPLOAD_FIELDS))}"
        )
    name = check_name(file.filename)
    check_content_type(name, file.content_type)
    options = _ingest_options(strategy, chunk_size, enrich)
    target = await run_in_threadpool(service.library.get, kb, create=True)
    settings = target.settings(options)  # a bad value is refused before the file is stored
    _check_enrichment(settings)
    limit = int(service.settings.service.max_upload_mb * 1_000_000)
    stored = await run_in_threadpool(store_upload, file.file, name, service.library.uploads, limit)
    job = Job(job_id=service.jobs.new_id(), kb=target.name, file=name, doc_id=doc_id_for(stored.sha256))
    uploads, library = service.library.uploads, service.library

    def forget_file() -> None:  # a file that failed is kept only if some paper still holds its bytes
        if not library.holds(stored.sha256):
            remove_uploads(uploads, stored.sha256)

    job = service.jobs.submit(job, stored.path, settings, target.store, on_failed=forget_file)
    body = Accepted(job_id=job.job_id, doc_id=job.doc_id, kb=job.kb, file=job.file, state=job.state)
    return JSONResponse(body.model_dump(), status_code=202, headers={"Location": f"/v1/jobs/{job.job_id}"})


def _ingest_options(strategy: str | None, chunk_size: int | None, enrich: str | None) -> dict[str, Any]:
    """The request settings layer of an upload's form fields; unknown names refused, naming them."""
    from ...rag import registry
    from ...rag.chunking import chunker

    if strategy is not None:
        try:
            chunker(strategy)
        except PaperscopeError as exc:
            raise ConfigError(f"strategy: {exc}") from None
    names = [n.strip() for n in (enrich or "").split(",") if n.strip()]
    for name in names:
        if name == "none":
            continue
        try:
            registry.get("enricher", name)
        except ConfigError as exc:
            raise ConfigError(f"enrich: {exc}") from None
    options: dict[str, Any] = {"chunking": {"strategy": strategy, "chunk_size": chunk_size}}
    if names:
        options["enrichment"] = {"strategies": ",".join(names)}
    return options


def _check_enrichment(settings: Settings) -> None:
    """Enrichment calls the chat model: without one configured the upload is refused now, in one line, rather than
    failing as a job."""
    if settings.enrichment.strategies and not settings.llm.model:
        raise ConfigError(
            f"enrich: {', '.join(settings.enrichment.strategies)} needs a chat model, and this server has none "
            "configured (llm.model, PAPERSCOPE_LLM_MODEL)"
        )


@router.get("/v1/jobs/{job_id}", response_model=Job, summary="An ingest job")
async def job(service: ServiceDep, job_id: str) -> Job:
    """Where the job is: queued, running (stage and progress), done or failed (with the reason)."""
    found = service.jobs.get(job_id)
    if found is None:
        raise ApiError(404, "unknown_job", f"no job {job_id!r} (jobs are kept in memory until the server stops)")
    return found


@router.get("/v1/jobs", response_model=list[Job], summary="Recent ingest jobs")
async def jobs(service: ServiceDep) -> list[Job]:
    """The newest jobs first (up to 50)."""
    return service.jobs.recent()


@router.get("/v1/documents", summary="The papers of a knowledge base")
async def documents(service: ServiceDep, kb: KbQuery = None) -> list[dict[str, Any]]:
    """The list `paperscope papers --json` prints, and when each paper was last ingested (`ingested_at`, Unix
    seconds: the web page's "recently added" order)."""
    target = service.library.get(kb)

    def listing() -> list[dict[str, Any]]:
        records = target.store.list_papers()
        rows = paper_rows(records, target.store.damaged(records))
        return [{**row, "ingested_at": r.ingested_at or None} for row, r in zip(rows, records, strict=True)]

    return await service.run(listing)


def find_paper(target: KnowledgeBase, given: str, *, ready: bool = False) -> PaperRecord:
    """The paper `given` names (doc_id or unambiguous prefix); UnknownPaper (404) else."""
    try:
        check_doc_id(given)
    except ConfigError as exc:
        raise ApiError(400, "invalid_option", f"doc_id: {exc}") from None
    papers = {p.doc_id: p for p in target.store.list_papers(brief=True) if p.ready or not ready}
    matches = matching_doc_ids(papers, given)
    if len(matches) != 1:
        problem = (
            f"is ambiguous: {', '.join(matches)}" if matches else f"is not a paper in knowledge base {target.name!r}"
        )
        raise UnknownPaper(f"doc_id {given} {problem}")
    return papers[matches[0]]


@router.delete("/v1/documents/{doc_id}", response_model=Removed, summary="Remove a paper")
async def remove(service: ServiceDep, doc_id: DocId, kb: KbQuery = None) -> Removed:
    """Remove the paper and all its chunks (after the running ingest job, if any), and its uploaded file."""
    target = service.library.get(kb)

    def delete() -> Removed:
        with service.jobs.write_lock:  # one writer at a time: never in the middle of an ingest
            record = find_paper(target, doc_id)
            n = target.store.delete_paper(record.doc_id)
        if record.sha256 and not service.library.holds(record.sha256):
            remove_uploads(service.library.uploads, record.sha256)
        return Removed(doc_id=record.doc_id, title=record.title, chunks=n)

    return await service.run(delete)


@router.get("/v1/documents/{doc_id}/chunks/{index}", summary="A chunk and its neighbours")
async def chunk(
    service: ServiceDep,
    doc_id: DocId,
    index: Annotated[int, Path(ge=0, le=10_000_000, description="The chunk_index.")],
    window: Annotated[int, Query(ge=0, le=MAX_WINDOW, description="Neighbours on each side.")] = 0,
    kb: KbQuery = None,
) -> dict[str, Any]:
    """The chunk `<doc_id>:<index>` (citation, text, section, pages, boxes), with `window` neighbours each side."""
    target = service.library.get(kb)

    def read() -> dict[str, Any]:
        record = find_paper(target, doc_id, ready=True)
        chunks = target.store.get_context_window(record.doc_id, index, window)
        center = next((c for c in chunks if c.chunk_index == index), None)
        if center is None:
            raise ApiError(
                404, "unknown_chunk", f"paper {record.doc_id} has no chunk {index} (it has {record.n_chunks})"
            )
        return {**chunk_view(center), "window": [chunk_view(c) for c in chunks]}

    return await service.run(read)


def chunk_view(c: StoredChunk) -> dict[str, Any]:
    """A stored chunk as the API shows it: citation, text, section, pages and the boxes it covers on them."""
    meta = c.metadata or {}
    return {
        "citation": c.citation,
        "doc_id": c.doc_id,
        "chunk_index": c.chunk_index,
        "title": c.title,
        "section_title": c.section_title,
        "section_category": c.section_category.name,
        "page": c.page_number,
        "page_end": max(int(meta.get("page_end") or c.page_number), c.page_number),
        "kind": c.kind,
        "text": c.text,
        "boxes": list(meta.get("boxes") or []),
    }


PaperQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=500,
        description='A doc_id (or its first characters), or the paper by name: "SPECTER", "Cohan et al.", a DOI.',
    ),
]


async def _citing(service: Service, paper: str, kb: str | None, kind: str) -> dict[str, Any]:
    from ...rag.citing import citing_listing

    target = service.library.get(kb)
    found: dict[str, Any] = await service.run(citing_listing, target.store, paper, kind)
    return found


@router.get("/v1/references", summary="A paper's reference list, the papers the library holds marked")
async def paper_references(service: ServiceDep, paper: PaperQuery, kb: KbQuery = None) -> dict[str, Any]:
    """What `paperscope refs PAPER --json` prints: the paper, and its references each with `held` (a doc_id or null)."""
    return await _citing(service, paper, kb, "references")


@router.get("/v1/cited-by", summary="The papers of the library that cite a paper")
async def paper_cited_by(service: ServiceDep, paper: PaperQuery, kb: KbQuery = None) -> dict[str, Any]:
    """What `paperscope citedby PAPER --json` prints: the paper, and the papers citing it with the entry that does."""
    return await _citing(service, paper, kb, "cited_by")
