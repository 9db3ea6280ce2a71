"""The app as a whole: JSON errors (never a traceback), questions answered side by side while the writer ingests,
a client that hangs up mid-stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.served import Served, upload, wait_job

QUESTION = "How many queries was FlashRank trained on?"


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def test_an_unknown_route_is_a_json_404(http: httpx.Client) -> None:
    response = http.get("/v1/nothing/here")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "no route GET /v1/nothing/here"}}
    wrong = http.put("/v1/retrieve", json={})
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_chats_run_side_by_side_during_an_ingest(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    names = ("longcite", "reflectrag", "scholarnav")
    jobs = [upload(http, sample_pdfs[name]).json()["job_id"] for name in names]
    deadline = time.monotonic() + 120
    while http.get(f"/v1/jobs/{jobs[0]}").json()["state"] == "queued" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert http.get(f"/v1/jobs/{jobs[0]}").json()["state"] == "running"
    results: list[tuple[int, dict[str, Any], float]] = []
    lock = threading.Lock()

    def ask() -> None:
        with server.client() as client:
            response = client.post("/v1/chat", json={"query": QUESTION})
            with lock:
                results.append((response.status_code, response.json(), time.time()))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [status for status, _, _ in results] == [200] * 8
    assert all("1.2 million queries" in body["answer"] for _, body, _ in results)
    finished = [wait_job(http, j) for j in jobs]
    assert all(j["state"] == "done" and j["status"] == "ingested" for j in finished)
    # Every answer came back before the writer had finished: the chats did not wait for the ingest.
    assert max(at for _, _, at in results) < max(j["finished"] for j in finished)
    listed = {p["doc_id"]: p["status"] for p in http.get("/v1/documents").json()}
    assert all(listed[sample_pdf_ids[n]] == "ready" for n in names)


def test_a_client_that_goes_away_mid_stream_does_not_hurt_the_server(http: httpx.Client, server: Served) -> None:
    with http.stream("POST", "/v1/chat", json={"query": QUESTION, "stream": True}) as response:
        next(response.iter_lines())  # the first event, then hang up
    assert http.get("/healthz").status_code == 200
    assert http.post("/v1/chat", json={"query": QUESTION}).status_code == 200
    assert "Traceback" not in server.stderr()
