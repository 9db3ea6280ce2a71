"""What gRPC, pymilvus and Milvus Lite log is kept off the terminal, unless PAPERSCOPE_LOG=debug.

pymilvus talks to Milvus, and to Milvus Lite (which serves its data directory over gRPC in a thread of this
process), through gRPC, whose C core writes its own log lines straight to stderr, outside Python logging:
e.g. `Received a GOAWAY with error code ENHANCE_YOUR_CALM and debug data equal to "too_many_pings"` when
pymilvus' keepalive pings outpace what the Lite server allows during a pause in `chat`, which then lands in
the middle of the chat screen. The C core reads GRPC_VERBOSITY once, when grpc is imported, so `quiet_grpc`
runs when the paperscope package itself is imported, before anything of paperscope imports grpc; a
GRPC_VERBOSITY the user set is kept. The Python loggers of pymilvus, Milvus Lite and grpc log tracebacks of
failures that paperscope reports itself as one line (`quiet_backend_loggers`).

PAPERSCOPE_LOG=debug leaves all of them as the libraries have them (add GRPC_TRACE=... for gRPC's tracers).
"""

from __future__ import annotations

import logging
import os

__all__ = ["LOG_ENV", "debug", "env_problem", "quiet_backend_loggers", "quiet_grpc"]

LOG_ENV = "PAPERSCOPE_LOG"
LEVELS = ("warning", "debug")
#: Python loggers of the libraries under the store; child loggers (milvus_lite.server_manager) follow them.
BACKEND_LOGGERS = ("grpc", "grpc._cython", "pymilvus", "pymilvus.milvus_client", "pymilvus.bulk_writer", "milvus_lite")


def debug() -> bool:
    """True when PAPERSCOPE_LOG=debug: the libraries' own logging is left on."""
    return os.environ.get(LOG_ENV, "").strip().lower() == "debug"


def env_problem() -> str | None:
    """One line when PAPERSCOPE_LOG holds something else than a known level, else None."""
    value = os.environ.get(LOG_ENV)
    if value is None or value.strip().lower() in LEVELS:
        return None
    return f"{LOG_ENV}={value!r} is not one of {', '.join(LEVELS)}; using warning"


def quiet_grpc() -> None:
    """Silence gRPC's C-core logging (GRPC_VERBOSITY=NONE) unless debugging or set by the user.

    Must run before grpc is first imported: the C core reads the variable then and never again.
    """
    if not debug():
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")


_quiet = False  # set by quiet_backend_loggers: the levels are applied again after pymilvus is imported


def quiet_backend_loggers() -> None:
    """Silence the Python loggers of pymilvus, Milvus Lite and grpc (unless debugging).

    pymilvus configures its loggers when it is imported: the store calls `backend_imported` right after it
    imports pymilvus (rag/store/milvus.py), so the levels hold whichever comes first.
    """
    global _quiet
    _quiet = not debug()
    backend_imported()


def backend_imported() -> None:
    """Apply the quiet levels (when asked for) to the backend's loggers, as they now are."""
    if _quiet:
        for name in BACKEND_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
