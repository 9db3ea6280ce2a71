"""Page images over real HTTP: a page of a stored paper with a chunk's boxes drawn (where the chunk route says they
are, and nowhere else), the options checked, a PDF that left the disk said to be gone, the key asked for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
import pytest

from paperscope.rag.ingest import doc_id_for, file_sha256
from tests.served import Served, upload, wait_job
from tests.service.conftest import RENDER_SECONDS, workers_of
from tests.service.test_page_images import far_mask, pixels


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def a_chunk_with_boxes(http: httpx.Client, doc_id: str) -> dict[str, Any]:
    """The first chunk of the paper whose text has line boxes on one page."""
    for index in range(40):
        chunk: dict[str, Any] = http.get(f"/v1/documents/{doc_id}/chunks/{index}").json()
        pages = {b["page"] for b in chunk["boxes"]}
        if len(chunk["boxes"]) >= 2 and len(pages) == 1:
            return chunk
    pytest.fail(f"no chunk of {doc_id} has boxes on one page")


def test_the_highlighted_page_differs_from_the_plain_one_where_the_chunk_is(
    http: httpx.Client, sample_pdf_ids: dict[str, str]
) -> None:
    doc_id = sample_pdf_ids["flashrank"]
    chunk = a_chunk_with_boxes(http, doc_id)
    page = chunk["boxes"][0]["page"]
    url = f"/v1/documents/{doc_id}/pages/{page}.png"
    plain = http.get(url, params={"dpi": 72})
    marked = http.get(url, params={"dpi": 72, "chunk": chunk["chunk_index"]})
    assert plain.status_code == marked.status_code == 200
    assert marked.headers["content-type"] == "image/png" and marked.headers["x-paperscope-scale"] == "1"
    assert plain.headers["x-paperscope-boxes"] == "0"
    assert marked.headers["x-paperscope-boxes"] == str(len(chunk["boxes"]))
    before, after = pixels(plain.content), pixels(marked.content)
    rects = [tuple(b["rect"]) for b in chunk["boxes"]]
    for x0, y0, x1, y1 in rects:
        inside = (slice(int(y0) + 1, int(y1)), slice(int(x0) + 1, int(x1)))
        assert (after[inside] != before[inside]).any(axis=2).mean() > 0.9
    far = far_mask(before.shape, rects, 1.0, margin=4)
    assert np.array_equal(before[far], after[far])
    # The chunk's boxes are drawn on their own page only: another page is the plain page.
    other = 1 if page != 1 else 2
    elsewhere = http.get(f"/v1/documents/{doc_id}/pages/{other}.png", params={"chunk": chunk["chunk_index"]})
    assert elsewhere.headers["x-paperscope-boxes"] == "0"
    assert elsewhere.content == http.get(f"/v1/documents/{doc_id}/pages/{other}.png").content
    # A doc_id prefix names the paper, as in every documents route; width sets the size.
    narrow = http.get(f"/v1/documents/{doc_id[:8]}/pages/{page}.png", params={"width": 200})
    assert narrow.status_code == 200 and pixels(narrow.content).shape[1] == 200


@pytest.mark.parametrize(
    ("path", "params", "status", "code", "says"),
    [
        ("pages/0.png", {}, 422, "invalid_request", "page: Input should be greater than or equal to 1"),
        ("pages/99.png", {}, 404, "unknown_page", "has pages 1..6; there is no page 99"),
        ("pages/1.png", {"chunk": 9999}, 404, "unknown_chunk", "has no chunk 9999 (it has "),
        ("pages/1.png", {"dpi": 20}, 422, "invalid_request", "dpi: Input should be greater than or equal to 36"),
        ("pages/1.png", {"dpi": 301}, 422, "invalid_request", "dpi: Input should be less than or equal to 300"),
        ("pages/1.png", {"width": 10}, 422, "invalid_request", "width: Input should be greater than or equal to 64"),
        ("pages/1.png", {"dpi": 100, "width": 300}, 400, "invalid_option", "give one of them, not both"),
        ("pages/one.png", {}, 422, "invalid_request", "page: Input should be a valid integer"),
    ],
)
def test_bad_page_requests_name_what_is_wrong(
    http: httpx.Client,
    sample_pdf_ids: dict[str, str],
    path: str,
    params: dict[str, int],
    status: int,
    code: str,
    says: str,
) -> None:
    response = http.get(f"/v1/documents/{sample_pdf_ids['flashrank']}/{path}", params=params)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and says in error["message"]


def test_an_unknown_paper_and_a_missing_key(http: httpx.Client, server: Served, sample_pdf_ids: dict[str, str]) -> None:
    unknown = http.get("/v1/documents/0123abcd/pages/1.png")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_paper"
    assert "doc_id 0123abcd is not a paper" in unknown.json()["error"]["message"]
    with server.client(key=None) as anonymous:
        refused = anonymous.get(f"/v1/documents/{sample_pdf_ids['flashrank']}/pages/1.png")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"


def test_a_pdf_no_longer_on_disk_is_said_to_be_gone(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], tmp_path: Path
) -> None:
    # A paper of its own (new bytes), uploaded: the server keeps it as uploads/<sha256>/<name>.
    pdf = tmp_path / "vanishing.pdf"
    pdf.write_bytes(sample_pdfs["marten"].read_bytes() + b"\n%a copy with other bytes\n")
    job = wait_job(http, upload(http, pdf).json()["job_id"])
    assert job["state"] == "done", job
    doc_id = job["doc_id"]
    try:
        assert http.get(f"/v1/documents/{doc_id}/pages/1.png").status_code == 200
        (kept,) = (server.home / "uploads").glob("*/vanishing.pdf")
        kept.unlink()
        gone = http.get(f"/v1/documents/{doc_id}/pages/1.png")
        assert gone.status_code == 410
        error = gone.json()["error"]
        assert error["code"] == "pdf_gone"
        assert error["message"] == (
            f"the PDF of paper {doc_id} is no longer on disk as it was ingested (vanishing.pdf); "
            "ingest or upload it again to see its pages"
        )
        # Its chunks are still there to read.
        assert http.get(f"/v1/documents/{doc_id}/chunks/0").status_code == 200
    finally:
        http.delete(f"/v1/documents/{doc_id}")


def test_a_text_paper_has_no_page_images(http: httpx.Client, tmp_path: Path) -> None:
    notes = tmp_path / "garden-notes.md"
    notes.write_text("# Notes on Tomato Gardening\n\n## Watering\n\nWater tomatoes deeply twice a week in summer.\n")
    accepted = upload(http, notes, kind="text/markdown").json()
    job = wait_job(http, accepted["job_id"])
    assert job["state"] == "done", job
    try:
        response = http.get(f"/v1/documents/{job['doc_id']}/pages/1.png")
        assert response.status_code == 400
        assert response.json()["error"] == {
            "code": "not_a_pdf",
            "message": f"paper {job['doc_id']} was read from garden-notes.md, not a PDF: it has no pages to show",
        }
    finally:
        http.delete(f"/v1/documents/{job['doc_id']}")


def test_a_page_slow_to_draw_is_refused_while_the_server_answers(hostile: Served, lines_pdf: Path) -> None:
    doc_id = doc_id_for(file_sha256(lines_pdf))
    server = psutil.Process(hostile.process.pid)
    cpu_before = sum(server.cpu_times()[:2])
    answered: list[httpx.Response] = []

    def draw() -> None:
        with hostile.client() as client:
            answered.append(client.get(f"/v1/documents/{doc_id}/pages/1.png"))

    drawing = threading.Thread(target=draw)
    drawing.start()
    with hostile.client() as http:
        wait_for(lambda: bool(workers_of(hostile, "pages")), "a page worker drawing")
        # While the page is drawn (it takes tens of seconds), everything else is answered.
        assert http.get("/healthz").status_code == 200 and drawing.is_alive()
        assert http.get("/v1/documents").status_code == 200 and drawing.is_alive()
        assert http.get("/static/js/main.js").status_code == 200 and drawing.is_alive()
        drawing.join()
    [refused] = answered
    assert refused.status_code == 422 and refused.json()["error"] == {
        "code": "page_too_complex",
        "message": f"page 1 of lines.pdf takes longer than {RENDER_SECONDS} s to draw (service.render_seconds)",
    }
    # The drawing was the worker's: the server itself spent little time.
    assert sum(server.cpu_times()[:2]) - cpu_before < RENDER_SECONDS / 2


def test_a_client_that_hangs_up_stops_the_drawing(hostile: Served, lines_pdf: Path) -> None:
    doc_id = doc_id_for(file_sha256(lines_pdf))
    with hostile.client(timeout=1.0) as impatient, pytest.raises(httpx.ReadTimeout):
        impatient.get(f"/v1/documents/{doc_id}/pages/1.png", params={"dpi": 150})
    hung_up = time.monotonic()
    wait_for(lambda: not workers_of(hostile, "pages"), "the page worker stopped", seconds=30)
    # Stopped as the client left, not at the render limit (RENDER_SECONDS after the request).
    assert time.monotonic() - hung_up < RENDER_SECONDS - 2
    with hostile.client() as http:
        assert http.get(f"/v1/documents/{doc_id}/pages/1.png", params={"dpi": 36, "width": None}).status_code in (
            200,
            422,
        )


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {seconds} s")
        time.sleep(0.05)


def test_the_pdf_of_a_paper_is_answered_as_ingested(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    doc_id = sample_pdf_ids["flashrank"]
    response = http.get(f"/v1/documents/{doc_id}/pdf")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'inline; filename="flashrank.pdf"'
    assert response.content.startswith(b"%PDF-") and response.content == sample_pdfs["flashrank"].read_bytes()
    # A prefix names it, as in every documents route.
    assert http.get(f"/v1/documents/{doc_id[:8]}/pdf").content == response.content
    with server.client(key=None) as anonymous:
        refused = anonymous.get(f"/v1/documents/{doc_id}/pdf")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert not refused.content.startswith(b"%PDF")


@pytest.mark.parametrize(
    ("doc_id", "status", "code", "says"),
    [
        ("0123abcd", 404, "unknown_paper", "doc_id 0123abcd is not a paper"),
        ("ab", 400, "invalid_option", "doc_id: "),
        ("abcd'or'1=1", 400, "invalid_option", "doc_id: "),
    ],
)
def test_the_pdf_of_no_paper_is_refused_naming_it(
    http: httpx.Client, doc_id: str, status: int, code: str, says: str
) -> None:
    response = http.get(f"/v1/documents/{doc_id}/pdf")
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and says in error["message"]


def test_a_text_paper_has_no_pdf_and_a_pdf_gone_is_said_to_be(
    http: httpx.Client, server: Served, sample_pdfs: dict[str, Path], tmp_path: Path
) -> None:
    notes = tmp_path / "pepper-notes.md"
    notes.write_text("# Notes on Pepper Gardening\n\n## Sowing\n\nSow peppers indoors eight weeks before frost.\n")
    accepted = upload(http, notes, kind="text/markdown").json()
    pdf = tmp_path / "fleeting.pdf"
    pdf.write_bytes(sample_pdfs["marten"].read_bytes() + b"\n%another copy with other bytes\n")
    text_job = wait_job(http, accepted["job_id"])
    pdf_job = wait_job(http, upload(http, pdf).json()["job_id"])
    assert text_job["state"] == pdf_job["state"] == "done", (text_job, pdf_job)
    try:
        response = http.get(f"/v1/documents/{text_job['doc_id']}/pdf")
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "not_a_pdf",
            "message": f"paper {text_job['doc_id']} was read from pepper-notes.md, not a PDF: there is no PDF to open",
        }
        assert http.get(f"/v1/documents/{pdf_job['doc_id']}/pdf").content == pdf.read_bytes()
        (kept,) = (server.home / "uploads").glob("*/fleeting.pdf")
        kept.unlink()
        gone = http.get(f"/v1/documents/{pdf_job['doc_id']}/pdf")
        assert gone.status_code == 410 and gone.json()["error"]["code"] == "pdf_gone"
    finally:
        http.delete(f"/v1/documents/{text_job['doc_id']}")
        http.delete(f"/v1/documents/{pdf_job['doc_id']}")
