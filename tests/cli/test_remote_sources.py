"""`ingest arXiv:ID doi:DOI URL` from the command line, against a loopback server standing in for arXiv, a DOI
resolver and a publisher, then switched off."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app

MARTEN = "Marten-1B: Pretraining a Compact Language Model on 600 Billion Curated Tokens"
FLASHRANK = "FlashRank: Cheap Listwise Reranking with Distilled Cross-Encoders"
ATOM = f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/2405.01234v2</id>
    <published>2024-05-02T17:00:00Z</published>
    <title>{MARTEN}</title>
    <author><name>Oskar Nilsson</name></author>
    <author><name>Fatima Haddad</name></author>
    <arxiv:doi>10.48550/arXiv.2405.01234</arxiv:doi>
  </entry>
</feed>"""
LANDING = f"""<html><head>
<meta name="citation_title" content="{FLASHRANK}">
<meta name="citation_author" content="Okafor, Mira"><meta name="citation_author" content="Lindqvist, Tomas">
<meta name="citation_publication_date" content="2024/07/14">
<meta name="citation_conference_title" content="Proceedings of SIGIR 2024">
<meta name="citation_pdf_url" content="/files/flashrank.pdf">
</head><body>FlashRank</body></html>"""


@pytest.fixture
def publisher(sample_pdfs: dict[str, Path]) -> Iterator[str]:
    files = {
        "/pdf/2405.01234v2": sample_pdfs["marten"].read_bytes(),  # a version asked for is the one fetched
        "/files/flashrank.pdf": sample_pdfs["flashrank"].read_bytes(),
        "/files/hydra.pdf": sample_pdfs["hydra"].read_bytes(),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path in files:
                self._send(200, "application/pdf", files[path])
            elif path == "/api/query":
                self._send(200, "application/atom+xml", ATOM.encode())
            elif path == "/10.1145/3626772.1234567":
                self.send_response(302)
                self.send_header("Location", "/landing/flashrank")
                self.end_headers()
            elif path == "/landing/flashrank":
                self._send(200, "text/html; charset=utf-8", LANDING.encode())
            else:
                self._send(404, "text/plain", b"not found")

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _ingest(*specs: str, code: int) -> dict:
    result = CliRunner().invoke(app, ["ingest", *specs, "--json"])
    assert result.exit_code == code, result.stdout + result.stderr
    report: dict = json.loads(result.stdout)
    return report


def test_papers_named_by_arxiv_id_doi_and_url_are_fetched_with_their_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, publisher: str
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    monkeypatch.setenv("PAPERSCOPE_SOURCES__ARXIV_URL", publisher)
    monkeypatch.setenv("PAPERSCOPE_SOURCES__ARXIV_API_URL", f"{publisher}/api/query")
    monkeypatch.setenv("PAPERSCOPE_SOURCES__DOI_RESOLVER", publisher)
    report = _ingest("arXiv:2405.01234v2", "doi:10.1145/3626772.1234567", f"{publisher}/files/hydra.pdf", code=0)
    assert [f["status"] for f in report["files"]] == ["ingested"] * 3
    result = CliRunner().invoke(app, ["papers", "--json"])
    papers = {p["title"]: p for p in json.loads(result.stdout)}
    marten, flash = papers[MARTEN], papers[FLASHRANK]
    assert (marten["arxiv_id"], marten["authors"], marten["year"], marten["library"]) == (
        "2405.01234", ["Oskar Nilsson", "Fatima Haddad"], 2024, "arxiv"
    )  # fmt: skip
    assert (flash["doi"], flash["authors"], flash["venue"]) == (
        "10.1145/3626772.1234567", ["Mira Okafor", "Tomas Lindqvist"], "Proceedings of SIGIR 2024"
    )  # fmt: skip
    downloads = sorted(p.name for p in (home / "downloads").iterdir())
    assert len(downloads) == 3 and all(name.endswith(".pdf") for name in downloads)
    ask = CliRunner().invoke(app, ["ask", "What does the paper arXiv:2405.01234 pretrain?", "--json"])
    assert json.loads(ask.stdout)["route"]["doc_ids"] == [marten["doc_id"]]


def test_a_source_that_cannot_be_reached_fails_in_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, publisher: str, sample_pdfs: dict[str, Path]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    off = "http://127.0.0.1:9"  # the discard port: nothing listens there
    monkeypatch.setenv("PAPERSCOPE_SOURCES__ARXIV_URL", off)
    monkeypatch.setenv("PAPERSCOPE_SOURCES__DOI_RESOLVER", publisher)
    report = _ingest("arXiv:2405.01234", "doi:10.1145/404", str(sample_pdfs["quantkv"]), code=1)
    failed = {f["path"]: f["error"] for f in report["files"] if f["status"] == "failed"}
    assert set(failed) == {"arXiv:2405.01234", "doi:10.1145/404"}
    assert failed["arXiv:2405.01234"].startswith("arXiv:2405.01234: cannot reach http://127.0.0.1:9")
    assert "404" in failed["doi:10.1145/404"] and all("\n" not in e for e in failed.values())
    assert [f["status"] for f in report["files"] if f["status"] != "failed"] == ["ingested"]  # the rest went on
    downloads = home / "downloads"
    assert not downloads.exists() or not any(downloads.iterdir())  # nothing half-written
    typed = CliRunner().invoke(app, ["ingest", "https:/arxiv.org/pdf/1706.03762"])  # a shell-mangled URL
    assert typed.exit_code == 1 and "no such file or folder" in typed.stdout + typed.stderr
