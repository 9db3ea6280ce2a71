"""Page images: GET /v1/documents/{doc_id}/pages/{n}.png, a page of the paper's PDF with a chunk's boxes drawn;
and the PDF itself: GET /v1/documents/{doc_id}/pdf (the web page opens it at the cited page).

The page is drawn in a worker process (`Service.renderer`), within `service.render_seconds` and
`service.render_memory_mb`: MuPDF holds the GIL while it draws, and a page of a million paths takes minutes. A
client that hangs up stops its drawing.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import FileResponse, Response

from ...answer.claims import span_boxes
from ...isolation import Cancelled, Crashed, OverMemory, OverTime
from ...parser.page_image import (
    DEFAULT_DPI,
    MAX_DPI,
    MAX_WIDTH,
    MIN_DPI,
    MIN_WIDTH,
    PageImage,
    PageImageError,
    Rect,
    render_page,
)
from ..errors import ApiError, ClientGone
from ..page_images import chunk_rects, find_pdf
from ..state import Service, ServiceDep, abandon, watch_client
from .documents import DocId, KbQuery, find_paper

router = APIRouter(tags=["documents"])

#: The paper's bytes never change under its doc_id (it is their hash): a browser may keep the image.
CACHE = "private, max-age=3600"
#: How a page that cannot be drawn is answered.
PROBLEMS = {
    "unreadable": (410, "pdf_gone"),
    "unknown_page": (404, "unknown_page"),
    "too_large": (400, "invalid_option"),
}


@router.get(
    "/v1/documents/{doc_id}/pages/{page}.png",
    summary="A page of a paper as an image, a chunk highlighted",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "The page as PNG."}},
)
async def page_image(
    service: ServiceDep,
    request: Request,
    doc_id: DocId,
    page: Annotated[int, Path(ge=1, le=100_000, description="The page, 1-based.")],
    chunk: Annotated[
        int | None, Query(ge=0, le=10_000_000, description="A chunk_index whose line boxes are drawn on the page.")
    ] = None,
    dpi: Annotated[
        int | None, Query(ge=MIN_DPI, le=MAX_DPI, description=f"Resolution (default {DEFAULT_DPI}).")
    ] = None,
    width: Annotated[
        int | None, Query(ge=MIN_WIDTH, le=MAX_WIDTH, description="Width in pixels, instead of dpi.")
    ] = None,
    span: Annotated[
        str | None,
        Query(
            pattern=r"^\d{1,7}-\d{1,7}$",
            description="START-END: only the lines holding the chunk's text from START to END (a claim's span).",
        ),
    ] = None,
    kb: KbQuery = None,
) -> Response:
    """Page `page` of the paper's PDF as PNG; with `chunk`, the boxes of the lines that chunk came from drawn over
    it, with `span` only those of the lines its text from START to END is on (headers `X-Paperscope-Boxes`: how
    many lie on this page; `X-Paperscope-Scale`: pixels per PDF point). 410 when the PDF is no longer on disk; 422
    when the page takes longer to draw than the server allows."""
    if dpi is not None and width is not None:
        raise ApiError(400, "invalid_option", "dpi and width: give one of them, not both")
    if span is not None and chunk is None:
        raise ApiError(400, "invalid_option", "span: give the chunk it is a span of (chunk=I)")
    start, end = (int(v) for v in span.split("-")) if span is not None else (0, 0)
    if span is not None and start >= end:
        raise ApiError(400, "invalid_option", f"span {span}: its start must come before its end")
    target = service.library.get(kb)

    def locate() -> tuple[FilePath, list[Rect]]:
        record = find_paper(target, doc_id, ready=True)
        if record.pages and page > record.pages:
            raise ApiError(
                404, "unknown_page", f"paper {record.doc_id} has pages 1..{record.pages}; there is no page {page}"
            )
        rects: list[Rect] = []
        if chunk is not None:
            found = [c for c in target.store.get_context_window(record.doc_id, chunk, 0) if c.chunk_index == chunk]
            if not found:
                raise ApiError(
                    404, "unknown_chunk", f"paper {record.doc_id} has no chunk {chunk} (it has {record.n_chunks})"
                )
            metadata = found[0].metadata or {}
            if span is not None:
                metadata = {**metadata, "boxes": span_boxes(found[0], start, end)}
            rects = chunk_rects(metadata, page)
        return find_pdf(record), rects

    path, rects = await service.run(locate)
    image = await draw(service, request, path, page, dpi=dpi, width=width, rects=rects)
    headers = {
        "Cache-Control": CACHE,
        "X-Paperscope-Boxes": str(len(rects)),
        "X-Paperscope-Scale": f"{image.scale:.6g}",
    }
    return Response(image.png, media_type="image/png", headers=headers)


@router.get(
    "/v1/documents/{doc_id}/pdf",
    summary="A paper's PDF",
    response_class=FileResponse,
    responses={200: {"content": {"application/pdf": {}}, "description": "The PDF the paper was read from."}},
)
async def pdf(service: ServiceDep, doc_id: DocId, kb: KbQuery = None) -> FileResponse:
    """The PDF the paper was read from, as ingested (checked against its sha256), to open at a page
    (`#page=N`). 404 `not_a_pdf` when the paper was read from Markdown or text; 410 when the PDF is no longer on
    disk, as for its page images."""
    target = service.library.get(kb)

    def locate() -> FilePath:
        # A paper read from text: there is nothing to send, not a bad request (as a page image of it is).
        return find_pdf(find_paper(target, doc_id, ready=True), not_a_pdf=(404, "there is no PDF to open"))

    path = await service.run(locate)
    # inline: the browser shows it rather than saving it; the name is the file's (quoted by FileResponse).
    return FileResponse(
        path,
        media_type="application/pdf",
        filename=path.name,
        content_disposition_type="inline",
        headers={"Cache-Control": CACHE},
    )


async def draw(
    service: Service,
    request: Request,
    path: FilePath,
    page: int,
    *,
    dpi: int | None,
    width: int | None,
    rects: list[Rect],
) -> PageImage:
    """`render_page` in a worker process, given up (the worker stopped) when the client hangs up."""
    limits = service.settings.service
    cancel = threading.Event()
    work = asyncio.ensure_future(
        service.renderer.acall(
            render_page, path, page, dpi=dpi, width=width, rects=rects, seconds=limits.render_seconds, cancel=cancel
        )
    )
    gone = watch_client(request, cancel)
    try:
        done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:
            raise ClientGone()
        return work.result()
    except PageImageError as exc:
        status, code = PROBLEMS[exc.problem]
        raise ApiError(status, code, str(exc)) from exc
    except OverTime as exc:
        raise ApiError(
            422,
            "page_too_complex",
            f"page {page} of {path.name} takes longer than {limits.render_seconds:g} s to draw "
            "(service.render_seconds)",
        ) from exc
    except OverMemory as exc:
        raise ApiError(
            422,
            "page_too_complex",
            f"page {page} of {path.name} needs more than {limits.render_memory_mb} MB to draw "
            "(service.render_memory_mb); ask a lower dpi or width",
        ) from exc
    except Crashed as exc:
        raise ApiError(
            422, "page_unreadable", f"page {page} of {path.name}: the PDF reader crashed drawing it"
        ) from exc
    except Cancelled as exc:
        raise ClientGone() from exc
    finally:
        gone.cancel()
        cancel.set()  # a no-op once the page is drawn; stops the worker when this request was cancelled
        if not work.done():  # it ends as Cancelled, which no one waits for: not a fault to log
            abandon(work)
