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

Replies that behave like real local models and broken endpoints:

- tool calls written as text (`hermes_call`, `function_tag_call`, `function_eq_call`, `fenced_json_call`,
  `bare_json_call`, `python_tag_call`) and `copy_schemas` (the request's tool declarations echoed back);
- `Ramble`: text that only stops at the request's max_tokens (finish_reason "length");
- `Endless`: a stream that never ends (a non-streamed request gets no reply at all);
- `Slow(seconds, reply)`: nothing for `seconds`, then `reply` (a slow first token);
- `Hang`: no byte at all; `Drop`: the connection closed without a response;
- `EmptyBody` (HTTP 200 with ``{}``) and `Garbage` (HTTP 200 with a body that is not a completion);
- `KeepAlive`: headers, then only SSE comments (``: keepalive``) for ever, never an event (a non-streamed
  request gets the same bytes: a body that never completes);
- `Huge(chars)`: a reply of that many characters, whatever the request's max_tokens says.

Waiting replies end when the client goes away or the server stops; `gone` lists the requests whose client hung up
while a `Hang` reply waited (a cancelled question closes its connection).
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import sys
import threading
import time
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


@dataclass(frozen=True)
class Ramble:
    """Words until the request's max_tokens (one word a token), then finish_reason "length"."""

    word: str = "and "


@dataclass(frozen=True)
class Endless:
    """A stream that never finishes (one piece every `interval` seconds); a non-streamed request gets no reply."""

    interval: float = 0.05


@dataclass(frozen=True)
class Slow:
    """Nothing for `seconds` (no byte, not even headers), then `reply`."""

    seconds: float
    reply: Reply


@dataclass(frozen=True)
class KeepAlive:
    """Headers, then an SSE comment every `interval` seconds, never an event, until the client hangs up."""

    interval: float = 0.2


@dataclass(frozen=True)
class Huge:
    """A reply of `chars` characters that ignores the request's max_tokens (finish_reason "stop")."""

    chars: int = 1_000_000
    word: str = "forty-two "


@dataclass(frozen=True)
class Hang:
    """Read the request and never answer."""


@dataclass(frozen=True)
class Drop:
    """Close the connection without a response."""


@dataclass(frozen=True)
class EmptyBody:
    """HTTP 200 with the JSON body ``{}``."""


@dataclass(frozen=True)
class Garbage:
    """HTTP 200 with a body that is not a chat completion."""

    body: bytes = b"<html><body>502 Bad Gateway</body></html>"
    content_type: str = "application/json"


Reply: TypeAlias = (
    "ToolCalls | Text | RawArguments | HTTPError | Ramble | Endless | Slow | Hang | Drop | EmptyBody | Garbage"
    " | KeepAlive | Huge | Callable[[dict[str, Any]], Reply]"
)
_Special: TypeAlias = "HTTPError | Endless | Hang | Drop | EmptyBody | Garbage | KeepAlive"


# --- tool calls written as text, the ways real local models write them ---------------------------------------


def hermes_call(name: str, args: dict[str, Any]) -> Text:
    """Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``."""
    return Text(f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>")


def function_tag_call(name: str, args: dict[str, Any]) -> Text:
    """``<tools><function name="..." arguments='{...}'/></tools>`` (what Qwen2.5-Coder-1.5B wrote)."""
    return Text(f"<tools>\n<function name=\"{name}\" arguments='{json.dumps(args)}'/>\n</tools>")


def function_eq_call(name: str, args: dict[str, Any]) -> Text:
    """Llama 3.1 / Qwen3-Coder style: ``<function=name>{...}</function>``."""
    return Text(f"<function={name}>{json.dumps(args)}</function>")


def fenced_json_call(name: str, args: dict[str, Any]) -> Text:
    """A fenced JSON block with ``name`` and ``arguments``, after a sentence."""
    return Text(f"I will search.\n```json\n{json.dumps({'name': name, 'arguments': args}, indent=2)}\n```")


def bare_json_call(name: str, args: dict[str, Any]) -> Text:
    """A bare JSON object with ``name`` and ``parameters``, in the doubled braces a small model wrote."""
    return Text("{" + json.dumps({"name": name, "parameters": args}) + "}")


def python_tag_call(name: str, args: dict[str, Any]) -> Text:
    """Llama 3: ``<|python_tag|>{"name": ..., "parameters": ...}<|eom_id|>``."""
    return Text(f"<|python_tag|>{json.dumps({'name': name, 'parameters': args})}<|eom_id|>")


def copy_schemas(request: dict[str, Any]) -> Reply:
    """The request's tool declarations echoed back as text, as a confused small model does."""
    return Text("<tools>\n" + "\n".join(json.dumps(t) for t in request.get("tools", [])) + "\n</tools>")


# (id, name, arguments-as-sent) of one tool call in a reply.
_WireCall: TypeAlias = tuple[str, str, str]


@dataclass
class _Answer:
    """A resolved, non-error reply ready to be written as JSON or as SSE chunks."""

    content: str | None
    calls: list[_WireCall] = field(default_factory=list)
    stop: str | None = None  # finish_reason when not the natural one
    delay: float = 0.0  # seconds before the first byte

    @property
    def finish_reason(self) -> str:
        return self.stop or ("tool_calls" if self.calls else "stop")


class ScriptedOpenAIServer:
    """Serves a scripted sequence of chat-completion replies on an ephemeral loopback port."""

    def __init__(
        self,
        script: list[Reply],
        model: str = "scripted-model",
        *,
        chunk_size: int = 4,
        model_info: dict[str, Any] | None = None,
    ) -> None:
        """`model_info`: extra fields of the model's entry in GET /v1/models (e.g. llama.cpp's ``meta``)."""
        self.model = model
        self.model_info = model_info or {}
        self.chunk_size = chunk_size
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.gone: list[int] = []  # requests whose client closed the connection while a Hang reply waited
        self._script = list(script)
        self._sent_calls: list[tuple[str, dict[str, Any] | str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.released = threading.Event()  # set on stop: replies that wait give up

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
        self.released.set()
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

    def _resolve(self, reply: Reply, request: dict[str, Any]) -> _Answer | _Special:
        """Call dynamic replies, assign tool-call ids and record the calls sent."""
        delay = 0.0
        while callable(reply) or isinstance(reply, Slow):
            if isinstance(reply, Slow):
                delay += reply.seconds
                reply = reply.reply
            else:
                reply = reply(request)
        if isinstance(reply, HTTPError | Endless | Hang | Drop | EmptyBody | Garbage | KeepAlive):
            return reply
        if isinstance(reply, Text):
            return _Answer(content=reply.content, delay=delay)
        if isinstance(reply, Huge):
            text = (reply.word * (reply.chars // len(reply.word) + 1))[: reply.chars]
            return _Answer(content=text, delay=delay)
        if isinstance(reply, Ramble):
            limit = request.get("max_tokens") or request.get("max_completion_tokens") or 100_000
            return _Answer(content=reply.word * int(limit), stop="length", delay=delay)
        with self._lock:
            if isinstance(reply, RawArguments):
                self._sent_calls.append((reply.name, reply.arguments))
                call = (f"call_{next(self._ids)}", reply.name, reply.arguments)
                return _Answer(content=None, calls=[call], delay=delay)
            calls: list[_WireCall] = []
            for name, args in reply.calls:
                self._sent_calls.append((name, dict(args)))
                calls.append((f"call_{next(self._ids)}", name, json.dumps(args)))
        return _Answer(content=reply.content or None, calls=calls, delay=delay)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], scripted: ScriptedOpenAIServer
    ) -> None:
        self.scripted = scripted
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-reply (it had what it needed, or gave up) is no error of the server's."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def _usage(request: dict[str, Any], answer: _Answer) -> dict[str, int]:
    """Deterministic token counts: about four characters a token."""
    prompt = max(1, len(json.dumps(request.get("messages", []))) // 4)
    produced = (answer.content or "") + "".join(name + args for _, name, args in answer.calls)
    completion = max(1, len(produced) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _closed(sock: Any) -> bool:
    """True once the peer has closed the connection (it is readable, and reads as the end)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


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
            scripted = self.server.scripted
            self._send_json(200, {"object": "list", "data": [{**_model_entry(scripted.model), **scripted.model_info}]})
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
        released = scripted.released
        if isinstance(answer, HTTPError):
            self._send_error(answer.status, answer.message, "scripted_error")
        elif isinstance(answer, Hang) or (isinstance(answer, Endless) and not request.get("stream")):
            # Until the server stops or the client goes away (its timeout, or a cancelled question).
            while not released.wait(0.05):
                if _closed(self.connection):
                    with scripted._lock:
                        scripted.gone.append(self._index)
                    return
        elif isinstance(answer, Drop):
            self.close_connection = True  # no status line at all: the client sees the connection close
        elif isinstance(answer, EmptyBody):
            self._send_json(200, {})
        elif isinstance(answer, Garbage):
            self._send_raw(200, answer.body, answer.content_type)
        elif isinstance(answer, Endless):
            self._send_endless(answer.interval)
        elif isinstance(answer, KeepAlive):
            self._send_keepalives(answer.interval)
        else:
            if answer.delay and released.wait(answer.delay):
                return
            if request.get("stream"):
                self._send_stream(request, answer)
            else:
                self._send_completion(request, answer)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    # -- responses -------------------------------------------------------------------------------------------

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(body).encode(), "application/json")

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_endless(self, interval: float) -> None:
        """SSE chunks of text until the client hangs up or the server stops."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        envelope = self._envelope("chat.completion.chunk")
        released = self.server.scripted.released
        try:
            while not released.is_set():
                body = {**envelope, "choices": [{"index": 0, "delta": {"content": "more "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
                self.wfile.flush()
                time.sleep(interval)
        except OSError:
            return  # the client went away, as it should

    def _send_keepalives(self, interval: float) -> None:
        """SSE headers, then `: keepalive` comments until the client hangs up or the server stops."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        released = self.server.scripted.released
        try:
            while not released.wait(interval):
                self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()
        except OSError:
            return  # the client went away, as it should

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
