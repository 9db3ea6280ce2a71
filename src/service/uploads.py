"""Uploaded files: checked at the door, kept under `<uploads>/<sha256>/<name>`.

Kept by content, so the same bytes uploaded again land on the same path (their ingest is `unchanged`), and the
file stays where page rendering can find it later. Refused before anything is stored: a name with path parts
(`../x.pdf`, `a/b.pdf`), a kind paperscope does not read (by suffix, by declared content type: 415), bytes that
are not what the name says (a `.pdf` must start like a PDF, a text file must be UTF-8 without NUL bytes), and a
file over `service.max_upload_mb` (413), counted as it streams in (`UploadLimit` refuses an announced larger
body before reading it).
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..parser.files import PDF_SUFFIXES, SUPPORTED
from .errors import ApiError, error_body

BLOCK = 1 << 20
PDF_MAGIC = b"%PDF-"
PDF_HEADER_WINDOW = 1024  # readers accept the header anywhere in the first 1024 bytes
MULTIPART_SLACK = 64 * 1024  # bytes of a multipart body that are not the file (boundaries, other fields)
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


def too_large(limit_bytes: int) -> ApiError:
    return ApiError(
        413, "too_large", f"the file is larger than the server takes ({_mb(limit_bytes)} MB, service.max_upload_mb)"
    )


def _mb(n: int) -> str:
    return f"{n / 1_000_000:g}"


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
            shown = head[:8].decode("latin-1").encode("unicode_escape").decode("ascii")
            raise ApiError(400, "bad_file", f"{name}: not a PDF (it starts with {shown!r}, not %PDF-)")
        return
    if b"\x00" in head:
        raise ApiError(400, "bad_file", f"{name}: not a text file (it holds NUL bytes)")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a character cut at the end is fine
    except UnicodeDecodeError as exc:
        raise ApiError(400, "bad_file", f"{name}: not a UTF-8 text file (byte {exc.start})") from None


def store_upload(source: BinaryIO, name: str, root: Path, limit_bytes: int) -> Stored:
    """Copy an upload to `root/<sha256>/<name>`, checking its size and first bytes as it streams; ApiError if
    bad (nothing is kept then)."""
    incoming = root / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    tmp = incoming / uuid.uuid4().hex
    digest = hashlib.sha256()
    size = 0
    try:
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
        final = root / sha / name
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.is_file():
            tmp.unlink()
        else:
            os.replace(tmp, final)
        return Stored(final, sha, size)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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


class UploadLimit:
    """ASGI middleware: a POST to `path` with a body over `limit_bytes` (plus multipart slack) is refused with 413,
    without storing it: at once when its Content-Length says so, else as soon as it has sent that much. The rest of
    the body is read and dropped (up to DRAIN_CAP) so that the client, still sending, hears the answer."""

    def __init__(self, app: ASGIApp, path: str, limit_bytes: int) -> None:
        self.app = app
        self.path = path
        self.limit = limit_bytes + MULTIPART_SLACK
        self.file_limit = limit_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"").decode("latin-1")
        if length.isdigit() and int(length) > self.limit:
            from fastapi.responses import JSONResponse

            await _drain(receive)
            error = too_large(self.file_limit)
            response = JSONResponse(error_body(error.code, error.message), status_code=413)
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    if message.get("more_body", False):
                        await _drain(receive)
                    raise too_large(self.file_limit)
            return message

        await self.app(scope, counted, send)


DRAIN_CAP = 256 * 1024 * 1024  # bytes of a refused body read and dropped; past that the connection is closed


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a request body (up to DRAIN_CAP)."""
    budget = DRAIN_CAP
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return
