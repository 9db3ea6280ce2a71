"""What an upload must be before it is kept: checked by name, declared type and first bytes; kept by content."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from paperscope.service.errors import ApiError
from paperscope.service.uploads import check_content_type, check_head, check_name, remove_uploads, store_upload


@pytest.mark.parametrize("name", ["paper.pdf", "Notes.MD", "a b (1).pdf", "读书笔记.txt", "x.markdown"])
def test_names_taken(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("../x.pdf", "has path parts"),
        ("/etc/passwd.pdf", "has path parts"),
        ("a\\b.pdf", "has path parts"),
        ("..", "has path parts"),
        ("x\x00.pdf", "has path parts"),
        (".hidden.pdf", "starts with a dot"),
        ("", "has no file name"),
        ("paper.docx", "not a PDF, Markdown or text file"),
        ("noext", "not a PDF, Markdown or text file"),
        ("a" * 300 + ".pdf", "longer than 255 bytes"),
    ],
)
def test_names_refused(name: str, says: str) -> None:
    with pytest.raises(ApiError, match=says) as caught:
        check_name(name)
    assert caught.value.status == 400


def test_content_types() -> None:
    for declared in (None, "", "application/pdf", "application/octet-stream", "text/markdown; charset=utf-8"):
        check_content_type("x.pdf", declared)
    with pytest.raises(ApiError) as caught:
        check_content_type("x.pdf", "image/png")
    assert caught.value.status == 415


def test_first_bytes_must_agree_with_the_name() -> None:
    check_head("x.pdf", b"%PDF-1.7\n...")
    check_head("x.pdf", b"\xef\xbb\xbf\n%PDF-1.4")  # the header may come a little later
    check_head("x.md", "# Überschrift\n".encode()[:3])  # a character cut at the end of the head is fine
    for name, head, says in (
        ("x.pdf", b"<html>", "not a PDF"),
        ("x.txt", b"ab\x00cd", "holds NUL bytes"),
        ("x.md", b"\xff\xfe# title", "not a UTF-8 text file"),
    ):
        with pytest.raises(ApiError, match=says):
            check_head(name, head)


@pytest.mark.parametrize(
    ("head", "shown"),
    [
        (b"hello\n", "'hello\\n'"),
        (b"\x89PNG\r\n\x1a\nrest", "'\\x89PNG\\r\\n\\x1a\\n'"),
        (b"it's a text", '"it\'s a t"'),
    ],
)
def test_a_file_that_is_no_pdf_is_quoted_escaped_once(head: bytes, shown: str) -> None:
    """Its first bytes as Python writes them (one backslash per escape), not escaped and then quoted again."""
    with pytest.raises(ApiError) as caught:
        check_head("x.pdf", head)
    assert caught.value.message == f"x.pdf: not a PDF (it starts with {shown}, not %PDF-)"
    assert "\\\\" not in caught.value.message and "\n" not in caught.value.message  # one line, no doubled escapes


def test_kept_by_content_and_refused_past_the_limit(tmp_path: Path) -> None:
    body = b"%PDF-1.4\n" + b"x" * 5000
    first = store_upload(io.BytesIO(body), "a.pdf", tmp_path, limit_bytes=10_000)
    again = store_upload(io.BytesIO(body), "a.pdf", tmp_path, limit_bytes=10_000)
    assert first == again and first.path == tmp_path / first.sha256 / "a.pdf" and first.size == len(body)
    assert first.path.read_bytes() == body
    with pytest.raises(ApiError) as caught:
        store_upload(io.BytesIO(b"%PDF-1.4\n" + b"x" * 20_000), "big.pdf", tmp_path, limit_bytes=10_000)
    assert caught.value.status == 413
    assert not list((tmp_path / ".incoming").iterdir())  # nothing left of the refused one
    remove_uploads(tmp_path, first.sha256)
    assert not (tmp_path / first.sha256).exists()
