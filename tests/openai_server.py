"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for end-to-end tests of the real `ChatOpenAI` client.

    with ScriptedOpenAIServer([ToolCalls([("search", {"query": "kv cache"})]), Text("Done.")]) as server:
        llm = ChatOpenAI(model="scripted-model", base_url=server.base_url, api_key="test", max_retries=0)
        ...
    assert server.messages(1)[-1]["role"] == "tool"

Each ``POST /v1/chat/completions`` consumes the next scripted reply, in order: `Text`, `ToolCalls`,
`RawArguments` (a tool call whose arguments string is sent verbatim, e.g. invalid JSON), `HTTPError`, or a callable
``(request_json) -> Reply`` that answers from the request. Requests with ``"stream": true`` are answered as
server-sent events. Running past the end of the script answers HTTP 500 ("script exhausted") and is recorded in
`.errors`. Keep ``max_retries=0`` on the client: a retried request consumes another scripted reply.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeAlias


@dataclass(frozen=True)
class ToolCalls:
    """One assistant message calling these tools: ``[(name, args), ...]``; ids are ``call_<n>``."""

    calls: list[tuple[str, dict[str, Any]]]
    content: str = ""


@dataclass(frozen=True)
class Text:
    """A plain assistant answer."""

    content: str


@dataclass(frozen=True)
class RawArguments:
    """One tool call whose ``arguments`` string is sent as given (it need not be valid JSON)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class HTTPError:
    """An HTTP error status with an OpenAI-style JSON error body."""

    status: int
    message: str


Reply: TypeAlias = "ToolCalls | Text | RawArguments | HTTPError | Callable[[dict[str, Any]], Reply]"

# (id, name, arguments-as-sent) of one tool call in a reply.
_WireCall: TypeAlias = tuple[str, str, str]


@dataclass
class _Answer:
    """A resolved, non-error reply ready to be written as JSON or as SSE chunks."""

    content: str | None
    calls: list[_WireCall] = field(default_factory=list)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"


class ScriptedOpenAIServer:
    """Serves a scripted sequence of chat-completion replies on an ephemeral loopback port."""

    def __init__(self, script: list[Reply], model: str = "scripted-model", *, chunk_size: int = 4) -> None:
        self.model = model
        self.chunk_size = chunk_size
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._script = list(script)
        self._sent_calls: list[tuple[str, dict[str, Any] | str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        """Bind 127.0.0.1:0 and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="scripted-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down and wait for its thread."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, for ``ChatOpenAI(base_url=...)``."""
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def remaining(self) -> int:
        """How many scripted replies are still unused."""
        with self._lock:
            return len(self._script)

    @property
    def tool_calls_made(self) -> list[tuple[str, dict[str, Any] | str]]:
        """``(name, args)`` of every tool call sent so far (args is the raw string for `RawArguments`)."""
        with self._lock:
            return list(self._sent_calls)

    def messages(self, i: int) -> list[dict[str, Any]]:
        """The ``messages`` of chat-completion request `i`."""
        with self._lock:
            messages: list[dict[str, Any]] = self.requests[i]["messages"]
        return messages

    # -- request handling (called from handler threads) -----------------------------------------------------

    def _next_reply(self, request: dict[str, Any]) -> tuple[int, Reply | None]:
        """Record the request; return its index and the next scripted reply (None once exhausted)."""
        with self._lock:
            self.requests.append(request)
            index = len(self.requests) - 1
            if not self._script:
                self.errors.append(f"script exhausted at request {index}")
                return index, None
            return index, self._script.pop(0)

    def _record_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def _resolve(self, reply: Reply, request: dict[str, Any]) -> _Answer | HTTPError:
        """Call dynamic replies, assign tool-call ids and record the calls sent."""
        while callable(reply):
            reply = reply(request)
        if isinstance(reply, HTTPError):
            return reply
        if isinstance(reply, Text):
            return _Answer(content=reply.content)
        with self._lock:
            if isinstance(reply, RawArguments):
                self._sent_calls.append((reply.name, reply.arguments))
                return _Answer(content=None, calls=[(f"call_{next(self._ids)}", reply.name, reply.arguments)])
            calls: list[_WireCall] = []
            for name, args in reply.calls:
                self._sent_calls.append((name, dict(args)))
                calls.append((f"call_{next(self._ids)}", name, json.dumps(args)))
        return _Answer(content=reply.content or None, calls=calls)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], scripted: ScriptedOpenAIServer
    ) -> None:
        self.scripted = scripted
        super().__init__(address, handler)


def _usage(request: dict[str, Any], answer: _Answer) -> dict[str, int]:
    """Deterministic token counts: about four characters a token."""
    prompt = max(1, len(json.dumps(request.get("messages", []))) // 4)
    produced = (answer.content or "") + "".join(name + args for _, name, args in answer.calls)
    completion = max(1, len(produced) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    _index = 0  # index of the chat-completion request being answered

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    # -- routing ---------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self._path() == "/v1/models":
            model = self.server.scripted.model
            self._send_json(200, {"object": "list", "data": [_model_entry(model)]})
        else:
            self._send_error(404, f"no route for GET {self.path}", "not_found")

    def do_POST(self) -> None:
        if self._path() != "/v1/chat/completions":
            self._send_error(404, f"no route for POST {self.path}", "not_found")
            return
        scripted = self.server.scripted
        try:
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(request, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as exc:
            scripted._record_error(f"bad request body: {exc}")
            self._send_error(400, f"bad request body: {exc}", "invalid_request_error")
            return
        self._index, reply = scripted._next_reply(request)
        if reply is None:
            self._send_error(500, f"script exhausted at request {self._index}", "server_error")
            return
        try:
            answer = scripted._resolve(reply, request)
        except Exception as exc:
            scripted._record_error(f"dynamic reply failed: {exc!r}")
            self._send_error(500, f"dynamic reply failed: {exc!r}", "server_error")
            return
        if isinstance(answer, HTTPError):
            self._send_error(answer.status, answer.message, "scripted_error")
        elif request.get("stream"):
            self._send_stream(request, answer)
        else:
            self._send_completion(request, answer)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    # -- responses -------------------------------------------------------------------------------------------

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _send_completion(self, request: dict[str, Any], answer: _Answer) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for call_id, name, args in answer.calls
            ]
        body = {
            **self._envelope("chat.completion"),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": answer.finish_reason}],
            "usage": _usage(request, answer),
        }
        self._send_json(200, body)

    def _send_stream(self, request: dict[str, Any], answer: _Answer) -> None:
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        envelope = self._envelope("chat.completion.chunk")
        size = self.server.scripted.chunk_size

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            body: dict[str, Any] = {
                **envelope,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                body["usage"] = None
            return body

        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": piece}) for piece in _pieces(answer.content or "", size)]
        for index, (call_id, name, args) in enumerate(answer.calls):
            head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            chunks.append(chunk({"tool_calls": [head]}))
            chunks += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(args, size)
            ]
        chunks.append(chunk({}, answer.finish_reason))
        if include_usage:
            chunks.append({**envelope, "choices": [], "usage": _usage(request, answer)})

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for body in chunks:
            self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _envelope(self, kind: str) -> dict[str, Any]:
        model = self.server.scripted.model
        return {"id": f"chatcmpl-scripted-{self._index}", "object": kind, "created": 1_700_000_000, "model": model}


def _model_entry(model: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "scripted"}
