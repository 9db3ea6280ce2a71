"""`paperscope serve`: the knowledge bases over HTTP (the app is src/service/; the contract docs/http-api.md)."""

from __future__ import annotations

import logging
import signal
import socket
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..backend_logs import quiet_backend_loggers
from ..errors import ConfigError, PaperscopeError
from ..terminal import markup
from .common import KbOption, app, console, fail
from .running import remove_record, write_record

if TYPE_CHECKING:
    from pathlib import Path

GRACE_SECONDS = 10  # a stopping server lets answers under way finish this long


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default service.host: 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=0, max=65535, help="Port (default service.port: 8000; 0 = any free port)."),
    ] = None,
    kb: KbOption = None,
) -> None:
    """Serve the knowledge bases over HTTP: upload papers, list them, retrieve, chat with streamed answers, and an
    OpenAI-compatible chat (model `paperscope`); the API's pages are at /docs.

    The store and the embedder are loaded once. With PAPERSCOPE_API_KEY set every /v1 route needs `Authorization:
    Bearer KEY`; without one the server listens on loopback only. While it runs it holds the knowledge bases:
    other commands reach them with --server URL (or PAPERSCOPE_SERVER).
    """
    quiet_backend_loggers()
    from ..rag.operator_settings import check_operators
    from ..service.gate import check_bind
    from ..settings_layers import load_layers

    try:
        layered = load_layers({"store": {"kb": kb}, "service": {"host": host, "port": port}})
        settings = layered.settings
        check_operators(settings)
        check_bind(settings.service.host, settings.service.api_key)
        listener = _listen(settings.service.host, settings.service.port)
    except PaperscopeError as exc:
        raise fail(exc) from None
    _log_to_stderr()
    from ..service.library import Library

    try:
        library = Library(layered)
    except PaperscopeError as exc:
        listener.close()
        raise fail(exc) from None
    home = settings.home
    url = _url(settings.service.host, listener.getsockname()[1])
    papers = sum(1 for p in library.get().store.list_papers(brief=True) if p.ready)
    try:
        _run(layered, library, listener, home, url, f"knowledge base {library.default_kb!r} ({papers} papers)")
    except KeyboardInterrupt:
        pass
    finally:
        remove_record(home)
    console.print("paperscope serve stopped", highlight=False)


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, or ConfigError saying why not (before anything slow is loaded)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: not an address this machine can listen on ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _log_to_stderr() -> None:
    """The server's own log (faults with their error ids, knowledge bases created) on stderr, with times."""
    log = logging.getLogger("paperscope.service")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _run(layered: Any, library: Any, listener: socket.socket, home: Path, url: str, what: str) -> None:
    """Serve until Ctrl-C or SIGTERM; serve.json says where while it runs."""
    import uvicorn

    from ..service.app import create_app

    web = create_app(layered, library=library)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                write_record(home, url, library.default_kb)
                console.print(
                    f"paperscope serve: {markup(url)} · {markup(what)} · API docs at {markup(url)}/docs · Ctrl-C stops",
                    highlight=False,
                    soft_wrap=True,
                )
                sys.stdout.flush()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            web.state.stopping.set()  # streams under way end with an error event, not a cut (events.py)
            try:
                await super().shutdown(sockets)  # the lifespan closes the stores: the lock is free after it
            finally:
                remove_record(home)

    config = uvicorn.Config(
        web,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    # uvicorn stops gracefully on SIGTERM as on Ctrl-C, then raises the signal again with the handler it found:
    # make that Ctrl-C's, so a stopped server says so and exits 0 either way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    Server(config).run(sockets=[listener])
