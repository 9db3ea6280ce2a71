"""Work on untrusted files in worker processes: memory capped, time bounded, cancellable, crashes contained.

PyMuPDF holds the GIL while it reads or draws a page, and a hostile page can make it take minutes or gigabytes:
done in the server's own process, that freezes every request and can take the process down. `Workers` runs such
work in child processes instead:
- each child's address space is capped (`RLIMIT_AS`), so a page that needs more memory fails in the child with a
  MemoryError (or MuPDF's "malloc failed") and the parent never grows;
- the work reports its steps with `heartbeat("page 3")`; a step that takes longer than `step_seconds`, or a call
  longer than `seconds`, gets the child killed, and the error names the step;
- a `threading.Event` given as `cancel` kills the child as soon as it is set (a client that hung up);
- a child that dies (a segfault in a C library) fails that call alone; the next call gets a new child.

Each child is a fresh interpreter (`python -c`, never a fork of a process that holds threads, open stores or
models) talking to the parent over a socket pair; it imports what the work needs on its first call and is kept for
the next one. A child that failed on memory, time or a crash is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from .errors import PaperscopeError

T = TypeVar("T")

POLL_SECONDS = 0.05
START_SECONDS = 120  # a new worker's interpreter and imports, on a busy machine
#: MuPDF reports a failed allocation in its own words (RuntimeError "calloc failed", "out of memory").
_NO_MEMORY = re.compile(r"(?i)\b(?:m|c|re)alloc\b.*\bfail|out of memory|cannot allocate memory")


class WorkerError(PaperscopeError):
    """A call in a worker process did not finish. `step` is the last step it reported (e.g. "page 3")."""

    def __init__(self, message: str, step: str | None = None) -> None:
        self.step = step
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.step))


class OverMemory(WorkerError):
    """The work needed more memory than the worker may have."""


class OverTime(WorkerError):
    """A step (or the whole call) took longer than allowed."""


class Crashed(WorkerError):
    """The worker process died (a signal, or an exit) before it answered."""


class Cancelled(WorkerError):
    """The caller gave up (its `cancel` event was set) and the worker was stopped."""


# --- in the child -------------------------------------------------------------------------------------------

_beat: Callable[[str], None] | None = None


def heartbeat(step: str) -> None:
    """Report that the work reached `step` (a page, a stage): it restarts the step's clock in the parent. Outside a
    worker process it does nothing, so code that calls it runs the same in or out of one."""
    if _beat is not None:
        _beat(step)


def _child_main() -> None:
    """A worker process's entry point: `python -c ...` FD MEMORY_BYTES NICE NAME (see `Workers._take`)."""
    fd, memory, nice = (int(a) for a in sys.argv[1:4])
    _serve(Connection(fd), memory or None, nice)


def _serve(conn: Connection, memory_bytes: int | None, nice: int) -> None:
    """A worker's loop: take (fn, args, kwargs), answer ("ok", result) or ("error", exception) until told to stop."""
    global _beat
    if memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)
    _beat = lambda step: conn.send(("step", step))  # noqa: E731
    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args, kwargs = task
        try:
            result = ("ok", fn(*args, **kwargs))
        except MemoryError:
            result = ("memory", None)
        except BaseException as exc:
            result = ("memory", None) if _NO_MEMORY.search(str(exc)) else ("error", exc)
        try:
            conn.send(result)
        except Exception as exc:  # the result or the exception would not pickle: say so, in words
            conn.send(("error", PaperscopeError(f"{type(exc).__name__}: {exc}")))
        if result[0] == "memory":
            return  # what the failed allocation left behind is not worth keeping: a new child starts clean


# --- in the parent ------------------------------------------------------------------------------------------


@dataclass
class _Child:
    process: subprocess.Popen[bytes]
    conn: Connection

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(5)
        with contextlib.suppress(Exception):
            self.conn.close()


