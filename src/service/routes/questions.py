"""Questions: retrieve (the ranked evidence) and chat (an answer, whole or as an event stream)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import Field

from ...config import Settings
from ...operations import AskRequest, RetrieveRequest, answer, resolve_papers, retrieve, settings_request
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


@router.post("/v1/retrieve", summary="The ranked evidence for a question")
async def retrieve_route(service: ServiceDep, body: RetrieveRequest) -> dict[str, Any]:
    """What `paperscope retrieve --json` prints: the hits (citation, paper, section, pages, score, text), the
    track, notes, models and the operators that ran."""
    target, settings = _prepare(service, body)
    found = await service.run(retrieve, target.store, settings, body)
    return found.response()


@router.post(
    "/v1/chat",
    summary="Answer a question, with history",
    responses={200: {"content": {"text/event-stream": {}}, "description": "The Answer, or its event stream."}},
)
async def chat(service: ServiceDep, body: ChatRequest) -> Any:
    """The Answer object (as `paperscope ask --json`); with `stream`, a text/event-stream of `data:` events
    (progress, tool, token, then answer) ending with `data: [DONE]`."""
    target, settings = _prepare(service, body)
    if body.paper:  # unknown papers are a 4xx before any answer starts, not an error event in a stream
        papers = await service.run(resolve_papers, target.store, body.paper, target.name, "paper")
        body = body.model_copy(update={"paper": papers})
    ask = AskRequest.model_validate(body.model_dump(exclude={"history", "stream"}))
    history = await service.run(history_answers, target.store, body.history) if body.history else []
    if not body.stream:
        result = await service.run(answer, target.store, settings, ask, history=history)
        return result.model_dump(mode="json")

    def work(emit: Emit) -> None:
        answer_events(target.store, settings, ask, history, emit)

    return StreamingResponse(event_stream(work, service.pool), media_type="text/event-stream", headers=NO_BUFFERING)


#: Proxies (nginx) must pass each event on as it comes.
NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _prepare(service: Service, body: AskRequest | RetrieveRequest) -> tuple[KnowledgeBase, Settings]:
    """The knowledge base a request names and its settings with the request's options (4xx when bad)."""
    target = service.library.get(body.kb)
    return target, target.settings(settings_request(body))
