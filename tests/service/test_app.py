"""The app as a whole: JSON errors (never a traceback), questions answered side by side while the writer ingests,
a client that hangs up mid-stream, a full disk, a stop in the middle of a stream."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from paperscope.rag.embeddings import CachedEmbedder
from tests.openai_server import ScriptedOpenAIServer, Slow, Text
from tests.served import Served, make_home, serve, sse_events, upload, wait_job

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


# --- a full disk and a stop: a server whose uploads folder is a 1 MB file system of its own ------------------


@pytest.fixture(scope="module")
def slow_model() -> Iterator[ScriptedOpenAIServer]:
    """A model that takes 60 s to say anything."""
    with ScriptedOpenAIServer([Slow(60, Text("Too late."))] * 10) as model:
        yield model


@pytest.fixture(scope="module")
def cramped(
    tmp_path_factory: pytest.TempPathFactory,
    sample_pdfs: dict[str, Path],
    local_embedder: CachedEmbedder,
    slow_model: ScriptedOpenAIServer,
) -> Iterator[Served]:
    """The server runs in a mount namespace of its own, where its uploads folder is a 1 MB tmpfs (a full disk
    without filling this machine's)."""
    home = make_home(tmp_path_factory.mktemp("cramped-home"), [sample_pdfs["flashrank"]], local_embedder)
    uploads = tmp_path_factory.mktemp("cramped-uploads")
    mount = 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@"'
    prefix = ["unshare", "--mount", "--map-root-user", "sh", "-c", mount, str(uploads)]
    env = {
        "PAPERSCOPE_SERVICE__UPLOADS": str(uploads),
        "OPENAI_BASE_URL": slow_model.base_url,
        "OPENAI_API_KEY": "test",
        "PAPERSCOPE_LLM_MODEL": "scripted-model",
        "PAPERSCOPE_LLM__TIMEOUT": "120",
    }
    with serve(home, tmp_path_factory.mktemp("cramped-log") / "stderr.txt", env, prefix=prefix) as served:
        yield served


def test_a_full_disk_is_said_and_leaves_nothing(cramped: Served, sample_pdfs: dict[str, Path], tmp_path: Path) -> None:
    big = tmp_path / "big.pdf"
    big.write_bytes(sample_pdfs["flashrank"].read_bytes() + b"\n%" + b"x" * 2_000_000 + b"\n%%EOF\n")
    with cramped.client() as http:
        papers = http.get("/v1/documents").json()
        response = upload(http, big)
        assert response.status_code == 507
        assert response.json()["error"] == {
            "code": "insufficient_storage",
            "message": "big.pdf: the server has no room to keep the upload (No space left on device)",
        }
        assert http.get("/v1/documents").json() == papers and http.get("/v1/jobs").json() == []
        # The room is given back: a file that fits is taken.
        small = upload(http, sample_pdfs["quantkv"])
        assert small.status_code == 202 and wait_job(http, small.json()["job_id"])["state"] == "done"
    assert "Traceback" not in cramped.stderr()


def test_a_stream_under_way_when_the_server_stops_ends_with_an_error_event(
    cramped: Served, slow_model: ScriptedOpenAIServer
) -> None:
    asked = len(slow_model.requests)
    events: list[Any] = []

    def listen() -> None:
        with (
            cramped.client() as http,
            http.stream("POST", "/v1/chat", json={"query": QUESTION, "stream": True}) as response,
        ):
            events.extend(sse_events(response))

    listener = threading.Thread(target=listen)
    listener.start()
    deadline = time.monotonic() + 60
    while len(slow_model.requests) == asked and time.monotonic() < deadline:  # the question waits on the model
        time.sleep(0.05)
    cramped.process.send_signal(signal.SIGTERM)
    listener.join(60)
    assert not listener.is_alive()
    assert events[-2:] == [
        {
            "type": "error",
            "code": "server_stopping",
            "message": "the server is stopping: this answer was cut short; ask again once it is back",
        },
        "[DONE]",
    ]
    assert cramped.process.wait(60) == 0
