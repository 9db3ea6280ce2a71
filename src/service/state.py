"""What every route shares: the library of knowledge bases, the ingest jobs, the pool questions run in."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request

from ..config import Settings
from .jobs import JobQueue
from .library import Library

T = TypeVar("T")


@dataclass
class Service:
    """The server's shared parts, made once at start."""

    settings: Settings
    library: Library
    jobs: JobQueue
    #: Questions (chats, retrieves) run here, service.workers at once: the store and models are blocking calls.
    pool: ThreadPoolExecutor

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in the question pool, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))


def get_service(request: Request) -> Service:
    """The Service of the app serving `request` (a FastAPI dependency)."""
    service: Service = request.app.state.service
    return service


#: A route's parameter for the Service.
ServiceDep = Annotated[Service, Depends(get_service)]
