"""parse_markdown: Markdown (or plain text) -> Paper. `#`/`##` headings become sections.

A fenced code block (``` or ~~~) is one paragraph that keeps its lines and indentation, written as
"```lang\n...\n```": its `#` comments are not headings and the `code` chunker can cut it by class and function.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ParseError
from .captions import CAPTION
from .metadata import year_from
from .models import Paper
from .structure import Heading, Item, Text, assemble
from .text import normalize

#: Largest file read (bytes): the whole text is held in memory several times over while it is parsed.
MAX_TEXT_BYTES = 20_000_000
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)
_FENCE = re.compile(r"^(`{3,}(?=[^`]*$)|~{3,})\s*([^`\s]*)")  # "```x```" on one line is inline code


def parse_markdown(source: str | Path, *, title: str | None = None, max_bytes: int = MAX_TEXT_BYTES) -> Paper:
    """Parse Markdown given as a path or as the text itself.

    A single leading `#` heading is the title and `##` the top-level sections;
    otherwise the shallowest heading depth is the top level. YAML front matter may
    give title, authors, year, venue and arxiv. A file over `max_bytes` is refused.
    """
    path: Path | None = None
    if isinstance(source, Path) or (len(source) < 4096 and "\n" not in source and Path(source).is_file()):
        path = Path(source)
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise ParseError(path, f"cannot read: {exc.strerror or exc}") from exc
        if size > max_bytes:
            raise ParseError(
                path,
                f"too large for a text file ({size:,} bytes > {max_bytes:,}; "
                "the limit is PAPERSCOPE_PARSING__MAX_TEXT_BYTES)",
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParseError(path, f"cannot read as UTF-8 text: {exc}") from exc
    else:
        text = str(source)
    name = path if path is not None else Path("<text>")
    if not text.strip():
        raise ParseError(name, "empty file")

    meta: dict[str, Any] = {}
    if m := _FRONT.match(text):
        try:
            loaded = yaml.safe_load(m.group(1))
        except yaml.YAMLError as exc:
            raise ParseError(name, f"invalid YAML front matter: {exc}") from exc
        meta = loaded if isinstance(loaded, dict) else {}
        text = text[m.end() :]

    blocks = _blocks(text)
    headings = [(depth, t) for kind, depth, t in blocks if kind == "heading"]
    md_title: str | None = None
    if headings and headings[0][0] == 1 and sum(1 for d, _ in headings if d == 1) == 1:
        md_title = headings[0][1]
        blocks = [b for b in blocks if not (b[0] == "heading" and b[1] == 1)]
        headings = headings[1:]
    top = min((d for d, _ in headings), default=1)

    items: list[Item] = []
    for kind, depth, body in blocks:
        if kind == "heading":
            items.append(Heading(body, 1, depth - top))
        else:
            items.append(Text(body, 1, 1, "caption" if kind == "caption" else "body"))
    front_text = " ".join(str(meta.get(k, "")) for k in ("venue", "arxiv", "year"))
    if meta.get("arxiv"):
        front_text += f" arXiv:{meta['arxiv']}"
    year = meta.get("year") if isinstance(meta.get("year"), int) else year_from(front_text, None)
    authors = meta.get("authors") or []
    if isinstance(authors, str):
        authors = [a.strip() for a in re.split(r",|;| and ", authors) if a.strip()]
    paper_title = title or str(meta.get("title") or md_title or (path.stem if path else "Untitled"))
    return assemble(
        items,
        title=normalize(paper_title),
        authors=[str(a) for a in authors],
        year=year,
        pages=1,
        source=str(path) if path else "",
    )


def _blocks(text: str) -> list[tuple[str, int, str]]:
    """(kind, heading depth, text) for each heading, paragraph and caption; tables join captions."""
    out: list[tuple[str, int, str]] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            joined = normalize(re.sub(r"\*\*(.+?)\*\*", r"\1", " ".join(para)))
            out.append(("caption" if CAPTION.match(joined) else "body", 0, joined))
            para.clear()

    fence: re.Match[str] | None = None  # the opening fence of the code block being read
    indent = 0
    code: list[str] = []

    def close_code() -> None:
        assert fence is not None
        lines = "\n".join(code).strip("\n")
        if lines.strip():
            out.append(("body", 0, f"```{fence.group(2)}\n{lines}\n```"))
        code.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if fence is not None:
            marker = fence.group(1)
            if line.startswith(marker) and not line.strip(marker[0]):  # as long a run of the same character
                close_code()
                fence = None
            else:
                # Drop the fence's own indentation, keep the code's.
                cut = min(indent, len(raw) - len(raw.lstrip(" ")))
                code.append(raw[cut:].rstrip())
            continue
        if m := _FENCE.match(line):
            flush()
            fence, indent = m, len(raw) - len(raw.lstrip(" "))
        elif m := _HEADING.match(line):
            flush()
            out.append(("heading", len(m.group(1)), normalize(m.group(2))))
        elif line.startswith("|") and (para or (out and out[-1][0] == "caption")):
            cells = " ".join(c.strip() for c in line.strip("|").split("|") if c.strip())
            if para:
                flush()
            kind, depth, prev = out[-1]
            out[-1] = (kind, depth, f"{prev} {cells}")
        elif not line:
            flush()
        else:
            para.append(line)
    flush()
    if fence is not None:  # a block left open runs to the end of the file, as in CommonMark
        close_code()
    return out
