"""The `paperscope` command: one Typer app, its commands in modules by what they do.

- common.py: the app, consoles, settings and store opening shared by every command;
- library.py: parse, ingest, papers, remove, check;
- citing.py: refs, citedby (references inside the library);
- questions.py: ask, retrieve, chat, eval;
- admin.py: doctor, config, operators;
- serve.py: serve (the HTTP service, src/service/); remote.py: the commands that take --server, over HTTP.
"""

from __future__ import annotations

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
    """Entry point that keeps tracebacks away from users for expected errors."""
    app()
