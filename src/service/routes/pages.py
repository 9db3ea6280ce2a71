"""Page images: GET /v1/documents/{doc_id}/pages/{n}.png, a page of the paper's PDF with a chunk's boxes drawn."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from ..errors import ApiError
from ..page_images import (
    DEFAULT_DPI,
    MAX_DPI,
    MAX_WIDTH,
    MIN_DPI,
    MIN_WIDTH,
    PageImage,
    chunk_rects,
    find_pdf,
    render_page,
)
from ..state import ServiceDep
from .documents import DocId, KbQuery, find_paper

router = APIRouter(tags=["documents"])

#: The paper's bytes never change under its doc_id (it is their hash): a browser may keep the image.
CACHE = "private, max-age=3600"


@router.get(
    "/v1/documents/{doc_id}/pages/{page}.png",
    summary="A page of a paper as an image, a chunk highlighted",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}, "description": "The page as PNG."}},
)
async def page_image(
    service: ServiceDep,
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
    kb: KbQuery = None,
) -> Response:
    """Page `page` of the paper's PDF as PNG; with `chunk`, the boxes of the lines that chunk came from drawn over
    it (headers `X-Paperscope-Boxes`: how many lie on this page; `X-Paperscope-Scale`: pixels per PDF point).
    410 when the PDF is no longer on disk."""
    if dpi is not None and width is not None:
        raise ApiError(400, "invalid_option", "dpi and width: give one of them, not both")
    target = service.library.get(kb)

    def render() -> tuple[PageImage, int]:
        record = find_paper(target, doc_id, ready=True)
        if record.pages and page > record.pages:
            raise ApiError(
                404, "unknown_page", f"paper {record.doc_id} has pages 1..{record.pages}; there is no page {page}"
            )
        rects: list[tuple[float, float, float, float]] = []
        if chunk is not None:
            found = [c for c in target.store.get_context_window(record.doc_id, chunk, 0) if c.chunk_index == chunk]
            if not found:
                raise ApiError(
                    404, "unknown_chunk", f"paper {record.doc_id} has no chunk {chunk} (it has {record.n_chunks})"
                )
            rects = chunk_rects(found[0].metadata or {}, page)
        return render_page(find_pdf(record), page, dpi=dpi, width=width, rects=rects), len(rects)

    image, drawn = await service.run(render)
    headers = {"Cache-Control": CACHE, "X-Paperscope-Boxes": str(drawn), "X-Paperscope-Scale": f"{image.scale:.6g}"}
    return Response(image.png, media_type="image/png", headers=headers)
