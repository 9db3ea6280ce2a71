"""Page images: a real sample PDF rendered by PyMuPDF, a parsed paragraph's line boxes drawn over its lines and
nowhere else; the PDF found again by its bytes, a missing or changed one said to be gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from paperscope.parser import parse_file
from paperscope.parser.page_image import MAX_PIXELS, PageImageError, render_page
from paperscope.rag.ingest import file_sha256
from paperscope.rag.store import PaperRecord
from paperscope.service.errors import ApiError
from paperscope.service.page_images import chunk_rects, find_pdf

Rect = tuple[float, float, float, float]


def pixels(png: bytes) -> np.ndarray:
    """The PNG as an array of RGB pixels (rows, columns, 3)."""
    pix = pymupdf.Pixmap(png)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]


def first_paragraph_boxes(pdf: Path, page: int = 1) -> list[Rect]:
    """The line boxes of the first body paragraph of `page` with boxes (as the parser records them)."""
    paper = parse_file(pdf)
    paragraph = next(p for p in paper.paragraphs if p.kind == "body" and p.boxes and p.boxes[0].page == page)
    return [b.rect for b in paragraph.boxes if b.page == page]


def far_mask(shape: tuple[int, ...], rects: list[Rect], scale: float, margin: float) -> np.ndarray:
    """True where a pixel is more than `margin` points from every rect."""
    mask = np.ones(shape[:2], dtype=bool)
    for x0, y0, x1, y1 in rects:
        top, bottom = max(0, int((y0 - margin) * scale)), int((y1 + margin) * scale) + 1
        left, right = max(0, int((x0 - margin) * scale)), int((x1 + margin) * scale) + 1
        mask[top:bottom, left:right] = False
    return mask


def test_the_highlight_covers_the_lines_of_the_chunk_and_nothing_else(sample_pdfs: dict[str, Path]) -> None:
    pdf = sample_pdfs["flashrank"]
    rects = first_paragraph_boxes(pdf)
    assert len(rects) >= 2
    plain = render_page(pdf, 1, dpi=72)
    marked = render_page(pdf, 1, dpi=72, rects=rects)
    assert plain.scale == marked.scale == 1.0
    before, after = pixels(plain.png), pixels(marked.png)
    assert before.shape == after.shape == (792, 612, 3)  # US letter at 72 dpi: one pixel a point
    for x0, y0, x1, y1 in rects:  # every line of the chunk is tinted: blue goes down under a yellow highlight
        inside = (slice(int(y0) + 1, int(y1)), slice(int(x0) + 1, int(x1)))
        assert (after[inside] != before[inside]).any(axis=2).mean() > 0.9
        assert after[inside][:, :, 2].mean() < before[inside][:, :, 2].mean() - 40
    far = far_mask(before.shape, rects, 1.0, margin=4)
    assert far.mean() > 0.8 and np.array_equal(before[far], after[far])


def test_a_width_scales_the_page_and_boxes_follow(sample_pdfs: dict[str, Path]) -> None:
    pdf = sample_pdfs["flashrank"]
    rects = first_paragraph_boxes(pdf)
    image = render_page(pdf, 1, width=306, rects=rects)
    assert image.scale == pytest.approx(0.5)
    marked, plain = pixels(image.png), pixels(render_page(pdf, 1, width=306).png)
    assert marked.shape == (396, 306, 3)
    x0, y0, x1, y1 = rects[0]
    inside = (slice(int(y0 * 0.5) + 1, int(y1 * 0.5)), slice(int(x0 * 0.5) + 1, int(x1 * 0.5)))
    assert (marked[inside] != plain[inside]).any(axis=2).mean() > 0.9


def test_pages_out_of_range_and_oversized_images_are_refused(sample_pdfs: dict[str, Path]) -> None:
    pdf = sample_pdfs["flashrank"]
    with pytest.raises(PageImageError, match=r"flashrank.pdf has pages 1\.\.\d+; there is no page 99") as missing:
        render_page(pdf, 99)
    assert missing.value.problem == "unknown_page"
    with pytest.raises(PageImageError, match=f"over {MAX_PIXELS:,}; ask a lower dpi or width") as big:
        render_page(pdf, 1, width=100_000)
    assert big.value.problem == "too_large"


def test_a_file_that_is_no_pdf_any_more_is_gone(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    with pytest.raises(PageImageError, match=r"broken\.pdf: cannot be opened as a PDF any more") as gone:
        render_page(broken, 1)
    assert gone.value.problem == "unreadable"


def record_of(*sources: Path, sha256: str) -> PaperRecord:
    return PaperRecord(
        doc_id="2df1e510-c87d-51ac-8cbd-6a95185e4569",
        title="FlashRank",
        source=str(sources[0]),
        sources=[str(s) for s in sources],
        sha256=sha256,
        status="ready",
    )


def test_the_pdf_is_found_by_its_bytes_wherever_it_still_is(sample_pdfs: dict[str, Path], tmp_path: Path) -> None:
    original = sample_pdfs["flashrank"]
    moved, copy = tmp_path / "moved.pdf", tmp_path / "copy.pdf"
    shutil.copyfile(original, copy)
    record = record_of(moved, copy, sha256=file_sha256(original))
    assert find_pdf(record) == copy  # the first path is gone, the second holds the bytes
    copy.write_bytes(original.read_bytes() + b"\n%changed\n")  # a new version at the same path is not the paper
    with pytest.raises(ApiError, match=r"the PDF of paper 2df1e510-\S+ is no longer on disk") as gone:
        find_pdf(record)
    assert gone.value.status == 410 and gone.value.code == "pdf_gone"
    assert "copy.pdf, moved.pdf" in gone.value.message and str(tmp_path) not in gone.value.message


def test_a_paper_read_from_markdown_has_no_pages(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nText.\n")
    with pytest.raises(ApiError, match=r"was read from notes.md, not a PDF: it has no pages to show") as error:
        find_pdf(record_of(notes, sha256=file_sha256(notes)))
    assert error.value.status == 400 and error.value.code == "not_a_pdf"


def test_chunk_rects_keeps_the_boxes_of_the_page() -> None:
    boxes = [
        {"page": 1, "rect": [1, 2, 3, 4]},
        {"page": 2, "rect": [5, 6, 7, 8]},
        {"page": 1, "rect": [9, 10]},  # malformed: left out
        {"rect": [1, 1, 2, 2]},
    ]
    assert chunk_rects({"boxes": boxes}, 1) == [(1.0, 2.0, 3.0, 4.0)]
    assert chunk_rects({"boxes": boxes}, 2) == [(5.0, 6.0, 7.0, 8.0)]
    assert chunk_rects({}, 1) == []
