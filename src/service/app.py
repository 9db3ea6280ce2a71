"""The FastAPI app of `paperscope serve`: one store and embedder per knowledge base, shared by every request.

`create_app(settings)` assembles it: the routes (health; documents and jobs; page images; retrieve and chat; the
OpenAI-compatible chat; check; the web page at `/` with its files under /static/), the gate every request passes
first (gate.py: Host, cross-site browsers, the key, body sizes), JSON errors (errors.py), and a lifespan that
starts the ingest writer (jobs.py), the pools requests run in (state.py), and closes them and the stores at the
end. The contract is docs/http-api.md; the OpenAPI page is /docs.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Security

from .. import __version__
from ..isolation import Workers
from ..settings_layers import LayeredSettings, load_layers
from . import errors
from .gate import Gate, bearer
from .jobs import JobQueue
from .library import Library
from .openai_compat import router as openai_router
from .routes.api_docs import mount_api_docs
from .routes.documents import router as documents_router
from .routes.health import router as health_router
from .routes.maintenance import router as maintenance_router
from .routes.pages import router as pages_router
from .routes.questions import router as questions_router
from .routes.web import mount_static
from .routes.web import router as web_router
from .state import Service

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
    stopping = threading.Event()  # `paperscope serve` sets it when a stop begins (app.state.stopping)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        lib = library if library is not None else Library(layered)
        jobs = JobQueue()
        answers = ThreadPoolExecutor(max_workers=service_settings.workers, thread_name_prefix="paperscope-answer")
        reads = ThreadPoolExecutor(max_workers=service_settings.read_workers, thread_name_prefix="paperscope-read")
        renderer = Workers(
            "pages",
            service_settings.render_workers,
            memory_mb=service_settings.render_memory_mb,
            preload=("pymupdf",),
            block=("pymupdf.layout", "pymupdf4llm"),  # what MuPDF's optional extras import: unused, and heavy
            nice=5,  # a page being drawn yields the cores to the server's own answers
        )
        app.state.service = Service(
            settings=layered.settings,
            library=lib,
            jobs=jobs,
            answers=answers,
            reads=reads,
            renderer=renderer,
            stopping=stopping,
        )
        jobs.start()
        try:
            yield
        finally:
            stopping.set()
            jobs.stop()
            renderer.close()
            # Answers still running finish in their threads; nothing new starts once the stores are closed.
            answers.shutdown(wait=False, cancel_futures=True)
            reads.shutdown(wait=False, cancel_futures=True)
            lib.close()

    app = FastAPI(
        title="paperscope",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by mount_api_docs from the package's own files, not a CDN
        redoc_url=None,
    )
    app.state.stopping = stopping
    errors.install(app)
    app.add_middleware(
        Gate,
        bound=service_settings.host,
        api_key=service_settings.api_key,
        allowed_hosts=service_settings.allowed_hosts,
        allowed_origins=service_settings.allowed_origins,
        max_body=int(service_settings.max_body_mb * 1_000_000),
        max_upload=int(service_settings.max_upload_mb * 1_000_000),
    )

    app.include_router(health_router)
    documented = [Security(bearer)]  # the key in the API's pages; the Gate checks it
    for router in (documents_router, pages_router, questions_router, openai_router, maintenance_router, *v1_routers):
        app.include_router(router, dependencies=documented)
    # Public: the web page and its files hold no data; everything it shows comes from /v1 with the key.
    for router in (web_router, *routers):
        app.include_router(router)
    mount_static(app)
    mount_api_docs(app)
    return app
