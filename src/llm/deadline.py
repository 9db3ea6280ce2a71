"""An HTTP client whose responses end at their request's timeout, wall-clock, whatever the server sends.

httpx's read timeout is inter-byte: a server that sends a byte every few seconds (SSE `: keepalive`
comments, whitespace before a JSON body) keeps a request alive for ever, and the OpenAI SDK's event parser
swallows comments, so code that checks the clock between events never runs. `bounded_http_client()` wraps
the transport: each response's byte stream is cut once the request's own timeout (the `read` timeout the
SDK passes with every request, which paperscope sets to what is left of the call's limit and the question's
budget) has passed since the request was sent. Every byte counts, comments and keep-alives included.

Given a `Cancellation`, the client also stops when the question is cancelled: the sockets of its open
connections are shut down, which wakes a read blocked on a model that sends nothing (closing a socket from
another thread would not), and the model server sees the client go.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

try:  # the OpenAI SDK talks through httpx2 (and httpcore2) from 3.x on; older releases through httpx
    import httpcore2 as httpcore
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpcore  # type: ignore[no-redef]
    import httpx  # type: ignore[no-redef]

if TYPE_CHECKING:
    from ..cancellation import Cancellation


class ReplyDeadline(httpx.ReadTimeout):  # type: ignore[misc]
    """A response still arriving when its request's wall-clock limit passed."""

    def __init__(self, seconds: float, received: int, events: bool) -> None:
        took = f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
        if events:
            message = f"the reply was still streaming after {took}"
        elif received:
            message = f"no event within {took}: the endpoint sent only keep-alive comments or padding"
        else:
            message = f"no reply within {took}"
        super().__init__(message)
        self.seconds = seconds
        self.received = received


class _DeadlineStream(httpx.SyncByteStream):  # type: ignore[misc]
    """A response body that raises ReplyDeadline when read past `deadline` (time.monotonic())."""

    def __init__(self, inner: Any, deadline: float, seconds: float) -> None:
        self._inner = inner
        self._deadline = deadline
        self._seconds = seconds

    def __iter__(self) -> Iterator[bytes]:
        received, events = 0, False
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise ReplyDeadline(self._seconds, received, events)
            received += len(chunk)
            # An SSE event carries "data:"; a JSON body its braces. Comments and whitespace carry neither.
            events = events or b"data:" in chunk or b"{" in chunk
            yield chunk

    def close(self) -> None:
        self._inner.close()


class _TrackedBackend(httpcore.SyncBackend):  # type: ignore[misc]
    """The network backend of httpcore, remembering the sockets it opened so they can be shut down at once."""

    def __init__(self) -> None:
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._shut = False

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        stream = super().connect_tcp(*args, **kwargs)
        sock = stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.add(sock)
                shut = self._shut
            if shut:
                _shutdown(sock)
        return stream

    def shut_all(self) -> None:
        """Shut every open socket down (a blocked read returns), and any opened later."""
        with self._lock:
            self._shut = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class DeadlineTransport(httpx.HTTPTransport):  # type: ignore[misc]
    """`HTTPTransport` whose responses end at the request's read timeout after it was sent (see module doc), and
    whose connections are shut when `cancel` is set."""

    def __init__(self, cancel: Cancellation | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cancel = cancel
        if cancel is not None:
            backend = _TrackedBackend()
            # httpx builds its pool with httpcore's default backend and no way to pass another.
            self._pool._network_backend = backend
            cancel.on_set(backend.shut_all)

    def handle_request(self, request: Any) -> Any:
        timeout = (request.extensions.get("timeout") or {}).get("read")
        started = time.monotonic()
        response = super().handle_request(request)
        if isinstance(timeout, int | float) and timeout > 0:
            response.stream = _DeadlineStream(response.stream, started + float(timeout), float(timeout))
        return response


def bounded_http_client(timeout: float, cancel: Cancellation | None = None) -> Any:
    """An `httpx.Client` (httpx2 for the SDK that uses it) with the deadline transport; `timeout` is its default;
    `cancel` shuts its connections when set."""
    return httpx.Client(transport=DeadlineTransport(cancel), timeout=timeout)


def deadline_passed(exc: BaseException) -> ReplyDeadline | None:
    """The ReplyDeadline somewhere in `exc`'s chain of causes, if any (the SDK wraps it in its own errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyDeadline):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
