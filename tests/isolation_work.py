"""Work for the isolation tests, importable by a worker process (functions pickle by their module's name)."""

from __future__ import annotations

import os
import signal
import time

from paperscope.errors import ParseError
from paperscope.isolation import heartbeat


def pid() -> int:
    return os.getpid()


def allocate(mb: int) -> int:
    heartbeat("allocating")
    return len(bytearray(mb * 1024 * 1024))


def steps(n: int, seconds: float) -> int:
    """`n` steps of `seconds` each, reported."""
    for i in range(n):
        heartbeat(f"step {i + 1}")
        time.sleep(seconds)
    return n


def crash() -> None:
    heartbeat("about to crash")
    os.kill(os.getpid(), signal.SIGSEGV)


def fail() -> None:
    raise ParseError("/papers/x.pdf", "page 2: damaged")
