"""GET /healthz: does the server answer, with its store and embedder (no key needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from ..errors import error_body, fault
from ..state import ServiceDep

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Is the server up, with its store and embedder")
async def healthz(service: ServiceDep) -> JSONResponse:
    """200 `{"ok": true, "kb", "papers", "embedder", "llm"}` when the store and the embedder answer, else 503.
    `llm` says whether a language model writes the answers (`llm.model` set); without one they are sentences
    extracted from the papers, which the web page tells its reader once."""

    def check() -> dict[str, Any]:
        kb = service.library.get()
        papers = sum(1 for p in kb.store.list_papers(brief=True) if p.ready)
        kb.store.embedder.embed_query("paperscope")
        # Whether, not which: the model's name is the server's business, and this route asks for no key.
        llm = bool(kb.settings().llm.model)
        return {"ok": True, "kb": kb.name, "papers": papers, "embedder": kb.store.embedder.name, "llm": llm}

    try:
        # Not in the question pool: health answers while questions queue.
        return JSONResponse(await run_in_threadpool(check))
    except Exception as exc:
        error_id, _ = fault(exc, "GET /healthz")
        # No key is needed here: the details (paths, hosts) stay in the server's log.
        message = f"the store or the embedder does not answer (id {error_id}); the server log has the details"
        body = {"ok": False, **error_body("unhealthy", message, error_id)}
        return JSONResponse(body, status_code=503)
