"""Documents and jobs over real HTTP: upload -> job -> listed, idempotent uploads, a bad file failing its job alone,
uploads refused at the door, a chunk with its neighbours, removing a paper."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hostile_pdfs import text_bomb
from tests.memory import peak_mb, reset_peak, rss_mb
from tests.served import Served, upload, wait_job
from tests.service.conftest import PARSE_MEMORY_MB


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def test_upload_runs_a_job_and_the_paper_is_listed(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    response = upload(http, sample_pdfs["quantkv"])
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["doc_id"] == sample_pdf_ids["quantkv"] and accepted["state"] in ("queued", "running")
    assert response.headers["location"] == f"/v1/jobs/{accepted['job_id']}"
    job = wait_job(http, accepted["job_id"])
    assert job["state"] == "done" and job["status"] == "ingested" and job["error"] is None
    assert job["progress"]["stage"] == "done" and job["file"] == "quantkv.pdf" and job["kb"] == "papers"
    assert job["result"]["chunks"] > 0 and job["result"]["title"].startswith("QuantKV")
    listed = {p["doc_id"]: p for p in http.get("/v1/documents").json()}
    paper = listed[sample_pdf_ids["quantkv"]]
    assert paper["status"] == "ready" and paper["title"].startswith("QuantKV")
    assert set(paper) == {
        "doc_id", "title", "authors", "year", "pages", "n_chunks", "planned_chunks", "status", "source", "aliases",
        "enrichments", "venue", "doi", "arxiv_id", "citation_key", "collections", "tags", "library", "ingested_at",
    }  # fmt: skip
    assert isinstance(paper["ingested_at"], int) and paper["ingested_at"] >= int(job["created"]) - 1
    # The same bytes again, under another name: idempotent, nothing written.
    again = wait_job(http, upload(http, sample_pdfs["quantkv"], name="renamed.pdf").json()["job_id"])
    assert again["state"] == "done" and again["status"] == "unchanged" and again["result"]["chunks"] == 0
    kept = sorted(p.name for p in (server.home / "uploads").glob("*/*") if p.parent.name != ".incoming")
    assert "quantkv.pdf" in kept and "renamed.pdf" not in kept  # kept once by content, under its first name
    assert len({p.parent for p in (server.home / "uploads").glob("*/quantkv.pdf")}) == 1
    assert [j["job_id"] for j in http.get("/v1/jobs").json()[:2]] == [again["job_id"], job["job_id"]]


def test_a_garbage_pdf_fails_its_job_alone(
    http: httpx.Client, server: Served, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 500)
    bad = upload(http, broken)
    good = upload(http, sample_pdfs["switchback"])
    assert bad.status_code == good.status_code == 202
    failed, done = wait_job(http, bad.json()["job_id"]), wait_job(http, good.json()["job_id"])
    assert failed["state"] == "failed" and failed["status"] == "failed"
    assert failed["error"].startswith("broken.pdf: ")
    assert done["state"] == "done" and done["status"] == "ingested"
    listed = {p["doc_id"] for p in http.get("/v1/documents").json()}
    assert done["doc_id"] in listed and failed["doc_id"] not in listed
    assert not list((server.home / "uploads").glob("*/broken.pdf"))  # a file that failed is not kept


@pytest.mark.parametrize(
    ("name", "content", "status", "says"),
    [
        ("notes.pdf", b"hello, not a pdf", 400, "notes.pdf: not a PDF"),
        ("../evil.pdf", b"%PDF-1.4\n", 400, "has path parts"),
        ("sub\\evil.pdf", b"%PDF-1.4\n", 400, "has path parts"),
        ("picture.png", b"\x89PNG\r\n", 400, "picture.png: not a PDF, Markdown or text file"),
        ("empty.pdf", b"", 400, "empty.pdf: the file is empty"),
        ("notes.md", b"# Title\x00\x00", 400, "notes.md: not a text file"),
        ("big.pdf", b"%PDF-1.4\n" + b"x" * 530_000, 413, "larger than the server takes (0.5 MB"),
        ("bigger.pdf", b"%PDF-1.4\n" + b"x" * 700_000, 413, "larger than the server takes (0.5 MB"),
    ],
)
def test_bad_uploads_are_refused_naming_the_problem(
    http: httpx.Client, server: Served, name: str, content: bytes, status: int, says: str
) -> None:
    response = http.post("/v1/documents", files={"file": (name, content, "application/octet-stream")})
    assert response.status_code == status, response.text
    assert says in response.json()["error"]["message"]
    assert not list((server.home / "uploads" / ".incoming").glob("*"))  # nothing left behind


@pytest.mark.parametrize(
    ("fields", "status", "says"),
    [
        ({"strategy": "nonsense"}, 400, "strategy: unknown chunking strategy 'nonsense'"),
        ({"chunk_size": "3"}, 400, "invalid setting chunking.chunk_size"),
        ({"enrich": "magic"}, 400, "enrich: unknown enricher 'magic'"),
        # the session's server has no chat model: an enrichment is refused at once, not failed as a job
        ({"enrich": "questions"}, 400, "enrich: questions needs a chat model"),
        ({"kb": "no-such kb"}, 422, "kb: String should match pattern"),
        ({"colour": "blue"}, 400, "unknown field 'colour'"),
    ],
)
def test_upload_options_are_checked(
    http: httpx.Client, sample_pdfs: dict[str, Path], fields: dict[str, str], status: int, says: str
) -> None:
    response = upload(http, sample_pdfs["flashrank"], **fields)
    assert response.status_code == status, response.text
    assert says in response.json()["error"]["message"]


def test_a_declared_type_that_is_no_paper_is_415(http: httpx.Client, sample_pdfs: dict[str, Path]) -> None:
    with sample_pdfs["flashrank"].open("rb") as fh:
        typed = http.post("/v1/documents", files={"file": ("flashrank.pdf", fh, "image/png")})
    assert typed.status_code == 415 and "content type 'image/png'" in typed.json()["error"]["message"]


def test_unknown_kb_doc_id_and_job_are_404(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    cases: list[tuple[str, str, str]] = [
        ("GET", "/v1/documents?kb=nosuchkb", "knowledge base 'nosuchkb' does not exist"),
        ("DELETE", "/v1/documents/0000aaaa-0000-0000-0000-000000000000", "is not a paper in knowledge base 'papers'"),
        ("GET", f"/v1/documents/{sample_pdf_ids['flashrank']}/chunks/9999", "has no chunk 9999"),
        ("GET", "/v1/jobs/nosuchjob", "no job 'nosuchjob'"),
    ]
    for method, path, says in cases:
        response = http.request(method, path)
        assert response.status_code == 404, (path, response.text)
        assert says in response.json()["error"]["message"], path
    short = http.delete("/v1/documents/ab")
    assert short.status_code == 400 and "at least 4 characters" in short.json()["error"]["message"]


def test_a_chunk_with_its_neighbours(http: httpx.Client, sample_pdf_ids: dict[str, str]) -> None:
    flashrank = sample_pdf_ids["flashrank"]
    chunk: dict[str, Any] = http.get(f"/v1/documents/{flashrank[:8]}/chunks/3", params={"window": 1}).json()
    assert chunk["citation"] == f"{flashrank}:3" and chunk["text"] and chunk["page"] >= 1
    assert [c["chunk_index"] for c in chunk["window"]] == [2, 3, 4]
    assert isinstance(chunk["boxes"], list) and chunk["page_end"] >= chunk["page"]
    assert http.get(f"/v1/documents/{flashrank}/chunks/3", params={"window": 9}).status_code == 422


def test_delete_removes_the_paper_and_its_file(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    job = wait_job(http, upload(http, sample_pdfs["tokenprune"]).json()["job_id"])
    assert job["state"] == "done"
    doc_id = sample_pdf_ids["tokenprune"]
    removed = http.delete(f"/v1/documents/{doc_id[:6]}")
    assert removed.status_code == 200
    assert removed.json()["doc_id"] == doc_id and removed.json()["removed"] is True and removed.json()["chunks"] > 0
    assert doc_id not in {p["doc_id"] for p in http.get("/v1/documents").json()}
    assert http.get(f"/v1/documents/{doc_id}/chunks/0").status_code == 404
    assert not list((server.home / "uploads").glob("*/tokenprune.pdf"))


def test_an_upload_to_a_new_knowledge_base_creates_it(
    http: httpx.Client, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    job = wait_job(http, upload(http, sample_pdfs["hydra"], kb="other", strategy="sentence").json()["job_id"])
    assert job["state"] == "done" and job["kb"] == "other"
    assert [p["doc_id"] for p in http.get("/v1/documents", params={"kb": "other"}).json()] == [sample_pdf_ids["hydra"]]
    assert sample_pdf_ids["hydra"] not in {p["doc_id"] for p in http.get("/v1/documents").json()}
    found = http.post("/v1/retrieve", json={"query": "What does HyDRA generate?", "kb": "other"}).json()
    assert found["hits"] and {h["doc_id"] for h in found["hits"]} == {sample_pdf_ids["hydra"]}
    assert "paperscope:other" in [m["id"] for m in http.get("/v1/models").json()["data"]]


def test_a_pdf_that_inflates_to_gigabytes_fails_alone_and_the_server_stays_small(
    hostile: Served, tmp_path: Path
) -> None:
    """A 30 KB PDF whose one page holds 10 MB of text operators (2.6 GB once MuPDF reads it), on a server whose
    page count is set past it: the parsing worker's memory cap is what stands."""
    bomb = text_bomb(tmp_path / "bomb.pdf", 10)
    pid = hostile.process.pid
    with hostile.client() as http:
        papers = http.get("/v1/documents").json()
        reset_peak(pid)
        before = rss_mb(pid)
        job = upload(http, bomb).json()
        wait_for_state(http, job["job_id"], "running")
        assert http.get("/healthz").status_code == 200  # answered while the worker reads the page
        ended = wait_job(http, job["job_id"])
        assert peak_mb(pid) - before < 100, "the server never held the page"
        assert ended["state"] == "failed"
        assert re.fullmatch(
            rf"bomb\.pdf: page 1( \(\w+\))?: needs more than {PARSE_MEMORY_MB} MB of memory "
            r"\(parsing\.max_memory_mb\); not read",
            ended["error"],
        ), ended["error"]
        assert http.get("/v1/documents").json() == papers  # the library as it was
    assert not list((hostile.home / "uploads").glob("*/bomb.pdf"))  # a file that failed is not kept


