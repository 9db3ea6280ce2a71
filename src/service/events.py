"""Answers as they come: a question runs in a worker thread and hands its events to the response through a queue.

`answer_events` runs a question and emits, in order of happening: `progress` (stage, detail), `tool` (each tool
call of the agent as it ends: tool, args, results, seconds, error), `token` (a piece of the answer text, citations
already renumbered [n]), then always `answer` (the whole Answer object), or `error` (message, and the id of a
server fault) when the question could not be answered. `event_stream` turns emitted events into the
`text/event-stream` body of POST /v1/chat (`data: <json>` lines, then `data: [DONE]`); the OpenAI-compatible
route reads the same events. A client that goes away stops the reading, not the server: the question finishes
in its thread and its remaining events are dropped.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from typing import Any

from ..agent.answer import Answer, TraceStep
from ..config import Settings
from ..operations import AskRequest, answer
from ..rag.store import PaperStore
from .errors import classify, fault

Event = dict[str, Any]
Emit = Callable[[Event], None]
_END: Event = {"type": "_end"}


def answer_events(
    store: PaperStore, settings: Settings, request: AskRequest, history: list[Answer], emit: Emit
) -> Answer | None:
    """Answer `request`, emitting its events (see the module docstring); the Answer, or None after an error event."""
    streamed = False

    def on_token(piece: str) -> None:
        nonlocal streamed
        if piece:
            streamed = True
            emit({"type": "token", "text": piece})

    def on_step(step: TraceStep) -> None:
        emit(
            {
                "type": "tool",
                "tool": step.tool,
                "args": step.args,
                "results": step.results,
                "seconds": step.seconds,
                "error": step.error,
                "turn": step.turn,
            }
        )

    def on_progress(stage: str, detail: str) -> None:
        emit({"type": "progress", "stage": stage, "detail": detail})

    try:
        result = answer(
            store, settings, request, history=history, on_token=on_token, on_step=on_step, on_progress=on_progress
        )
    except Exception as exc:
        emit(error_event(exc, "POST /v1/chat (stream)"))
        return None
    if not streamed:  # an extracted answer is written at once: it arrives as one piece, marked so
        emit({"type": "token", "text": result.answer, "whole": True})
    emit({"type": "answer", "answer": result.model_dump(mode="json")})
    return result


def error_event(exc: BaseException, where: str) -> Event:
    """The `error` event of an exception: the client's error in its words, a fault by its logged id."""
    known = classify(exc)
    if known is not None:
        return {"type": "error", "code": known[1], "message": str(exc)}
    error_id, message = fault(exc, where)
    return {"type": "error", "code": "internal", "message": message, "id": error_id}


async def run_streaming(work: Callable[[Emit], None], executor: Executor) -> AsyncIterator[Event]:
    """Run `work(emit)` in `executor` and yield what it emits as it does, until it returns."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Event] = asyncio.Queue()
    gone = threading.Event()  # the reader stopped (the client went away): drop the rest

    def emit(event: Event) -> None:
        if not gone.is_set():
            loop.call_soon_threadsafe(events.put_nowait, event)

    def run() -> None:
        try:
            work(emit)
        except Exception as exc:  # work reports its own errors; this is a last line
            emit(error_event(exc, "event stream"))
        finally:
            emit(_END)

    future = loop.run_in_executor(executor, run)
    try:
        while True:
            event = await events.get()
            if event is _END:
                break
            yield event
    finally:
        gone.set()
        if future.done():
            future.result()


def sse(event: Event | str) -> bytes:
    """One server-sent event: `data: <json>` and a blank line."""
    data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


async def event_stream(work: Callable[[Emit], None], executor: Executor) -> AsyncIterator[bytes]:
    """The text/event-stream body of POST /v1/chat: every event, then `data: [DONE]`."""
    async for event in run_streaming(work, executor):
        yield sse(event)
    yield sse("[DONE]")
