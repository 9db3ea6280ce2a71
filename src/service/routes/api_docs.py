"""The API's page, `/docs` (Swagger UI), with its script and style served by `paperscope serve` itself.

FastAPI's own page loads Swagger UI from a CDN: blank on a machine without internet, and a page that runs a
stranger's script beside the API key. fastapi-offline carries the same Swagger UI build in its package; it is
mounted at /static-docs/ and the page points there, so the docs load nothing from elsewhere. There is no /redoc:
ReDoc's bundle fetches its logo from its own CDN.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/static-docs"
#: fastapi-offline's files (swagger-ui-bundle.js, swagger-ui.css, favicon.png; its ReDoc is not served).
ASSET_DIR = str(files("fastapi_offline") / "static")


def mount_api_docs(app: FastAPI) -> None:
    """Mount the docs' files and the page (the app is built with `docs_url=None, redoc_url=None`)."""
    app.mount(ASSETS, StaticFiles(directory=ASSET_DIR), name="static-docs")
    router = APIRouter(tags=["web page"])  # one per app: the pages name this app's title and URLs
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @router.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - API",
            oauth2_redirect_url=redirect_url,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            # Swagger UI would otherwise show a badge image fetched from validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @router.get(redirect_url, include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    app.include_router(router)
