"""parse_file under limits: a PDF is read in a worker process whose memory is capped and whose pages are timed.

A hostile PDF (a page of millions of text operators, a loop of forms, a crash in MuPDF) fails as one ParseError
naming the file, the page and the limit, and the process that asked (the CLI, the server) neither grows nor stops
answering: MuPDF holds the GIL while it reads a page, so in-process parsing would freeze every other thread. The
worker stays up between files; Markdown and text files are read in-process (their size is the bound).
"""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError
from ..isolation import Cancelled, Crashed, OverMemory, OverTime, Workers
from .files import PDF_SUFFIXES, parse_file
from .markdown import MAX_TEXT_BYTES
from .models import Paper
from .page_cost import MAX_PAGE_GLYPHS, MAX_PAGE_PATHS
from .pdf import MAX_PAGES


@dataclass(frozen=True)
class ParseLimits:
    """What one file may cost to parse (the `parsing` settings)."""

    max_pages: int = MAX_PAGES
    max_text_bytes: int = MAX_TEXT_BYTES
    max_page_glyphs: int = MAX_PAGE_GLYPHS
    max_page_paths: int = MAX_PAGE_PATHS
    memory_mb: int = 2048
    page_seconds: float = 60.0
    isolate: bool = True


_POOLS: dict[int, Workers] = {}
_POOLS_LOCK = threading.Lock()


def _workers(memory_mb: int) -> Workers:
    """The parsing worker of this memory limit, started on first use and kept for the process's life."""
    with _POOLS_LOCK:
        pool = _POOLS.get(memory_mb)
        if pool is None:
            # PyMuPDF imports its optional layout analyser and pymupdf4llm, and with them ONNX Runtime, whose thread
            # pool kills the process (exit 127, not an error) when an allocation fails under the memory cap. The
            # parser uses neither.
            pool = _POOLS[memory_mb] = Workers(
                "parser",
                1,
                memory_mb=memory_mb,
                preload=("pymupdf", "paperscope.parser.files"),
                block=("pymupdf.layout", "pymupdf4llm"),
            )
        return pool


@atexit.register
def close_workers() -> None:
    """Stop the parsing workers (at exit; tests call it to start afresh)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.close()


def parse_bounded(
    path: str | Path,
    limits: ParseLimits,
    *,
    title: str | None = None,
    on_step: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Paper:
    """`parse_file(path)` within `limits` (see the module docstring); `on_step` sees each page as it is read.

    ParseError names the file, the page and the limit it went past."""
    path = Path(path)
    read = functools.partial(
        parse_file,
        path,
        title=title,
        max_pages=limits.max_pages,
        max_text_bytes=limits.max_text_bytes,
        max_page_glyphs=limits.max_page_glyphs,
        max_page_paths=limits.max_page_paths,
    )
    if not limits.isolate or path.suffix.lower() not in PDF_SUFFIXES:
        return read()
    try:
        return _workers(limits.memory_mb).call(read, step_seconds=limits.page_seconds, on_step=on_step, cancel=cancel)
    except OverMemory as exc:
        raise ParseError(path, f"{exc} (parsing.max_memory_mb); not read") from exc
    except OverTime as exc:
        raise ParseError(path, f"{exc} (parsing.page_seconds); not read") from exc
    except Crashed as exc:
        raise ParseError(path, f"the PDF reader crashed on it ({exc}); not read") from exc
    except Cancelled as exc:
        raise ParseError(path, f"{exc}") from exc
