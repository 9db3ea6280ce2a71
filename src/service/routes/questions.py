"""Questions: retrieve (the ranked evidence) and chat (an answer, whole or as an event stream).

A question that may call the chat model runs in the question pool and is cancelled when its client hangs up
(`Service.ask`); one that cannot (a retrieve without transforms or the llm reranker) runs with the reads. A
request picks among the server's operators by name; what reaches outside the server (a rerank endpoint, a model
path) comes from its settings only, never from a request (`request_settings`).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ...answer.bibliography import bibtex, markdown
from ...answer.model import CitedWork
from ...cancellation import Cancellation
from ...config import Settings
from ...operations import (
    AskRequest,
    QueryOptions,
    RetrieveRequest,
    answer,
    needs_model,
    retrieve,
    scope_doc_ids,
    settings_request,
)
from ..errors import ApiError
from ..events import Emit, answer_events, event_stream
from ..history import HistoryMessage, history_answers
from ..library import KnowledgeBase
from ..state import Service, ServiceDep

router = APIRouter(tags=["questions"])


class ChatRequest(AskRequest):
    """A question of a conversation: POST /v1/chat."""

    history: list[HistoryMessage] = Field(
        default_factory=list, max_length=200, description="The conversation so far, oldest first."
    )
    stream: bool = Field(False, description="Answer as a text/event-stream of events, the Answer last.")


class ExportRequest(BaseModel):
    """An answer to export: its question, text and bibliography as POST /v1/chat returned them."""

    model_config = ConfigDict(extra="ignore")  # the whole Answer may be sent; only these are read

    format: Literal["markdown", "bibtex"] = Field(description="markdown: the answer and its references; bibtex.")
    query: str = Field("", max_length=4000)
    answer: str = Field("", max_length=200_000)
    bibliography: list[CitedWork] = Field(default_factory=list, max_length=200)


@router.post("/v1/export", summary="An answer as Markdown with its references, or its papers as BibTeX")
async def export(body: ExportRequest) -> PlainTextResponse:
    """What `paperscope ask --format markdown|bibtex` prints, for an answer the client holds."""
    if body.format == "markdown":
        return PlainTextResponse(markdown(body.query, body.answer, body.bibliography), media_type="text/markdown")
    return PlainTextResponse(bibtex(body.bibliography), media_type="application/x-bibtex")


@router.post("/v1/retrieve", summary="The ranked evidence for a question")
async def retrieve_route(service: ServiceDep, request: Request, body: RetrieveRequest) -> dict[str, Any]:
    """What `paperscope retrieve --json` prints: the hits (citation, paper, section, pages, score, text), the
    track, notes, models and the operators that ran."""
    target, settings = request_settings(service, body)
    if needs_model(settings):
        found = await service.ask(request, lambda cancel: retrieve(target.store, settings, body, cancel=cancel))
    else:
        found = await service.run(retrieve, target.store, settings, body)
    return found.response()


@router.post(
    "/v1/chat",
    summary="Answer a question, with history",
    responses={200: {"content": {"text/event-stream": {}}, "description": "The Answer, or its event stream."}},
)
async def chat(service: ServiceDep, request: Request, body: ChatRequest) -> Any:
    """The Answer object (as `paperscope ask --json`); with `stream`, a text/event-stream of `data:` events
    (progress, tool, token, then answer) ending with `data: [DONE]`."""
    target, settings = request_settings(service, body)
    if body.paper or body.collection:  # unknown papers are a 4xx before any answer starts, not an error event
        papers = await service.run(scope_doc_ids, target.store, body, target.name, ("paper", "collection"))
        body = body.model_copy(update={"paper": papers, "collection": None})
    ask = AskRequest.model_validate(body.model_dump(exclude={"history", "stream"}))
    history = await service.run(history_answers, target.store, body.history) if body.history else []
    if not body.stream:
        result = await service.ask(
            request, lambda cancel: answer(target.store, settings, ask, history=history, cancel=cancel)
        )
        return result.model_dump(mode="json")
    cancel = Cancellation()

    def work(emit: Emit) -> None:
        answer_events(target.store, settings, ask, history, emit, cancel)

    stream = event_stream(work, service.answers, cancel, service.stopping)
    return StreamingResponse(stream, media_type="text/event-stream", headers=NO_BUFFERING)


#: Proxies (nginx) must pass each event on as it comes.
NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def request_settings(service: Service, body: QueryOptions) -> tuple[KnowledgeBase, Settings]:
    """The knowledge base a request names and its settings with the request's options (4xx when bad)."""
    target = service.library.get(body.kb)
    if body.rerank is not None:
        own = target.settings().retrieval.rerank
        if body.rerank.strip().lower() != "llm" and body.rerank.strip() != (own or "").strip():
            configured = f"its own reranker {own!r} or 'llm'" if own else "'llm'"
            raise ApiError(
                400,
                "invalid_option",
                f"rerank: a request may name {configured}; rerank endpoints and model paths come from the server's "
                "settings (retrieval.rerank), never from a request",
            )
    return target, target.settings(settings_request(body))
