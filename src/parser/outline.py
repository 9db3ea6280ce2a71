"""The PDF outline (bookmarks) as a strong signal: entries matched to text lines fuzzily, page by page."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

from .layout import Line
from .numbering import parse_heading


@dataclass(frozen=True)
class OutlineMatch:
    """Outline entries found in the text: line index -> (level, lines the heading spans)."""

    hits: dict[int, tuple[int, int]]
    entries: int  # outline entries that could be headings (the paper's title excluded)

    @property
    def share(self) -> float:
        return len(self.hits) / self.entries if self.entries else 0.0


def fold(text: str) -> str:
    """Lower-case letters and digits only, accents and small caps folded ("Lemaître" == "LEMAITRE")."""
    text = unicodedata.normalize("NFKD", text.replace("\u0131", "i"))
    return re.sub(r"[^a-z0-9\u4e00-\u9fff]+", "", "".join(c for c in text if not unicodedata.combining(c)).lower())


def name_key(text: str) -> str:
    """A heading's name, numbering dropped and folded: "2.1. Main Objectives" -> "mainobjectives"."""
    return fold(parse_heading(text).name)


def match_outline(lines: list[Line], toc: list[list[object]], title: str, skip: set[int]) -> OutlineMatch:
    """Find each outline entry on its page (or the next/previous one), in order; unmatched entries are dropped.

    `skip` holds line indices that cannot be headings (a printed table of contents repeats every entry).
    """
    title_key = fold(title)
    entries = []
    for entry in toc:
        if len(entry) < 3:
            continue
        level, text, page = int(str(entry[0])), str(entry[1]), int(str(entry[2]))
        key = name_key(text)
        if not key or (title_key and difflib.SequenceMatcher(None, key, title_key).ratio() > 0.9):
            continue  # outlines often list the paper's own title first
        entries.append((level, key, page))
    if not entries:
        return OutlineMatch({}, 0)
    top = min(level for level, _, _ in entries)
    # Sections nest three deep; a fourth outline level holds paragraph heads, which stay in the text.
    entries = [e for e in entries if e[0] - top < 3]
    by_page: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_page.setdefault(ln.page, []).append(i)
    keys = [name_key(ln.text) for ln in lines]
    hits: dict[int, tuple[int, int]] = {}
    last = -1
    for level, want, page in entries:
        found = None
        for p in (page, page + 1, page - 1):
            found = _find(lines, keys, by_page.get(p, []), want, skip, hits, last if p >= page else -1)
            if found is not None:
                break
        if found is not None:
            i, n = found
            hits[i] = (min(level - top, 2), n)
            last = max(last, i)
    return OutlineMatch(hits, len(entries))


def _find(
    lines: list[Line],
    keys: list[str],
    candidates: list[int],
    want: str,
    skip: set[int],
    taken: dict[int, tuple[int, int]],
    after: int,
) -> tuple[int, int] | None:
    fuzzy: tuple[int, int] | None = None
    for i in candidates:
        if i in skip or i in taken or i <= after or not keys[i]:
            continue
        got = keys[i]
        for n in range(1, 4):  # a heading may wrap over up to three lines
            if got == want:
                return i, n
            if fuzzy is None and len(want) >= 8 and difflib.SequenceMatcher(None, got, want).ratio() >= 0.88:
                fuzzy = (i, n)
            j = i + n
            if j >= len(lines) or lines[j].page != lines[i].page or not want.startswith(got):
                break
            got += fold(lines[j].text)
    return fuzzy
