"""A question's "stop now": set by whoever waits for the answer (a server whose client hung up, a server stopping).

Code that does slow work for the question checks it before each step (the chat model before each call, a worker
process while it waits), and what is already under way registers a hook that interrupts it (the chat model's open
connections are shut, so a model server hanging on a reply stops generating it too). Setting it twice is setting
it once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Cancellation:
    """Set once; `is_set()` from any thread; hooks run when it is set (or at once, when added after)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.reason = ""

    def is_set(self) -> bool:
        return self.event.is_set()

    def set(self, reason: str = "cancelled") -> None:
        """Cancel: every hook runs once, in the caller's thread."""
        with self._lock:
            if self.event.is_set():
                return
            self.reason = reason
            self.event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            try:
                hook()
            except Exception as exc:  # an interruption that failed must not stop the others
                log.warning("interrupting work for a cancelled question failed: %s", exc)

    def on_set(self, hook: Callable[[], None]) -> None:
        """Run `hook` when this is set (now, when it already is)."""
        with self._lock:
            if not self.event.is_set():
                self._hooks.append(hook)
                return
        hook()
