"""Answers as they come: a question runs in a worker thread and hands its events to the response through a queue.

`answer_events` runs a question and emits, in order of happening: `progress` (stage, detail), `tool` (each tool
call of the agent as it ends: tool, args, results, seconds, error), `token` (a piece of the answer text, citations
already renumbered [n]), then always `answer` (the whole Answer object), or `error` (message, and the id of a
server fault) when the question could not be answered. `event_stream` turns emitted events into the
`text/event-stream` body of POST /v1/chat (`data: <json>` lines, then `data: [DONE]`); the OpenAI-compatible
route reads the same events. A text streamed as the model wrote it is followed by what the grounding check put in
the final answer after it was written: the marks of unsupported sentences (`(not in the sources: ...)`), and the
sentences the sources hold when the figures asked for are not supported.

A client that goes away cancels its question: the model is called no more and the call under way is cut (its
remaining events are dropped). A server that is stopping gives a stream STOP_GRACE seconds to end, then ends it
with an `error` event (`server_stopping`) and `[DONE]`, never silently.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from typing import Any

from ..answer.grounding import unstreamed
from ..answer.model import Answer, TraceStep
from ..cancellation import Cancellation
from ..config import Settings
from ..operations import AskRequest, answer
from ..rag.store import PaperStore
from .errors import classify, fault
from .state import STOP_GRACE, STOPPING_MESSAGE

Event = dict[str, Any]
Emit = Callable[[Event], None]
_END: Event = {"type": "_end"}
STOPPING: Event = {"type": "error", "code": "server_stopping", "message": STOPPING_MESSAGE}


def answer_events(
    store: PaperStore,
    settings: Settings,
    request: AskRequest,
    history: list[Answer],
    emit: Emit,
    cancel: Cancellation | None = None,
) -> Answer | None:
    """Answer `request`, emitting its events (see the module docstring); the Answer, or None after an error event.
    `cancel` stops its model calls once set."""
    pieces: list[str] = []

    def on_token(piece: str) -> None:
        if piece:
            pieces.append(piece)
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
            store,
            settings,
            request,
            history=history,
            on_token=on_token,
            on_step=on_step,
            on_progress=on_progress,
            cancel=cancel,
        )
    except Exception as exc:
        emit(error_event(exc, "POST /v1/chat (stream)"))
        return None
    if not pieces:  # an extracted answer is written at once: it arrives as one piece, marked so
        emit({"type": "token", "text": result.answer, "whole": True})
    elif tail := unstreamed("".join(pieces), result.answer, result.grounding):
        emit({"type": "token", "text": tail})
    emit({"type": "answer", "answer": result.model_dump(mode="json")})
    return result


def error_event(exc: BaseException, where: str) -> Event:
    """The `error` event of an exception: the client's error in its words, a fault by its logged id."""
    known = classify(exc)
    if known is not None:
        return {"type": "error", "code": known[1], "message": str(exc)}
    error_id, message = fault(exc, where)
    return {"type": "error", "code": "internal", "message": message, "id": error_id}


async def run_streaming(
    work: Callable[[Emit], None],
    executor: Executor,
    cancel: Cancellation,
    stopping: threading.Event | None = None,
) -> AsyncIterator[Event]:
    """Run `work(emit)` in `executor` and yield what it emits as it does, until it returns. When the reader stops
    (the client went away) `cancel` is set; when `stopping` is set, the work has STOP_GRACE seconds before the
    stream ends with the `server_stopping` error (and `cancel` is set)."""
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
    stop_seen: float | None = None
    try:
        while True:
            if stopping is not None and stopping.is_set():
                stop_seen = stop_seen or time.monotonic()
                if time.monotonic() - stop_seen >= STOP_GRACE:
                    cancel.set("the server is stopping")
                    yield STOPPING
                    break
            try:
                event = await asyncio.wait_for(events.get(), timeout=0.25)
            except TimeoutError:
                continue
            if event is _END:
                break
            yield event
    finally:
        gone.set()
        if not future.done():
            cancel.set("the client went away")
        else:
            future.result()


def sse(event: Event | str) -> bytes:
    """One server-sent event: `data: <json>` and a blank line."""
    data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


async def event_stream(
    work: Callable[[Emit], None], executor: Executor, cancel: Cancellation, stopping: threading.Event | None = None
) -> AsyncIterator[bytes]:
    """The text/event-stream body of POST /v1/chat: every event, then `data: [DONE]`."""
    async for event in run_streaming(work, executor, cancel, stopping):
        yield sse(event)
    yield sse("[DONE]")
