"""Section numbering: "3", "3.2", "A.1", "IV.", "Appendix B" -> number, depth, name."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ROMAN = r"(?:X{0,3})(?:IX|IV|V?I{0,3})"

# Order matters: the most specific shapes first.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "Appendix B: Proofs", not "Appendix information" (a letter, then no more letters)
    (
        "appendix",
        re.compile(r"^(?:appendix|appendices)\s+([A-Z](?:\.\d+)*)(?![^\W\d_])\s*[:.\-\u2013\u2014]?\s*(.*)$", re.I),
    ),
    ("appendix_bare", re.compile(r"^(appendix|appendices)(?:\s*[:.\-\u2013\u2014]\s*(.*))?$", re.I)),
    ("arabic", re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?(?=\s|[A-Z])\s*(.+)$")),
    ("letter_dotted", re.compile(r"^([A-Z](?:\.\d{1,2}){1,3})\.?\s+(.+)$")),
    ("roman", re.compile(rf"^((?=[IVX])({_ROMAN}))\.\s+(.+)$")),
    ("letter", re.compile(r"^([A-Z])\.?\s+(.+)$")),
    # "1) Subsubsection" (IEEE), "一、引言" and "第3章" (Chinese).
    ("paren", re.compile(r"^(\d{1,2})\)\s+(.+)$")),
    ("cjk", re.compile(r"^([一二三四五六七八九十]{1,3})[、.．]\s*(.+)$")),
    ("cjk", re.compile(r"^(第[一二三四五六七八九十\d]{1,3}[章节])\s*(.+)$")),
]


@dataclass(frozen=True)
class Numbering:
    """A parsed heading: its number (or None), depth below top level, and bare name."""

    number: str | None
    depth: int
    name: str
    style: str  # arabic | roman | letter | appendix | paren | cjk | none


def parse_heading(text: str) -> Numbering:
    """Split a heading into numbering and name. Depth is 0 for "3", 1 for "3.2"."""
    text = " ".join(text.split())
    for style, pattern in _PATTERNS:
        m = pattern.match(text)
        if not m:
            continue
        if style == "appendix_bare":
            return Numbering(None, 0, m.group(2) or m.group(1), "appendix")
        if style == "roman":
            return Numbering(m.group(1), 0, m.group(3), "roman")
        number, name = m.group(1), m.group(2)
        if style == "letter" and not _looks_like_name(name):
            continue
        depth = number.count(".")
        return Numbering(number, depth, name, "appendix" if style in ("appendix", "letter_dotted") else style)
    return Numbering(None, 0, text, "none")


def _looks_like_name(name: str) -> bool:
    # "A Simple Baseline" is a title starting with the article, not appendix A: require
    # the word after a bare letter to be capitalised and the letter to be followed by
    # more than one word or a capitalised word.
    return bool(name) and name[0].isupper()
