"""`paperscope ingest --server`: a file the server refuses fails alone, its reason in one clean line.

The server here is the service's own refusal (its upload check and its error answer, src/service/) behind an
httpx transport: what the CLI reads is what `paperscope serve` sends.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.service.errors import ApiError, error_response
from paperscope.service.uploads import store_upload

URL = "http://127.0.0.1:9"


@pytest.fixture
def refusing_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file that is no PDF, and a server (for the CLI's httpx client) that refuses its upload as serve does."""
    paper = tmp_path / "hello.pdf"
    paper.write_bytes(b"hello\nworld, this is no PDF\n")

    def answer(request: httpx.Request) -> httpx.Response:
        assert (request.method, request.url.path) == ("POST", "/v1/documents")
        try:
            store_upload(io.BytesIO(paper.read_bytes()), paper.name, tmp_path / "uploads", 1 << 20)
        except ApiError as exc:
            sent = error_response(exc, "POST /v1/documents")
            return httpx.Response(
                sent.status_code, content=bytes(sent.body), headers={"content-type": "application/json"}
            )
        raise AssertionError("the upload was taken")

    client = httpx.Client
    monkeypatch.setattr(httpx, "Client", lambda **options: client(transport=httpx.MockTransport(answer), **options))
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    return paper


def test_a_refused_upload_reads_as_one_line_escaped_once(refusing_server: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80", "PAPERSCOPE_API_KEY": None, "PAPERSCOPE_SERVER": None})
    result = runner.invoke(app, ["ingest", str(refusing_server), "--server", URL])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    reason = "hello.pdf: not a PDF (it starts with 'hello\\nwo', not %PDF-)"  # one backslash: \n as Python writes it
    [failed] = [line for line in result.stdout.splitlines() if line.startswith("failed")]
    assert failed.endswith(reason), failed
    assert "\\\\" not in result.stdout  # never escaped twice

    as_json = runner.invoke(app, ["ingest", str(refusing_server), "--server", URL, "--json"])
    [row] = json.loads(as_json.stdout)["files"]
    assert row["status"] == "failed" and row["error"] == reason
