"""Every error the server answers, as one JSON shape: `{"error": {"code", "message", "id"}}`.

Bad input is a 4xx whose message is one line naming the field, file, knowledge base or doc_id at fault. A fault
of the server is a 5xx whose message gives an error id; the id and the traceback go to the server's log, never
to the client.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError, LLMError, PaperscopeError, ParseError, RerankError, StoreError, UnknownPaper
from ..operations import validation_message

log = logging.getLogger("paperscope.service")

_STATUS_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}


class ApiError(Exception):
    """An error answered with `status` and `{"error": {"code", "message"}}`."""

    def __init__(self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


class ClientGone(Exception):
    """The client hung up before its answer was ready: nothing is sent back, nothing is logged."""


class UnknownKnowledgeBase(ConfigError):
    """A request names a knowledge base that does not exist."""


def new_error_id() -> str:
    """A short id that ties a client's error message to the server log's traceback."""
    return uuid.uuid4().hex[:12]


def error_body(code: str, message: str, error_id: str | None = None) -> dict[str, Any]:
    """The JSON body of an error response."""
    error: dict[str, Any] = {"code": code, "message": message}
    if error_id is not None:
        error["id"] = error_id
    return {"error": error}


def fault(exc: BaseException, where: str) -> tuple[str, str]:
    """Log a server fault with a new error id and its traceback; (id, the one line the client is told)."""
    error_id = new_error_id()
    log.error("error %s in %s: %s: %s", error_id, where, type(exc).__name__, exc, exc_info=exc)
    return error_id, f"internal error (id {error_id}); the server log has the details"


def classify(exc: BaseException) -> tuple[int, str] | None:
    """(status, code) of a domain error that is the client's to fix; None for a server fault."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code
    if isinstance(exc, UnknownKnowledgeBase):
        return 404, "unknown_kb"
    if isinstance(exc, UnknownPaper):
        return 404, "unknown_paper"
    if isinstance(exc, ParseError):
        return 400, "bad_file"
    if isinstance(exc, ConfigError):
        return 400, "invalid_option"
    if isinstance(exc, RerankError | LLMError):
        return 502, "upstream_failed"
    return None


def error_response(exc: BaseException, where: str) -> JSONResponse:
    """The response for any exception: the client's error as a 4xx, a store failure as 503, the rest as 500."""
    known = classify(exc)
    if known is not None:
        status, code = known
        headers = exc.headers if isinstance(exc, ApiError) else None
        return JSONResponse(error_body(code, str(exc)), status_code=status, headers=headers)
    error_id, message = fault(exc, where)
    if isinstance(exc, StoreError):
        # The store's own words help the operator (Milvus down, a damaged file); they carry no secret.
        return JSONResponse(error_body("store_unavailable", f"{exc} (id {error_id})", error_id), status_code=503)
    return JSONResponse(error_body("internal", message, error_id), status_code=500)


def install(app: FastAPI) -> None:
    """Answer every error of `app` as JSON: bad input 4xx, unknown routes 404, faults 5xx with an id."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        return error_response(exc, f"{request.method} {request.url.path}")

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        errors = exc.errors() if isinstance(exc, RequestValidationError) else []
        return JSONResponse(error_body("invalid_request", validation_message(errors)), status_code=422)

    async def on_model(request: Request, exc: Exception) -> JSONResponse:
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        return JSONResponse(error_body("invalid_request", validation_message(errors)), status_code=422)

    async def on_gone(request: Request, exc: Exception) -> Response:
        return Response(status_code=499)  # nginx's "client closed request": no one reads it

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        if isinstance(exc.__cause__, ApiError):  # raised while FastAPI read the body (an upload over the limit)
            return error_response(exc.__cause__, f"{request.method} {request.url.path}")
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = str(exc.detail) if exc.status_code != 404 else f"no route {request.method} {request.url.path}"
        return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(PaperscopeError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_model)  # a model a route builds itself from the body
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(ClientGone, on_gone)
    app.add_middleware(Faults)


class Faults:
    """ASGI middleware: an exception no handler took becomes a 500 with an error id (logged with its traceback);
    a response already under way (a stream) is ended, and the fault logged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            where = f"{scope.get('method', '')} {scope.get('path', '')}"
            if started:
                fault(exc, where)
                return
            response = error_response(exc, where)
            await response(scope, receive, send)
