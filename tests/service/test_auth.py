"""The key and the loopback rule of `paperscope serve`: every /v1 route needs `Authorization: Bearer KEY` when the
server has one; /healthz and the API pages do not; listening beyond loopback without a key is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from paperscope.errors import ConfigError
from paperscope.service.auth import check_bind, is_loopback
from tests.served import PAPERSCOPE, Served, clean_env

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
