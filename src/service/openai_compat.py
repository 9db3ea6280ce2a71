"""OpenAI-compatible chat: any OpenAI client or chat UI can talk to the papers (`POST /v1/chat/completions`,
`GET /v1/models`).

The model is `paperscope` (the server's knowledge base) or `paperscope:<kb>`. The last message is the question, the
ones before it the history (system messages are not read: the answer's way is paperscope's). The reply's text is
the answer followed by its numbered sources, each with its citation id, so a conversation sent back keeps
follow-ups on their paper; the extra field `paperscope` holds the whole Answer object (in the last chunk of a
stream). paperscope's own options go in an optional `paperscope` object (`k`, `paper`, `section`, `no_agent`,
...: as POST /v1/chat takes them); other OpenAI fields (temperature, max_tokens, ...) are accepted and not used.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..answer.model import Answer
from ..cancellation import Cancellation
from ..chat import pages_label
from ..operations import AskRequest, QueryOptions, answer
from .errors import ApiError
from .events import Emit, answer_events, run_streaming, sse
from .history import HistoryMessage, history_answers
from .routes.questions import NO_BUFFERING, request_settings
from .state import ServiceDep

router = APIRouter(tags=["openai"])

MODEL = "paperscope"


class CompletionMessage(BaseModel):
    """An OpenAI chat message; text content (a string, or parts of type "text")."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(str(p.get("text", "")) for p in self.content or [] if p.get("type") == "text")


class PaperscopeOptions(QueryOptions):
    """paperscope's options of a completion (the `paperscope` object)."""

    no_agent: bool = False


class CompletionRequest(BaseModel):
    """An OpenAI chat completion request (fields paperscope does not use are accepted and ignored)."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(MODEL, description="paperscope, or paperscope:<kb>.")
    messages: list[CompletionMessage] = Field(min_length=1, max_length=200)
    stream: bool = False
    paperscope: PaperscopeOptions | None = None


@router.get("/v1/models", summary="The models: paperscope, one per knowledge base")
async def models(service: ServiceDep) -> dict[str, Any]:
    """`paperscope` (the server's knowledge base) and `paperscope:<kb>` for each knowledge base."""
    names = await service.run(service.library.names)
    ids = [MODEL, *(f"{MODEL}:{kb}" for kb in names)]
    return {
        "object": "list",
        "data": [{"id": i, "object": "model", "created": 0, "owned_by": "paperscope"} for i in ids],
    }


@router.post(
    "/v1/chat/completions",
    summary="OpenAI-compatible chat completion",
    responses={200: {"content": {"text/event-stream": {}}, "description": "A completion, or its chunk stream."}},
)
async def completions(service: ServiceDep, request: Request, body: CompletionRequest) -> Any:
    """An OpenAI chat completion (or chunk stream) whose text is the answer and its sources."""
    kb = _kb_of(body.model)
    last = body.messages[-1]
    if last.role != "user" or not last.text.strip():
        raise ApiError(400, "invalid_request", "messages: the last message must be the user's question, in text")
    options = body.paperscope.model_dump(exclude_none=True) if body.paperscope else {}
    ask = AskRequest.model_validate({"kb": kb, **options, "query": last.text})
    target, settings = request_settings(service, ask)
    earlier = [
        HistoryMessage(role=m.role, content=m.text) for m in body.messages[:-1] if m.role in ("user", "assistant")
    ]
    history = await service.run(history_answers, target.store, earlier) if earlier else []
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    if not body.stream:
        result = await service.ask(
            request, lambda cancel: answer(target.store, settings, ask, history=history, cancel=cancel)
        )
        return completion(completion_id, body.model, result)
    cancel = Cancellation()

    def work(emit: Emit) -> None:
        answer_events(target.store, settings, ask, history, emit, cancel)

    chunks = _chunks(completion_id, body.model, run_streaming(work, service.answers, cancel, service.stopping))
    return StreamingResponse(chunks, media_type="text/event-stream", headers=NO_BUFFERING)


def _kb_of(model: str) -> str | None:
    name, _, kb = model.partition(":")
    if name != MODEL:
        raise ApiError(404, "model_not_found", f"model {model!r} is not served here: use {MODEL!r} or '{MODEL}:<kb>'")
    return kb or None


def sources_text(result: Answer) -> str:
    """The numbered sources under an answer, each with its citation id (what brings follow-ups back to it)."""
    if not result.sources:
        return ""
    lines = [
        f"[{s.n}] {s.title}"
        + (f" ({s.year})" if s.year else "")
        + f" · {s.section_title} ({s.section_category}) · {pages_label(s.pages)} · {s.citation}"
        for s in result.sources
    ]
    return "\n\nSources:\n" + "\n".join(lines)


def _usage(result: Answer) -> dict[str, int]:
    prompt, written = result.usage.get("input_tokens", 0), result.usage.get("output_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": written, "total_tokens": prompt + written}


def completion(completion_id: str, model: str, result: Answer) -> dict[str, Any]:
    """A whole OpenAI chat completion of an Answer."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.answer + sources_text(result)},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(result),
        "paperscope": result.model_dump(mode="json"),
    }


async def _chunks(completion_id: str, model: str, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """The chunk stream of an answer's events: its text as it is written, the sources, then a last chunk with
    finish_reason "stop" and the Answer (`paperscope`); an error as `{"error": ...}`; then `data: [DONE]`."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        body = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model}
        return sse({**body, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": ""})
    async for event in events:
        if event["type"] == "token":
            yield chunk({"content": event["text"]})
        elif event["type"] == "answer":
            result = Answer.model_validate(event["answer"])
            if result.sources:
                yield chunk({"content": sources_text(result)})
            yield chunk({}, "stop", usage=_usage(result), paperscope=event["answer"])
        elif event["type"] == "error":
            error = {k: v for k, v in event.items() if k != "type"}
            yield sse(json.dumps({"error": error}, ensure_ascii=False))
    yield sse("[DONE]")