def test_the_same_bytes_under_many_names_are_kept_once(hostile: Served, sample_pdfs: dict[str, Path]) -> None:
    pdf = sample_pdfs["longcite"]
    with hostile.client() as http:
        jobs = [upload(http, pdf, name=f"copy-{i}.pdf").json()["job_id"] for i in range(20)]
        ended = [wait_job(http, j) for j in jobs]
    assert {e["state"] for e in ended} == {"done"}
    assert sorted(e["status"] for e in ended) == ["ingested"] + ["unchanged"] * 19
    [folder] = {p.parent for p in (hostile.home / "uploads").glob("*/copy-*.pdf")}
    assert [p.name for p in folder.iterdir()] == ["copy-0.pdf"]
    assert not list((hostile.home / "uploads" / ".incoming").iterdir())


def wait_for_state(http: httpx.Client, job_id: str, state: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while http.get(f"/v1/jobs/{job_id}").json()["state"] != state:
        if time.monotonic() > deadline:
            pytest.fail(f"job {job_id} was not {state} within {seconds} s")
        time.sleep(0.02)


def test_references_and_citing_papers_over_http(
    http: httpx.Client, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    """HyDRA's reference list holds FlashRank, which the server holds: both directions, by doc_id and by name."""
    hydra, flashrank = sample_pdf_ids["hydra"], sample_pdf_ids["flashrank"]
    held_before = {p["doc_id"] for p in http.get("/v1/documents").json()}
    if hydra not in held_before:
        assert wait_job(http, upload(http, sample_pdfs["hydra"]).json()["job_id"])["state"] == "done"
    try:
        found = http.get("/v1/references", params={"paper": hydra[:8]})
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["paper"]["doc_id"] == hydra
        held = [(r["label"], r["held"]) for r in body["references"] if r["held"]]
        assert ("[8]", flashrank) in held
        citing = http.get("/v1/cited-by", params={"paper": "FlashRank"}).json()
        assert citing["paper"]["doc_id"] == flashrank
        assert hydra in [c["doc_id"] for c in citing["cited_by"]]
        assert all("FlashRank" in c["entry"]["text"] for c in citing["cited_by"])
        missing = http.get("/v1/cited-by", params={"paper": "ffffffff"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_paper"
    finally:
        if hydra not in held_before:
            assert http.delete(f"/v1/documents/{hydra}").status_code == 200


def test_a_collection_that_holds_no_paper_is_a_404_naming_it(http: httpx.Client) -> None:
    for route in ("/v1/retrieve", "/v1/chat"):
        response = http.post(route, json={"query": "How is FlashRank trained?", "collection": "Thesis/Chapter 9"})
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        assert error["code"] == "unknown_paper" and "'Thesis/Chapter 9' holds no paper" in error["message"]
