"""Capacity apart for reads and for questions that wait on the model, and questions given up when their client is:
against the hostile server, whose chat model reads every request and never answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from tests.openai_server import ScriptedOpenAIServer
from tests.served import Served
from tests.service.conftest import QUESTION_WORKERS

QUESTION = "How many queries was FlashRank trained on?"
PATIENCE = 12.0  # seconds a chat client waits before it hangs up


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {seconds} s")
        time.sleep(0.05)


def test_questions_waiting_on_a_silent_model_hold_up_no_read_and_stop_when_their_clients_go(
    hostile: Served, silent_model: ScriptedOpenAIServer, sample_pdf_ids: dict[str, str]
) -> None:
    asked_before, gone_before = len(silent_model.requests), len(silent_model.gone)
    chats = 3 * QUESTION_WORKERS  # more than the question pool runs at once: the rest wait their turn
    outcomes: list[str] = []

    def chat() -> None:
        # The client gives up after PATIENCE seconds and hangs up, as a user closing the tab would.
        with hostile.client(timeout=PATIENCE) as client:
            try:
                outcomes.append(f"answered {client.post('/v1/chat', json={'query': QUESTION}).status_code}")
            except httpx.HTTPError as exc:
                outcomes.append(type(exc).__name__)

    clients = [threading.Thread(target=chat, daemon=True) for _ in range(chats)]
    for t in clients:
        t.start()
    wait_for(lambda: len(silent_model.requests) - asked_before >= QUESTION_WORKERS, "question calling the model")
    # Every question the pool runs waits on the model, and more wait for the pool: reads are answered at once.
    with hostile.client() as http:
        listed = http.get("/v1/documents")
        chunk = http.get(f"/v1/documents/{sample_pdf_ids['flashrank']}/chunks/0")
        retrieved = http.post("/v1/retrieve", json={"query": QUESTION})
        health = http.get("/healthz")
    assert [r.status_code for r in (listed, chunk, retrieved, health)] == [200] * 4
    assert all(t.is_alive() for t in clients) and not outcomes
    # The clients hang up: their questions stop calling the model, those running and those waiting alike.
    for t in clients:
        t.join(PATIENCE + 30)
    assert outcomes == ["ReadTimeout"] * chats

    # Every call a question made is cut (the model sees its connection closed), and none is made after.
    def made() -> int:
        return len(silent_model.requests) - asked_before

    wait_for(lambda: len(silent_model.gone) - gone_before == made(), "model connection closed", 30)
    calls = made()
    time.sleep(2)
    assert made() == calls and len(silent_model.gone) - gone_before == calls
    assert "server fault" not in hostile.stderr() and "Traceback" not in hostile.stderr()
