"""The `paperscope` command: one Typer app, its commands in modules by what they do.

- common.py: the app, consoles, settings and store opening shared by every command;
- library.py: parse, ingest, papers, remove, check;
- citing.py: refs, citedby (references inside the library);
- questions.py: ask, retrieve, chat, eval;
- admin.py: doctor, config, operators;
- serve.py: serve (the HTTP service, src/service/); remote.py: the commands that take --server, over HTTP.
"""

from __future__ import annotations

import sys

# Each module adds its commands to the app; `--help` lists them in this order.
from . import (
    admin,  # noqa: F401
    citing,  # noqa: F401
    library,  # noqa: F401
    questions,  # noqa: F401
    serve,  # noqa: F401
)
from .common import app

__all__ = ["app", "main"]


def main() -> None:
    """The `paperscope` command (the console script)."""
    # httpcore, under httpx, imports trio at its own import when trio is installed (selenium, a test tool, brings
    # it): ~90 ms of every command that talks to a server (`ask` through a running `serve`), for an async library
    # no command uses. Only the command's own process is spared; in-process callers (tests, Python) keep trio.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    app()
