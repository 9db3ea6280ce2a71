"""Every kind of unusable input raises ParseError naming the file; the CLI prints one line."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.errors import ParseError
from paperscope.parser import parse_file, parse_pdf


def _text_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A Title Of A Paper\n\nSome body text that is long enough to count as text. " * 3)
    doc.save(path)
    return path


@pytest.fixture
def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    files: dict[str, tuple[Path, str]] = {}
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    files["empty"] = (empty, "empty file")

    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("just some notes, not a PDF at all")
    files["not_pdf"] = (not_pdf, "not a PDF")

    good = _text_pdf(tmp_path / "good.pdf")
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    files["truncated"] = (truncated, "truncated")

    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n")
    files["corrupt"] = (corrupt, "corrupt")

    encrypted = tmp_path / "encrypted.pdf"
    doc = pymupdf.open(good)
    doc.save(encrypted, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    files["encrypted"] = (encrypted, "encrypted")

    scanned = tmp_path / "scanned.pdf"
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 200), False)
    pix.set_rect(pix.irect, (200, 200, 200))
    page.insert_image(page.rect, pixmap=pix)
    doc.save(scanned)
    files["scanned"] = (scanned, "OCR is not supported")

    unsupported = tmp_path / "slides.pptx"
    unsupported.write_bytes(b"PK\x03\x04")
    files["unsupported"] = (unsupported, "unsupported file type")
    return files


@pytest.mark.parametrize("kind", ["empty", "not_pdf", "truncated", "corrupt", "encrypted", "scanned", "unsupported"])
def test_parse_error_names_file_and_reason(bad_files: dict[str, tuple[Path, str]], kind: str) -> None:
    path, reason = bad_files[kind]
    with pytest.raises(ParseError) as info:
        parse_file(path)
    assert path.name in str(info.value)
    assert reason in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(ParseError, match="file not found"):
        parse_pdf("/nonexistent/paper.pdf")


@pytest.mark.parametrize("kind", ["empty", "not_pdf", "encrypted", "scanned"])
def test_cli_one_line_error(bad_files: dict[str, tuple[Path, str]], kind: str) -> None:
    path, reason = bad_files[kind]
    result = CliRunner().invoke(app, ["parse", str(path), "--json"])
    assert result.exit_code != 0
    assert result.stdout == ""
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert path.name in message and reason in message
    assert "Traceback" not in message
