"""What every route shares: the library of knowledge bases, the ingest jobs, and the capacity requests run in.

Blocking work runs off the event loop, in separate capacity by what it waits on, so one kind cannot starve the
others: reads (the papers list, chunks, retrieves without a model, removals) in `reads`; questions that may call
the chat model, which can take minutes, in `answers`; page images in worker processes (`renderer`; MuPDF holds
the GIL while it draws, so a thread would freeze the whole server).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request

from ..cancellation import Cancellation
from ..config import Settings
from ..isolation import Workers
from .errors import ApiError, ClientGone
from .jobs import JobQueue
from .library import Library

T = TypeVar("T")
POLL_SECONDS = 0.25  # how often a waiting question looks whether the server is stopping
STOP_GRACE = 5.0  # seconds a question may go on once the server is stopping (its graceful stop allows 10)
STOPPING_MESSAGE = "the server is stopping: this answer was cut short; ask again once it is back"


@dataclass
class Service:
    """The server's shared parts, made once at start."""

    settings: Settings
    library: Library
    jobs: JobQueue
    #: Questions that may call the chat model, service.workers at once.
    answers: ThreadPoolExecutor
    #: Everything else that blocks (the store, the embedder), service.read_workers at once.
    reads: ThreadPoolExecutor
    #: Page images, drawn in worker processes (service.render_workers).
    renderer: Workers
    #: Set when the server begins to stop: streams under way end with an error event.
    stopping: threading.Event

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in the read pool, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.reads, functools.partial(fn, *args, **kwargs))

    async def ask(self, request: Request, fn: Callable[[Cancellation], T]) -> T:
        """`fn(cancel)` in the question pool, awaited. When the client hangs up `cancel` is set at once (a question
        still waiting for the pool then never calls the model) and ClientGone is raised; when the server is
        stopping, the question has STOP_GRACE seconds before it is cancelled and answered 503 `server_stopping`."""
        loop = asyncio.get_running_loop()
        cancel = Cancellation()
        future = loop.run_in_executor(self.answers, fn, cancel)
        gone = watch_client(request, cancel)
        stop_seen: float | None = None
        try:
            while True:
                waiting: set[asyncio.Future[Any]] = {future, gone}
                done, _ = await asyncio.wait(waiting, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                if future in done:
                    return future.result()
                if gone in done:
                    abandon(future)
                    raise ClientGone()
                if self.stopping.is_set():
                    stop_seen = stop_seen or time.monotonic()
                    if time.monotonic() - stop_seen >= STOP_GRACE:
                        cancel.set("the server is stopping")
                        abandon(future)
                        raise ApiError(503, "server_stopping", STOPPING_MESSAGE)
        finally:
            gone.cancel()


def watch_client(request: Request, cancel: Cancellation | threading.Event) -> asyncio.Task[None]:
    """A task that ends when the client of `request` hangs up, setting `cancel` then (in the same turn of the
    event loop the server hears of it: nothing polls). Cancel the task once the answer is sent."""

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass  # the body's messages, already read by the route: what is left is the hang-up
        if isinstance(cancel, Cancellation):
            cancel.set("the client went away")
        else:
            cancel.set()

    return asyncio.create_task(watch())


def abandon(future: asyncio.Future[Any]) -> None:
    """No one waits for `future` any more: whatever it ends with (a cancelled question's error) is not a fault."""
    future.add_done_callback(lambda done: done.cancelled() or done.exception())


def get_service(request: Request) -> Service:
    """The Service of the app serving `request` (a FastAPI dependency)."""
    service: Service = request.app.state.service
    return service


#: A route's parameter for the Service.
ServiceDep = Annotated[Service, Depends(get_service)]
