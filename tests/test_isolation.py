"""Worker processes: what they cost the caller (nothing but the answer), and every way a call can end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from paperscope.errors import ParseError
from paperscope.isolation import Cancelled, Crashed, OverMemory, OverTime, Workers
from tests import isolation_work as work
from tests.memory import peak_mb, reset_peak, rss_mb


@pytest.fixture
def workers() -> Iterator[Workers]:
    pool = Workers("test", 2, memory_mb=400)
    yield pool
    pool.close()


def test_a_call_returns_and_the_worker_is_kept(workers: Workers) -> None:
    first = workers.call(work.pid)
    assert workers.call(work.pid) == first != 0
    assert workers.pids() == [first]


def test_the_works_own_error_comes_back_and_keeps_the_worker(workers: Workers) -> None:
    first = workers.call(work.pid)
    with pytest.raises(ParseError) as caught:
        workers.call(work.fail)
    assert str(caught.value) == "x.pdf: page 2: damaged" and caught.value.path == "/papers/x.pdf"
    assert workers.call(work.pid) == first


def test_memory_past_the_cap_fails_the_call_not_the_caller(workers: Workers) -> None:
    reset_peak()
    before = rss_mb()
    first = workers.call(work.pid)
    with pytest.raises(OverMemory) as caught:
        workers.call(work.allocate, 1500)
    assert str(caught.value) == "allocating: needs more than 400 MB of memory" and caught.value.step == "allocating"
    assert peak_mb() - before < 100
    assert workers.call(work.allocate, 50) == 50 * 1024 * 1024  # a new worker, at once
    assert first not in workers.pids()


def test_a_step_over_its_time_is_stopped_naming_the_step(workers: Workers) -> None:
    assert workers.call(work.steps, 3, 0.2, step_seconds=1) == 3  # each step inside its time
    with pytest.raises(OverTime) as caught:
        workers.call(work.steps, 3, 30, step_seconds=0.5)
    assert str(caught.value) == "step 1: took longer than 0.5 s"
    with pytest.raises(OverTime) as caught:
        workers.call(work.steps, 10, 0.3, seconds=1)  # steps in time, the whole call not
    assert str(caught.value).endswith("took longer than 1 s")
    seen: list[str] = []
    workers.call(work.steps, 2, 0, on_step=seen.append)
    assert seen == ["step 1", "step 2"]


def test_a_cancelled_call_stops_its_worker(workers: Workers) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(Cancelled) as caught:
        workers.call(work.steps, 1, 60, cancel=cancel)
    assert str(caught.value) == "step 1: cancelled"
    assert workers.pids() == []


def test_a_crash_fails_the_call_alone(workers: Workers) -> None:
    with pytest.raises(Crashed) as caught:
        workers.call(work.crash)
    assert str(caught.value) == "about to crash: the worker process was killed by SIGSEGV"
    assert workers.call(work.allocate, 1) == 1024 * 1024


def test_callers_beyond_the_pool_wait_or_give_up(workers: Workers) -> None:
    results: list[int] = []
    busy = [threading.Thread(target=lambda: results.append(workers.call(work.steps, 1, 1.5))) for _ in range(2)]
    for t in busy:
        t.start()
    deadline = time.monotonic() + 60
    while len(workers.pids()) < 2 and time.monotonic() < deadline:  # both at work (a worker starts in ~0.1 s)
        time.sleep(0.01)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(Cancelled, match="before a worker was free"):
        workers.call(work.pid, cancel=cancel)
    for t in busy:
        t.join()
    assert results == [1, 1] and len(workers.pids()) == 2
