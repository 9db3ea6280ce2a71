"""The web page: `/` (index.html) and its files under `/static/`, public like /healthz (the page asks for the
API key itself when a /v1 route answers 401)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from ...web import INDEX, STATIC

router = APIRouter(tags=["web page"])

#: The page runs only its own script and style and shows page images from blob: URLs; nothing from elsewhere,
#: so text from a paper or a model that slipped into markup could neither run nor load anything.
SECURITY = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The web page (`/?q=QUESTION` asks at once)."""
    return FileResponse(INDEX, media_type="text/html; charset=utf-8", headers=SECURITY)


def mount_static(app: FastAPI) -> None:
    """Serve the page's scripts and styles at /static/."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
