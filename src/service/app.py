"""The FastAPI app of `paperscope serve`: one store and embedder per knowledge base, shared by every request.

`create_app(settings)` assembles it: the routes (health; documents and jobs; page images; retrieve and chat; the
OpenAI-compatible chat; the web page at `/` with its files under /static/), the key check on every /v1 route,
JSON errors (errors.py), the upload size limit (uploads.py), and a lifespan that starts the ingest writer
(jobs.py) and closes the stores at the end. The contract is docs/http-api.md; the OpenAPI page is /docs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI

from .. import __version__
from ..settings_layers import LayeredSettings, load_layers
from . import errors
from .auth import require_key
from .jobs import JobQueue
from .library import Library
from .openai_compat import router as openai_router
from .routes.documents import router as documents_router
from .routes.health import router as health_router
from .routes.pages import router as pages_router
from .routes.questions import router as questions_router
from .routes.web import mount_static
from .routes.web import router as web_router
from .state import Service
from .uploads import UploadLimit

DESCRIPTION = (
    "Ask questions of your papers over HTTP: upload papers (ingested in the background), list and remove them, "
    "retrieve ranked evidence, chat with streamed answers and sources, or use any OpenAI client "
    "(`/v1/chat/completions`, model `paperscope`). With PAPERSCOPE_API_KEY set, every /v1 route needs "
    "`Authorization: Bearer <key>`."
)


def create_app(
    settings: LayeredSettings | None = None,
    *,
    library: Library | None = None,
    routers: Sequence[APIRouter] = (),
    v1_routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """The app serving the knowledge bases of `settings` (default: `load_layers()`; its `store.kb` is the default
    knowledge base, `service.*` the server's limits and key).

    `library`: the knowledge bases already opened (`paperscope serve` opens them first, so that a store it cannot
    open is one line before the server starts); else they are opened when the app starts. `routers` are mounted
    as they are (public, like the web page); `v1_routers` behind the key check, like every /v1 route.
    """
    layered = settings if settings is not None else load_layers()
    service_settings = layered.settings.service

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        lib = library if library is not None else Library(layered)
        jobs = JobQueue()
        pool = ThreadPoolExecutor(max_workers=service_settings.workers, thread_name_prefix="paperscope-answer")
        app.state.service = Service(settings=layered.settings, library=lib, jobs=jobs, pool=pool)
        jobs.start()
        try:
            yield
        finally:
            jobs.stop()
            # Answers still running finish in their threads; nothing new starts once the stores are closed.
            pool.shutdown(wait=False, cancel_futures=True)
            lib.close()

    app = FastAPI(title="paperscope", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    errors.install(app)
    limit = int(service_settings.max_upload_mb * 1_000_000)
    app.add_middleware(UploadLimit, path="/v1/documents", limit_bytes=limit)

    app.include_router(health_router)
    guarded = [Depends(require_key(service_settings.api_key))]
    for router in (documents_router, pages_router, questions_router, openai_router, *v1_routers):
        app.include_router(router, dependencies=guarded)
    # Public: the web page and its files hold no data; everything it shows comes from /v1 with the key.
    for router in (web_router, *routers):
        app.include_router(router)
    mount_static(app)
    return app