class Workers:
    """Up to `size` worker processes, each with at most `memory_mb` of address space (see the module docstring)."""

    def __init__(
        self,
        name: str,
        size: int = 1,
        *,
        memory_mb: int | None = None,
        preload: Sequence[str] = (),
        block: Sequence[str] = (),
        nice: int = 0,
    ) -> None:
        """`preload`: modules a new worker imports before its first call (so the first call is not slower);
        `block`: optional modules a worker must not import (their import fails, as if not installed)."""
        self.name = name
        self.size = size
        self.memory_mb = memory_mb
        self.nice = nice
        self.preload = tuple(preload)
        self.block = tuple(block)
        self._slots = threading.Semaphore(size)
        self._waiters: ThreadPoolExecutor | None = None  # threads that wait on workers for `acall`
        self._idle: list[_Child] = []
        self._children: dict[int, _Child] = {}
        self._lock = threading.Lock()
        self._closed = False

    def call(
        self,
        fn: Callable[..., T],
        /,
        *args: Any,
        seconds: float | None = None,
        step_seconds: float | None = None,
        cancel: threading.Event | None = None,
        on_step: Callable[[str], None] | None = None,
        **kwargs: Any,
    ) -> T:
        """`fn(*args, **kwargs)` in a worker process (fn and its arguments must pickle: a module-level function).

        Raises what `fn` raised, or OverMemory, OverTime (`seconds` for the call, `step_seconds` between two
        heartbeats), Cancelled (`cancel` set, also while waiting for a free worker) or Crashed. `on_step` sees
        each step the work reports."""
        started = time.monotonic()
        while not self._slots.acquire(timeout=POLL_SECONDS):
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled before a worker was free")
            if seconds is not None and time.monotonic() - started > seconds:
                raise OverTime(f"no worker was free within {_secs(seconds)} ({self.name})")
        try:
            child = self._take()
            try:
                kind, payload = self._run(child, (fn, args, kwargs), seconds, step_seconds, cancel, on_step)
            except BaseException:
                self._drop(child)
                raise
            self._give_back(child)  # the work's own exception leaves the worker as good as before
            if kind == "error":
                raise payload
            return payload  # type: ignore[no-any-return]
        finally:
            self._slots.release()

    async def acall(
        self,
        fn: Callable[..., T],
        /,
        *args: Any,
        seconds: float | None = None,
        cancel: threading.Event | None = None,
        **kwargs: Any,
    ) -> T:
        """`call`, awaitable: the wait happens in a thread of this pool's own (one per worker), never in the event
        loop or a pool others need. Set `cancel` to give up (the worker is stopped)."""
        with self._lock:
            if self._waiters is None:
                self._waiters = ThreadPoolExecutor(self.size, thread_name_prefix=f"paperscope-{self.name}")
            waiters = self._waiters
        call = functools.partial(self.call, fn, *args, seconds=seconds, cancel=cancel, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(waiters, call)

    def _run(
        self,
        child: _Child,
        task: tuple[Any, ...],
        seconds: float | None,
        step_seconds: float | None,
        cancel: threading.Event | None,
        on_step: Callable[[str], None] | None,
    ) -> tuple[str, Any]:
        """("ok", result) or ("error", exception) of the work; WorkerError when the worker failed it."""
        child.conn.send(task)
        step: str | None = None
        started = step_started = time.monotonic()  # the clocks run from here: a new child's start is not the work's
        while True:
            if child.conn.poll(POLL_SECONDS):
                try:
                    kind, payload = child.conn.recv()
                except (EOFError, OSError):
                    raise self._died(child, step) from None
                if kind == "step":
                    step, step_started = str(payload), time.monotonic()
                    if on_step is not None:
                        on_step(step)
                    continue
                if kind == "memory":
                    limit = f"{self.memory_mb} MB" if self.memory_mb else "the memory it may have"
                    raise OverMemory(_at(step, f"needs more than {limit} of memory"), step)
                return kind, payload
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                raise Cancelled(_at(step, "cancelled"), step)
            if seconds is not None and now - started > seconds:
                raise OverTime(_at(step, f"took longer than {_secs(seconds)}"), step)
            if step_seconds is not None and now - step_started > step_seconds:
                raise OverTime(_at(step, f"took longer than {_secs(step_seconds)}"), step)
            if not child.alive():
                raise self._died(child, step)

    def _died(self, child: _Child, step: str | None) -> WorkerError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.wait(1)
        code = child.process.returncode
        if code is not None and code < 0:
            import signal

            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        return Crashed(_at(step, f"the worker process {how}"), step)

    def _take(self) -> _Child:
        with self._lock:
            if self._closed:
                raise PaperscopeError(f"{self.name}: the workers are closed")
            while self._idle:
                child = self._idle.pop()
                if child.alive():
                    return child
                self._children.pop(child.process.pid, None)
                child.stop()
        parent, theirs = Pipe()
        memory = self.memory_mb * 1024 * 1024 if self.memory_mb else 0
        blocked = "".join(f"sys.modules[{m!r}] = None; " for m in self.block)
        imports = "".join(f"import {m}; " for m in self.preload)
        code = f"import sys; {blocked}{imports}from paperscope.isolation import _child_main; _child_main()"
        # The pool's name last: `ps` and tests tell the workers of each pool apart by it.
        args = [
            sys.executable,
            "-c",
            code,
            str(theirs.fileno()),
            str(memory),
            str(self.nice),
            f"paperscope-{self.name}",
        ]
        try:
            process = subprocess.Popen(args, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, close_fds=True)
        finally:
            theirs.close()
        child = _Child(process, parent)
        try:
            ready = parent.poll(START_SECONDS) and parent.recv() == ("ready", None)
        except (EOFError, OSError):
            ready = False
        if not ready:
            child.stop()
            raise Crashed(f"{self.name}: a worker process did not start within {START_SECONDS} s")
        with self._lock:
            self._children[process.pid] = child
        return child

    def _give_back(self, child: _Child) -> None:
        with self._lock:
            if not self._closed and child.alive():
                self._idle.append(child)
                return
        self._drop(child)

    def _drop(self, child: _Child) -> None:
        with self._lock:
            self._children.pop(child.process.pid, None)
        child.stop()

    def pids(self) -> list[int]:
        """The worker processes alive now (busy or idle)."""
        with self._lock:
            return [pid for pid, c in self._children.items() if c.alive()]

    def close(self) -> None:
        """Stop every worker, busy ones too (their calls fail with Crashed)."""
        with self._lock:
            self._closed = True
            children, self._children, self._idle = list(self._children.values()), {}, []
            waiters, self._waiters = self._waiters, None
        for child in children:
            child.stop()
        if waiters is not None:
            waiters.shutdown(wait=False, cancel_futures=True)


def _at(step: str | None, what: str) -> str:
    return f"{step}: {what}" if step else what


def _secs(value: float) -> str:
    return f"{value:g} s"
