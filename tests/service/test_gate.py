"""The gate of `paperscope serve`: every /v1 route needs `Authorization: Bearer KEY` when the server has one (asked
before any body is read); /healthz and the API pages do not; listening beyond loopback without a key (or with a
weak one) is refused; other names for the server (DNS rebinding), browsers on other sites and bodies over the
limit are refused before the routes see them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.errors import ConfigError
from paperscope.service.gate import check_bind, is_loopback
from tests.memory import peak_mb, reset_peak, rss_mb
from tests.served import PAPERSCOPE, Served, clean_env, wait_job
from tests.service.conftest import BODY_MB

QUESTION = "How many queries was FlashRank trained on?"


def test_health_and_api_pages_need_no_key(server: Served) -> None:
    with server.client(key=None) as anonymous:
        health = anonymous.get("/healthz")
        assert health.status_code == 200
        body = health.json()
        assert body["ok"] is True and body["kb"] == "papers" and body["papers"] >= 2
        assert body["embedder"].startswith("local:")
        assert anonymous.get("/docs").status_code == 200
        paths = anonymous.get("/openapi.json").json()["paths"]
        for route in ("/v1/documents", "/v1/jobs/{job_id}", "/v1/retrieve", "/v1/chat", "/v1/chat/completions"):
            assert route in paths


@pytest.mark.parametrize(
    ("key", "why"), [(None, "needs `Authorization: Bearer <key>`"), ("wrong", "not this server's")]
)
def test_every_v1_route_needs_the_key(server: Served, key: str | None, why: str) -> None:
    with server.client(key=key) as client:
        for method, path in (
            ("GET", "/v1/documents"),
            ("POST", "/v1/retrieve"),
            ("POST", "/v1/chat"),
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
            ("GET", "/v1/jobs/x"),
            ("DELETE", "/v1/documents/abcd1234"),
        ):
            response = client.request(method, path, json={"query": QUESTION} if method == "POST" else None)
            assert response.status_code == 401, (method, path)
            assert why in response.json()["error"]["message"]
            assert response.headers["www-authenticate"] == "Bearer"


def test_listening_beyond_loopback_without_a_key_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(PAPERSCOPE), "serve", "--host", "0.0.0.0", "--port", "0"],
        env=clean_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to listen on 0.0.0.0 without an API key" in lines[0]
    assert "PAPERSCOPE_API_KEY" in lines[0]
    assert not (tmp_path / "home" / "milvus.db").exists()  # refused before anything was opened


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.2", "example.org", "192.168.1.1"))
    check_bind("127.0.0.1", None)
    with pytest.raises(ConfigError, match="refusing to listen on ::"):
        check_bind("::", None)


# --- what a hostile web page or client can do to a server on loopback without a key -------------------------


def test_a_page_on_another_site_cannot_add_papers(hostile: Served, sample_pdfs: dict[str, Path]) -> None:
    with hostile.client() as http:
        kbs = http.get("/v1/models").json()["data"]
        papers = http.get("/v1/documents").json()
        pdf = sample_pdfs["quantkv"]
        for headers in (
            {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},  # a browser of today
            {"Origin": "http://evil.example"},  # an older browser: the Origin alone
            {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed frame, a file:// page
            {"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost:8000"},
        ):
            with pdf.open("rb") as fh:
                response = http.post(
                    "/v1/documents", files={"file": ("planted.pdf", fh, "application/pdf")}, data={"kb": "planted"},
                    headers=headers,
                )  # fmt: skip
            assert response.status_code == 403, headers
            assert response.json()["error"]["code"] == "cross_site"
            assert "service.allowed_origins" in response.json()["error"]["message"]
        reading = http.get("/v1/documents", headers={"Sec-Fetch-Site": "cross-site"})
        assert reading.status_code == 403
        # Nothing was stored, and no knowledge base was made.
        assert http.get("/v1/models").json()["data"] == kbs and http.get("/v1/documents").json() == papers
        assert not list((hostile.home / "uploads").glob("*/planted.pdf"))
        # The server's own page (same origin) and clients that are no browser (no Origin) may.
        own = {"Origin": hostile.url, "Sec-Fetch-Site": "same-origin"}
        with pdf.open("rb") as fh:
            taken = http.post("/v1/documents", files={"file": ("quantkv.pdf", fh, "application/pdf")}, headers=own)
        assert taken.status_code == 202
        assert wait_job(http, taken.json()["job_id"])["state"] == "done"


def test_a_name_rebound_to_loopback_is_not_this_server(hostile: Served) -> None:
    port = hostile.url.rsplit(":", 1)[1]
    with hostile.client() as http:
        for method, path in (("GET", "/v1/documents"), ("POST", "/v1/retrieve"), ("DELETE", "/v1/documents/abcd")):
            body = {"query": "What is FlashRank?"} if method == "POST" else None
            refused = http.request(method, path, json=body, headers={"Host": f"attacker.example:{port}"})
            assert refused.status_code == 400, path
            assert refused.json()["error"]["code"] == "bad_host"
            assert "'attacker.example:" in refused.json()["error"]["message"]
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            assert http.get("/v1/documents", headers={"Host": host}).status_code == 200, host


def chunks_of(total: int, size: int = 1 << 20) -> Iterator[bytes]:
    """A body of `total` bytes sent in pieces, with no Content-Length (chunked)."""
    piece = b" " * size
    for _ in range(total // size):
        yield piece


def test_a_large_body_is_refused_before_it_is_read(hostile: Served) -> None:
    pid = hostile.process.pid
    with hostile.client() as http:
        reset_peak(pid)
        before = rss_mb(pid)
        announced = b'{"query": "' + b"a" * (64 << 20) + b'"}'
        refused = http.post("/v1/chat", content=announced, headers={"content-type": "application/json"})
        assert refused.status_code == 413
        assert refused.json()["error"]["message"] == (
            f"the request body is larger than the server takes ({BODY_MB} MB, service.max_body_mb)"
        )
        streamed = http.post("/v1/chat", content=chunks_of(64 << 20), headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        assert peak_mb(pid) - before < 40, "a refused body is never held"
        assert http.get("/healthz").status_code == 200


def test_the_key_is_asked_for_before_the_body_is_read(server: Served) -> None:
    pid = server.process.pid
    with server.client(key=None) as anonymous:
        reset_peak(pid)
        before = rss_mb(pid)
        refused = anonymous.post("/v1/chat", content=chunks_of(64 << 20), headers={"content-type": "application/json"})
        assert refused.status_code == 401
        assert peak_mb(pid) - before < 40


@pytest.mark.parametrize(
    ("host", "key", "says"),
    [
        ("127.0.0.1", "   ", "PAPERSCOPE_API_KEY is blank"),
        ("0.0.0.0", "x", "with a 1-character API key: use 16 or more"),
        ("0.0.0.0", "", "without an API key"),  # an empty variable is no key
    ],
)
def test_a_weak_key_is_refused_before_the_server_starts(tmp_path: Path, host: str, key: str, says: str) -> None:
    result = subprocess.run(
        [str(PAPERSCOPE), "serve", "--host", host, "--port", "0"],
        env=clean_env(tmp_path / "home", {"PAPERSCOPE_API_KEY": key}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr


def test_the_gate_answers_to_its_settings() -> None:
    """allowed_hosts and allowed_origins let a reverse proxy's name and another front end in."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from paperscope.service.gate import Gate

    inner = FastAPI()

    @inner.post("/v1/x")
    async def x() -> dict[str, bool]:
        return {"ok": True}

    inner.add_middleware(
        Gate,
        bound="127.0.0.1",
        api_key=None,
        allowed_hosts=["papers.lab.example"],
        allowed_origins=["https://notebook.lab.example"],
        max_body=100,
        max_upload=1000,
    )
    client = TestClient(inner, base_url="http://papers.lab.example")
    assert client.post("/v1/x").status_code == 200
    assert client.post("/v1/x", headers={"Origin": "https://notebook.lab.example"}).status_code == 200
    assert client.post("/v1/x", headers={"Origin": "https://elsewhere.example"}).status_code == 403
    assert client.post("/v1/x", headers={"Host": "other.example"}).status_code == 400
    assert client.post("/v1/x", content=b"x" * 101).status_code == 413
