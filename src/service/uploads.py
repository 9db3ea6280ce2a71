"""Uploaded files: checked at the door, kept under `<uploads>/<sha256>/<name>`.

Kept by content: the same bytes uploaded again, under any name, are kept once, at the path of their first
upload (their ingest is `unchanged`), where page rendering finds them later. Refused before anything is stored:
a name with path parts (`../x.pdf`, `a/b.pdf`), a kind paperscope does not read (by suffix, by declared content
type: 415), bytes that are not what the name says (a `.pdf` must start like a PDF, a text file must be UTF-8
without NUL bytes), and a file over `service.max_upload_mb` (413), counted as it streams in (gate.py refuses a
larger body before the route reads it). A disk with no room left is a 507 saying so.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..parser.files import PDF_SUFFIXES, SUPPORTED
from .errors import ApiError
from .gate import too_large

BLOCK = 1 << 20
PDF_MAGIC = b"%PDF-"
PDF_HEADER_WINDOW = 1024  # readers accept the header anywhere in the first 1024 bytes
#: Declared content types an upload may carry; clients often say octet-stream for anything.
CONTENT_TYPES = {
    "",
    "application/pdf",
    "application/x-pdf",
    "application/octet-stream",
    "binary/octet-stream",
    "application/x-download",
}


@dataclass(frozen=True)
class Stored:
    """An upload kept on disk."""

    path: Path
    sha256: str
    size: int


def check_name(name: str | None) -> str:
    """The uploaded file's name if it is a bare name of a kind paperscope reads; ApiError (400) else."""
    if not name or not name.strip():
        raise ApiError(400, "bad_file", "the upload has no file name: send it as multipart field `file` with one")
    if "/" in name or "\\" in name or name in (".", "..") or "\x00" in name:
        raise ApiError(400, "bad_file_name", f"file name {name!r} has path parts: send the file's name alone")
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        raise ApiError(400, "bad_file_name", f"file name {name[:40]!r}... is longer than 255 bytes")
    if name.startswith("."):
        raise ApiError(400, "bad_file_name", f"file name {name!r} starts with a dot (a hidden file)")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED:
        raise ApiError(
            400,
            "bad_file",
            f"{name}: not a PDF, Markdown or text file (a name ending in {', '.join(sorted(SUPPORTED))})",
        )
    return name


def check_content_type(name: str, content_type: str | None) -> None:
    """415 when the declared content type is clearly not a PDF, Markdown or text file."""
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared in CONTENT_TYPES or declared.startswith("text/"):
        return
    raise ApiError(
        415, "unsupported_media_type", f"{name}: content type {declared!r} is not a PDF, Markdown or text file"
    )


def check_head(name: str, head: bytes) -> None:
    """The file's first bytes agree with its name: a PDF header, or UTF-8 text without NUL bytes."""
    if Path(name).suffix.lower() in PDF_SUFFIXES:
        if PDF_MAGIC not in head[:PDF_HEADER_WINDOW]:
            raise ApiError(400, "bad_file", f"{name}: not a PDF (it starts with {shown_bytes(head[:8])}, not %PDF-)")
        return
    if b"\x00" in head:
        raise ApiError(400, "bad_file", f"{name}: not a text file (it holds NUL bytes)")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a character cut at the end is fine
    except UnicodeDecodeError as exc:
        raise ApiError(400, "bad_file", f"{name}: not a UTF-8 text file (byte {exc.start})") from None


def shown_bytes(data: bytes) -> str:
    """Bytes as a message quotes them, escaped once: `'hello\\n'`, `'\\x89PNG'` (what a terminal or a JSON client shows
    as is). Escaping them (unicode_escape) and then taking the repr of that doubled every backslash."""
    return ascii(data.decode("latin-1"))


def store_upload(source: BinaryIO, name: str, root: Path, limit_bytes: int) -> Stored:
    """Copy an upload to `root/<sha256>/<name>`, checking its size and first bytes as it streams; ApiError if
    bad, or when the server cannot keep it (507 for a full disk; nothing is kept then)."""
    incoming = root / ".incoming"
    tmp = incoming / uuid.uuid4().hex
    digest = hashlib.sha256()
    size = 0
    try:
        incoming.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as out:
            head = source.read(max(PDF_HEADER_WINDOW, 4096))
            if not head:
                raise ApiError(400, "bad_file", f"{name}: the file is empty")
            check_head(name, head)
            block = head
            while block:
                size += len(block)
                if size > limit_bytes:
                    raise too_large(limit_bytes)
                digest.update(block)
                out.write(block)
                block = source.read(BLOCK)
        sha = digest.hexdigest()
        folder = root / sha
        folder.mkdir(parents=True, exist_ok=True)
        kept = next((f for f in sorted(folder.iterdir()) if f.is_file()), None)
        if kept is not None:  # these bytes are here already, under their first name
            tmp.unlink()
            return Stored(kept, sha, size)
        final = folder / name
        os.replace(tmp, final)
        return Stored(final, sha, size)
    except OSError as exc:
        _forget(tmp)
        raise cannot_store(name, exc) from exc
    except BaseException:
        _forget(tmp)
        raise


def _forget(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        tmp.unlink()


#: Errors of a disk that has no room left for the upload (507 Insufficient Storage).
NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def cannot_store(name: str, exc: OSError) -> ApiError:
    """The answer to an upload the server could not write: the reason in words, no path of the server's."""
    why = exc.strerror or type(exc).__name__
    if exc.errno in NO_ROOM:
        return ApiError(507, "insufficient_storage", f"{name}: the server has no room to keep the upload ({why})")
    return ApiError(500, "storage_failed", f"{name}: the server could not keep the upload ({why})")


def remove_uploads(root: Path, sha256: str) -> None:
    """Delete the kept files of one content (when its paper is removed)."""
    folder = root / sha256
    if not folder.is_dir() or folder.parent != root:
        return
    for file in folder.iterdir():
        with contextlib.suppress(OSError):
            file.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
