"""Render the fictional sample papers in examples/papers/*.md to PDF test fixtures.

Usage:
    python examples/render_papers.py [--out examples/pdfs] [--readme] [SLUG ...]

Each source (format: examples/FORMAT.md) becomes <out>/<slug>.pdf, drawn with PyMuPDF
primitives and the base-14 fonts only. The output is deterministic: fixed metadata dates
and no document ID, so re-rendering an unchanged source gives a byte-identical PDF.
"""

from __future__ import annotations

import argparse
import re
import sys
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pymupdf
import yaml

EXAMPLES_DIR = Path(__file__).resolve().parent
README_START = "<!-- papers:start -->"
README_END = "<!-- papers:end -->"

BODY, BOLD, ITALIC, BOLD_ITALIC, SANS = "tiro", "tibo", "tiit", "tibi", "helv"
BLACK = (0.0, 0.0, 0.0)
GRAY = (0.45, 0.45, 0.45)
EPS = 0.01

REQUIRED_FIELDS = (
    "title",
    "authors",
    "affiliations",
    "venue",
    "layout",
    "pdf_title_metadata",
    "outline",
    "line_numbers",
)
OPTIONAL_FIELDS = ("short_title", "arxiv")
LAYOUTS = ("two-column", "one-column")
TITLE_METADATA = ("real", "junk", "none")
JUNK_TITLES = ("paper.dvi", "main.tex", "untitled", "Microsoft Word - draft_v3.docx")
PRODUCER = "paperscope examples/render_papers.py (PyMuPDF, base-14 fonts)"
CREATOR = "paperscope sample paper renderer"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# Typographic characters outside Latin-1 that the base-14 fonts cannot show.
ASCII_REPLACEMENTS = MappingProxyType(
    {
        "\u2014": "--",
        "\u2013": "-",
        "\u2212": "-",
        "\u2010": "-",
        "\u2011": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2026": "...",
        "\u2009": " ",
        "\u202f": " ",
        "\u2248": "~",
        "\u2264": "<=",
        "\u2265": ">=",
        "\u2192": "->",
        "\u2190": "<-",
    }
)

HEADING_RE = re.compile(r"^(#+)\s+(\S.*)$")
CAPTION_RE = re.compile(r"^(Figure|Table)\s+([A-Z]?\d+(?:\.\d+)?):\s+\S")
LEAD_RE = re.compile(r"^\*\*(.+?)\*\*\s+(\S.*)$")
REFERENCE_RE = re.compile(r"^(\[[^\]]+\])\s+(\S.*)$")
LIST_RE = re.compile(r"^[-*+]\s")
SEPARATOR_CELL_RE = re.compile(r"^:?-{3,}:?$")
ARXIV_RE = re.compile(r"^(\d{2})(\d{2})\.(\d{4,5})(v\d+)?$")
YEAR_RE = re.compile(r"\b(?:19|20)\d\d\b")
WORD_RE = re.compile(r"\w+(?:['.-]\w+)*")
HYPHENATABLE_RE = re.compile(r"^([(\[\"']*)([A-Za-z]+)([.,;:!?)\]\"']*)$")

VOWELS = frozenset("aeiouy")
UNSPLITTABLE_PAIRS = frozenset(
    {
        "th",
        "ch",
        "sh",
        "ph",
        "wh",
        "gh",
        "ck",
        "qu",
        "bl",
        "cl",
        "fl",
        "gl",
        "pl",
        "br",
        "cr",
        "dr",
        "fr",
        "gr",
        "pr",
        "tr",
        "sw",
    }
)
SUFFIXES = ("tion", "sion", "ment", "ness", "able", "ible", "ities", "ity", "ings", "ing")
SILENT_E_TAIL_RE = re.compile(r"^[^aeiouy]{1,2}e(?:s|d|r|rs|ness|ly)?$")  # not "baseli-nes"
PREFIXES = ("counter", "inter", "multi", "super", "trans", "under", "over")
FIGURE_KEYWORDS = (
    (
        "diagram",
        (
            "overview",
            "architecture",
            "pipeline",
            "workflow",
            "diagram",
            "illustration",
            "framework",
            "example of",
            "schematic",
            "routing",
            "inference in",
            "indexing time",
        ),
    ),
    (
        "curves",
        (
            "function of",
            "curve",
            "trade-off",
            "tradeoff",
            "versus",
            " vs",
            "scaling",
            "over training",
            "as the number",
            "latency",
        ),
    ),
    (
        "bars",
        ("breakdown", "per dataset", "per-dataset", "distribution", "histogram", "comparison", "error analysis", "bar"),
    ),
)
MIN_HYPHEN_WORD = 8
MIN_HYPHEN_PART = 3
HYPHEN_MIN_ROOM = 16.0  # pt; only hyphenate when the line would otherwise end this short


class PaperError(Exception):
    """A problem in a paper source; the message does not include the file name."""


@dataclass(frozen=True)
class Meta:
    """Validated front matter."""

    title: str
    short_title: str
    authors: tuple[str, ...]
    affiliations: tuple[str, ...]
    venue: str
    year: int
    arxiv: str | None
    layout: str
    pdf_title_metadata: str
    outline: bool
    line_numbers: bool


@dataclass(frozen=True)
class Heading:
    """A section heading; level 1 = ``##``, 2 = ``###``, 3 = ``####``."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class Paragraph:
    """A prose paragraph, optionally with a bold run-in lead."""

    text: str
    lead: str
    abstract: bool
    line: int


@dataclass(frozen=True)
class Figure:
    """A figure caption; a placeholder figure is drawn above it."""

    label: str
    caption: str
    line: int


@dataclass(frozen=True)
class Table:
    """A table caption with its rows; the first row is the header."""

    label: str
    caption: str
    rows: tuple[tuple[str, ...], ...]
    line: int


@dataclass(frozen=True)
class Reference:
    """One bibliography entry; ``label`` is e.g. "[3]" or "" when unlabeled."""

    label: str
    text: str
    line: int


Block = Heading | Paragraph | Figure | Table | Reference


@dataclass(frozen=True)
class Paper:
    """A parsed and validated paper source."""

    slug: str
    meta: Meta
    blocks: tuple[Block, ...]
    words: int


@dataclass(frozen=True)
class Segment:
    """A run of text in one font."""

    text: str
    font: str


Line = tuple[Segment, ...]


@dataclass(frozen=True)
class Style:
    """Page geometry and type sizes of one layout."""

    columns: int
    page_width: float
    page_height: float
    margin_x: float
    margin_top: float
    margin_bottom: float
    gutter: float
    body_size: float
    leading: float
    par_skip: float
    par_indent: float
    title_size: float
    title_leading: float
    abstract_inset: float
    figure_height: float
    figure_max_width: float

    @property
    def column_width(self) -> float:
        """Width of one text column."""
        text_width = self.page_width - 2 * self.margin_x
        return (text_width - (self.columns - 1) * self.gutter) / self.columns

    @property
    def bottom(self) -> float:
        """Lowest y a text line may reach."""
        return self.page_height - self.margin_bottom


TWO_COLUMN = Style(
    columns=2,
    page_width=612,
    page_height=792,
    margin_x=60,
    margin_top=78,
    margin_bottom=78,
    gutter=20,
    body_size=10,
    leading=12.4,
    par_skip=0,
    par_indent=11,
    title_size=16,
    title_leading=19,
    abstract_inset=14,
    figure_height=138,
    figure_max_width=230,
)
ONE_COLUMN = Style(
    columns=1,
    page_width=612,
    page_height=792,
    margin_x=96,
    margin_top=78,
    margin_bottom=78,
    gutter=0,
    body_size=10.5,
    leading=13.2,
    par_skip=5.5,
    par_indent=0,
    title_size=17,
    title_leading=20.5,
    abstract_inset=36,
    figure_height=160,
    figure_max_width=330,
)

CAPTION_SIZE, CAPTION_LEADING = 9.0, 10.8
REFERENCE_SIZE, REFERENCE_LEADING = 9.0, 10.6
COLUMN_TABLE_SIZES = (9.0, 8.5, 8.0)
WIDE_TABLE_SIZES = (9.0, 8.5, 8.0, 7.5, 7.0)
TABLE_PAD = 4.0
HEADER_SIZE = 8.5
PAGE_NUMBER_SIZE = 9.0
LINE_NUMBER_SIZE = 6.5
FLOAT_SKIP = 8.0
DEFER_MIN_GAP = 0.15  # defer a float that does not fit if this much of a column stays empty


# --------------------------------------------------------------------------- parsing


def load_paper(path: Path) -> tuple[Paper, list[str]]:
    """Parse and validate one source file; returns the paper and warnings."""
    text, warnings = to_latin1(path.read_text(encoding="utf-8"))
    data, body, first_line = split_front_matter(text)
    meta, meta_warnings = parse_meta(data)
    title, blocks = parse_body(body, first_line)
    if title != meta.title:
        raise PaperError(f"'# {title}' does not match the front matter title '{meta.title}'")
    check_structure(blocks)
    words = len(WORD_RE.findall("\n".join(body)))
    return Paper(path.stem, meta, tuple(blocks), words), warnings + meta_warnings


def to_latin1(text: str) -> tuple[str, list[str]]:
    """Replace typographic characters the base-14 fonts lack; reject other ones."""
    replaced: dict[str, int] = {}
    out_lines = []
    for number, line in enumerate(text.splitlines(), 1):
        chars = []
        for char in line.replace("\t", " ").replace("\u00a0", " "):
            if ord(char) < 256:
                chars.append(char)
            elif char in ASCII_REPLACEMENTS:
                chars.append(ASCII_REPLACEMENTS[char])
                replaced[char] = replaced.get(char, 0) + 1
            else:
                raise PaperError(
                    f"line {number}: character {char!r} (U+{ord(char):04X}) cannot be drawn "
                    "with the base-14 fonts; write it in ASCII"
                )
        out_lines.append("".join(chars))
    warnings = []
    if replaced:
        listing = ", ".join(f"{c!r} x{n} -> {ASCII_REPLACEMENTS[c]!r}" for c, n in replaced.items())
        warnings.append(f"replaced non-Latin-1 characters ({listing}); prefer ASCII in the source")
    return "\n".join(out_lines), warnings


def split_front_matter(text: str) -> tuple[dict[str, Any], list[str], int]:
    """Split off the YAML front matter; returns (data, body lines, first body line no)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise PaperError("missing YAML front matter (the first line must be '---')")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise PaperError("the front matter is not closed by a '---' line")
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise PaperError(f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise PaperError("front matter must be a YAML mapping")
    return data, lines[end + 1 :], end + 2


def parse_meta(data: dict[str, Any]) -> tuple[Meta, list[str]]:
    """Validate the front matter fields."""
    missing = [name for name in REQUIRED_FIELDS if data.get(name) is None]
    if missing:
        raise PaperError(f"front matter field(s) missing or empty: {', '.join(missing)}")
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    warnings = [f"ignoring unknown front matter field(s): {', '.join(unknown)}"] if unknown else []
    title = field_str(data, "title")
    venue = field_str(data, "venue")
    year = YEAR_RE.search(venue)
    if year is None:
        raise PaperError(f"venue '{venue}' must contain a year, e.g. 'NeurIPS 2023'")
    short_title = field_str(data, "short_title") if data.get("short_title") else shorten(title)
    meta = Meta(
        title=title,
        short_title=short_title,
        authors=field_str_list(data, "authors"),
        affiliations=field_str_list(data, "affiliations"),
        venue=venue,
        year=int(year.group()),
        arxiv=field_arxiv(data),
        layout=field_choice(data, "layout", LAYOUTS),
        pdf_title_metadata=field_choice(data, "pdf_title_metadata", TITLE_METADATA),
        outline=field_bool(data, "outline"),
        line_numbers=field_bool(data, "line_numbers"),
    )
    return meta, warnings


def field_str(data: dict[str, Any], name: str) -> str:
    """A non-empty string field."""
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise PaperError(f"front matter field '{name}' must be a non-empty string")
    return " ".join(value.split())


def field_str_list(data: dict[str, Any], name: str) -> tuple[str, ...]:
    """A non-empty list of non-empty strings."""
    value = data.get(name)
    if not isinstance(value, list) or not value:
        raise PaperError(f"front matter field '{name}' must be a non-empty list of strings")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise PaperError(f"front matter field '{name}' must only hold non-empty strings")
    return tuple(" ".join(item.split()) for item in value)


def field_bool(data: dict[str, Any], name: str) -> bool:
    """A true/false field."""
    value = data.get(name)
    if not isinstance(value, bool):
        raise PaperError(f"front matter field '{name}' must be true or false, not {value!r}")
    return value


def field_choice(data: dict[str, Any], name: str, choices: Sequence[str]) -> str:
    """A string field with a fixed set of values."""
    value = data.get(name)
    if value not in choices:
        raise PaperError(f"front matter field '{name}' must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def field_arxiv(data: dict[str, Any]) -> str | None:
    """The optional arXiv identifier, e.g. "2309.04417v2"."""
    value = data.get("arxiv")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not ARXIV_RE.match(value):
        raise PaperError(f"front matter field 'arxiv' must be a quoted string like \"2309.04417v2\", not {value!r}")
    return value


def shorten(title: str) -> str:
    """A running-header title: the part before a colon, else the first words."""
    head = title.split(":", 1)[0].strip()
    words = head.split()
    return head if len(words) <= 8 else " ".join(words[:8]) + " ..."


def iter_chunks(lines: Sequence[str], first_line: int) -> Iterator[list[tuple[int, str]]]:
    """Group body lines into blank-line separated chunks; a heading is its own chunk."""
    chunk: list[tuple[int, str]] = []
    for number, raw in enumerate(lines, first_line):
        line = raw.strip()
        if line.startswith("<!--") and line.endswith("-->"):
            continue
        if not line or HEADING_RE.match(line):
            if chunk:
                yield chunk
                chunk = []
            if line:
                yield [(number, line)]
        else:
            chunk.append((number, line))
    if chunk:
        yield chunk


def parse_body(lines: Sequence[str], first_line: int) -> tuple[str, list[Block]]:
    """Parse the Markdown body into the title and a list of blocks."""
    titles: list[tuple[int, str]] = []
    blocks: list[Block] = []
    section = ""
    for chunk in iter_chunks(lines, first_line):
        number, first = chunk[0]
        heading = HEADING_RE.match(first)
        if heading is None and not titles:
            raise PaperError(f"line {number}: text before the '# Title' line")
        if heading is None and section.lower() == "references":
            blocks.extend(parse_references(chunk))
        elif heading is None:
            blocks.append(parse_chunk(chunk, abstract=section.lower() == "abstract"))
        elif len(heading.group(1)) == 1:
            titles.append((number, heading.group(2).strip()))
        elif not titles:
            raise PaperError(f"line {number}: heading before the '# Title' line")
        elif len(heading.group(1)) > 4:
            raise PaperError(f"line {number}: '{heading.group(1)}' headings are not supported (use ##, ### or ####)")
        else:
            level = len(heading.group(1)) - 1
            blocks.append(Heading(level, heading.group(2).strip(), number))
            section = heading.group(2).strip() if level == 1 else section
    if not titles:
        raise PaperError("no '# Title' line")
    if len(titles) > 1:
        where = ", ".join(str(number) for number, _ in titles)
        raise PaperError(f"several '# ' title lines (lines {where}); use exactly one")
    return titles[0][1], blocks


def parse_chunk(chunk: list[tuple[int, str]], abstract: bool) -> Block:
    """Parse a paragraph, a figure caption or a table (caption plus |-rows)."""
    number, first = chunk[0]
    if first.startswith("|"):
        raise PaperError(
            f"line {number}: table row outside a table (|-rows must directly "
            "follow a 'Table N:' caption line, without a blank line)"
        )
    text_lines: list[str] = []
    rows: list[tuple[int, str]] = []
    for line_number, line in chunk:
        if line.startswith("|"):
            rows.append((line_number, line))
        elif rows:
            raise PaperError(f"line {line_number}: text directly after table rows (separate it with a blank line)")
        else:
            text_lines.append(line)
    text = " ".join(text_lines)
    caption = CAPTION_RE.match(text)
    if caption and caption.group(1) == "Table":
        if not rows:
            raise PaperError(f"line {number}: 'Table {caption.group(2)}:' caption is not followed by |-rows")
        return Table(caption.group(2), text, parse_rows(rows), number)
    if rows:
        raise PaperError(
            f"line {rows[0][0]}: table row outside a table (only a 'Table N:' caption may be followed by |-rows)"
        )
    if caption:
        return Figure(caption.group(2), text, number)
    return parse_paragraph(text, number, abstract)


def parse_rows(rows: list[tuple[int, str]]) -> tuple[tuple[str, ...], ...]:
    """Split |-rows into cells, dropping Markdown separator rows like |---|---|."""
    table: list[tuple[str, ...]] = []
    for number, row in rows:
        body = row.strip()[1:].removesuffix("|")
        cells = tuple(cell.strip() for cell in body.split("|"))
        if all(SEPARATOR_CELL_RE.match(cell) for cell in cells):
            continue
        if table and len(cells) != len(table[0]):
            raise PaperError(f"line {number}: table row has {len(cells)} cells but the header has {len(table[0])}")
        table.append(cells)
    if len(table) < 2:
        raise PaperError(f"line {rows[0][0]}: a table needs a header row and at least one row")
    return tuple(table)


def parse_paragraph(text: str, number: int, abstract: bool) -> Paragraph:
    """Parse a prose paragraph with an optional **Bold run-in.** lead."""
    if LIST_RE.match(text):
        raise PaperError(f"line {number}: Markdown lists are not supported; write prose")
    lead_match = LEAD_RE.match(text)
    lead, rest = (lead_match.group(1), lead_match.group(2)) if lead_match else ("", text)
    if "**" in rest or "`" in rest:
        raise PaperError(
            f"line {number}: inline Markdown is not supported (only a "
            "**Bold run-in.** at the very start of a paragraph)"
        )
    return Paragraph(rest, lead, abstract, number)


def parse_references(chunk: list[tuple[int, str]]) -> list[Reference]:
    """Parse bibliography lines; a line starting with "[n]" starts a new entry."""
    entries: list[Reference] = []
    for index, (number, line) in enumerate(chunk):
        match = REFERENCE_RE.match(line)
        if match:
            entries.append(Reference(match.group(1), match.group(2), number))
        elif index == 0 or not entries:
            entries.append(Reference("", line, number))
        else:
            last = entries[-1]
            entries[-1] = Reference(last.label, f"{last.text} {line}", last.line)
    return entries


def check_structure(blocks: Sequence[Block]) -> None:
    """Check section order, heading levels and caption labels."""
    if not blocks or not isinstance(blocks[0], Heading) or blocks[0].text != "Abstract":
        raise PaperError("the first section after the title must be '## Abstract'")
    if len(blocks) < 2 or not isinstance(blocks[1], Paragraph):
        raise PaperError("the Abstract section needs a paragraph")
    previous_level = 0
    labels: set[str] = set()
    for block in blocks:
        if isinstance(block, Heading):
            if block.level > previous_level + 1:
                raise PaperError(
                    f"line {block.line}: heading '{block.text}' skips a level "
                    f"({'#' * (block.level + 1)} after {'#' * (previous_level + 1)})"
                )
            previous_level = block.level
        elif isinstance(block, Figure | Table):
            label = f"{type(block).__name__} {block.label}"
            if label in labels:
                raise PaperError(f"line {block.line}: '{label}:' appears twice")
            labels.add(label)


# --------------------------------------------------------------------------- text layout


def text_width(text: str, font: str, size: float) -> float:
    """Advance width of text in a base-14 font."""
    return float(pymupdf.get_text_length(text, fontname=font, fontsize=size))


def words_of(text: str, font: str) -> list[Segment]:
    """Split text into one segment per word."""
    return [Segment(word, font) for word in text.split()]


def hyphen_points(word: str) -> list[int]:
    """Positions where a plain word may be hyphenated (prefix length), ascending."""
    w = word.lower()
    n = len(w)
    points: set[int] = set()
    blocked: set[int] = set()
    for suffix in SUFFIXES:
        if w.endswith(suffix) and n - len(suffix) >= MIN_HYPHEN_PART:
            cut = n - len(suffix)
            doubled = w[cut - 1] == w[cut - 2] or w[cut - 1] == "l"
            if suffix.startswith("ing") and doubled and w[cut - 2] not in VOWELS:
                cut -= 1  # run-ning, hand-ling; not runn-ing, handl-ing
            points.add(cut)
            blocked.update(range(cut - 1, n))
            blocked.discard(cut)
            break
    for prefix in PREFIXES:
        if w.startswith(prefix) and n - len(prefix) >= MIN_HYPHEN_PART:
            points.add(len(prefix))
            blocked.update(range(1, len(prefix)))
            break
    for i in range(MIN_HYPHEN_PART, n - MIN_HYPHEN_PART + 1):
        before, at, after = w[i - 1], w[i], w[i + 1] if i + 1 < n else ""
        vowel_consonant_vowel = before in VOWELS and at not in VOWELS and after in VOWELS
        consonant_pair = (
            before not in VOWELS
            and at not in VOWELS
            and after in VOWELS
            and w[i - 1 : i + 1] not in UNSPLITTABLE_PAIRS
            and any(c in VOWELS for c in w[: i - 1])
        )
        if (vowel_consonant_vowel or consonant_pair) and at != "x":
            points.add(i)
    return sorted(point for point in points if point not in blocked and not SILENT_E_TAIL_RE.match(w[point:]))


def hyphenate(word: Segment, size: float, room: float) -> tuple[Segment, Segment] | None:
    """Split a long plain word so that "head-" fits into room; None if impossible."""
    match = HYPHENATABLE_RE.match(word.text)
    if match is None:
        return None
    lead, core, trail = match.groups()
    if len(core) < MIN_HYPHEN_WORD or not core[1:].islower():
        return None
    for point in reversed(hyphen_points(core)):
        head = f"{lead}{core[:point]}-"
        if text_width(head, word.font, size) <= room:
            return Segment(head, word.font), Segment(core[point:] + trail, word.font)
    return None


def force_split(word: Segment, size: float, room: float) -> tuple[Segment, Segment]:
    """Split a word wider than a whole line at the last character that fits."""
    cut = 1
    while cut < len(word.text) and text_width(word.text[: cut + 1], word.font, size) <= room:
        cut += 1
    return Segment(word.text[:cut], word.font), Segment(word.text[cut:], word.font)


def break_lines(
    words: Sequence[Segment],
    size: float,
    width: float,
    *,
    first_width: float | None = None,
    hyphens: bool = True,
) -> list[Line]:
    """Greedy left-aligned line breaking with hyphenation of long words."""
    lines: list[Line] = []
    current: list[Segment] = []
    used = 0.0
    pending = deque(words)
    while pending:
        limit = first_width if first_width is not None and not lines else width
        word = pending.popleft()
        space = text_width(" ", word.font, size) if current else 0.0
        needed = text_width(word.text, word.font, size)
        if used + space + needed <= limit + EPS:
            current.append(word)
            used += space + needed
            continue
        if not current:
            head, tail = force_split(word, size, limit)
            lines.append((head,))
            pending.appendleft(tail)
            continue
        room = limit - used - space
        split = hyphenate(word, size, room) if hyphens and room >= HYPHEN_MIN_ROOM else None
        if split:
            current.append(split[0])
            pending.appendleft(split[1])
        else:
            pending.appendleft(word)
        lines.append(tuple(current))
        current, used = [], 0.0
    if current:
        lines.append(tuple(current))
    return lines


def runs(line: Line) -> list[Segment]:
    """Merge a line's words into runs of one font; inner spaces stay inside the runs."""
    merged: list[Segment] = []
    for index, word in enumerate(line):
        text = word.text if index == len(line) - 1 else word.text + " "
        if merged and merged[-1].font == word.font:
            merged[-1] = Segment(merged[-1].text + text, word.font)
        else:
            merged.append(Segment(text, word.font))
    return merged


def line_width(line: Line, size: float) -> float:
    """Width of a laid-out line."""
    return sum(text_width(run.text, run.font, size) for run in runs(line))


def baseline_of(top: float, size: float, leading: float) -> float:
    """Baseline of a line whose slot starts at top."""
    return top + (leading - size) / 2 + 0.8 * size


def write_line(
    page: pymupdf.Page, line: Line, x: float, baseline: float, size: float, color: tuple[float, float, float] = BLACK
) -> None:
    """Draw a laid-out line starting at x."""
    for run in runs(line):
        page.insert_text((x, baseline), run.text, fontname=run.font, fontsize=size, color=color)
        x += text_width(run.text, run.font, size)


def pack_names(names: Sequence[str], size: float, width: float) -> list[Line]:
    """Break an author list into lines without splitting a name."""
    lines: list[Line] = []
    current = ""
    for index, name in enumerate(names):
        item = name + ("," if index < len(names) - 1 else "")
        candidate = f"{current}   {item}" if current else item
        if current and text_width(candidate, BODY, size) > width:
            lines.append((Segment(current, BODY),))
            candidate = item
        current = candidate
    lines.append((Segment(current, BODY),))
    return lines


# --------------------------------------------------------------------------- figures and tables


def stable_hash(text: str) -> int:
    """A hash that is the same on every run (unlike hash())."""
    return zlib.crc32(text.encode("utf-8"))


def fake_values(seed: int, count: int, salt: str) -> list[float]:
    """Deterministic pseudo-random values in [0.25, 0.85]."""
    return [0.25 + 0.6 * (stable_hash(f"{seed}:{salt}:{i}") % 1000) / 1000 for i in range(count)]


def figure_kind(caption: str, seed: int) -> str:
    """Pick "diagram", "curves" or "bars" from caption keywords, else from the seed."""
    text = caption.lower()
    for kind, keywords in FIGURE_KEYWORDS:
        if any(keyword in text for keyword in keywords):
            return kind
    return ("bars", "curves", "diagram")[seed % 3]


def draw_figure(page: pymupdf.Page, rect: pymupdf.Rect, caption: str, seed: int) -> None:
    """Draw a placeholder figure: a frame with a bar chart, line plot or block diagram."""
    shape = page.new_shape()
    shape.draw_rect(rect)
    shape.finish(color=(0.55, 0.55, 0.55), width=0.5)
    shape.commit()
    kind = figure_kind(caption, seed)
    if kind == "diagram":
        draw_diagram(page, rect, seed)
        return
    plot = pymupdf.Rect(rect.x0 + 28, rect.y0 + 12, rect.x1 - 10, rect.y1 - 20)
    if kind == "bars":
        draw_axes(page, plot, ["A", "B", "C", "D", "E"])
        draw_bars(page, plot, seed)
    else:
        draw_axes(page, plot, ["1", "2", "4", "8", "16"])
        draw_curves(page, plot, seed)


def draw_axes(page: pymupdf.Page, plot: pymupdf.Rect, x_labels: Sequence[str]) -> None:
    """Axes with y ticks 0.2-0.8 and evenly spaced x tick labels in 6pt."""
    shape = page.new_shape()
    shape.draw_line(plot.bl, plot.tl)
    shape.draw_line(plot.bl, plot.br)
    for tick in (0.2, 0.4, 0.6, 0.8):
        y = plot.y1 - tick * plot.height
        shape.draw_line((plot.x0 - 2, y), (plot.x0, y))
    shape.finish(color=BLACK, width=0.5)
    shape.commit()
    for tick in (0.2, 0.4, 0.6, 0.8):
        y = plot.y1 - tick * plot.height
        label = f"{tick:.1f}"
        page.insert_text((plot.x0 - 4 - text_width(label, SANS, 6), y + 2), label, fontname=SANS, fontsize=6)
    step = plot.width / len(x_labels)
    for index, label in enumerate(x_labels):
        x = plot.x0 + step * (index + 0.5) - text_width(label, SANS, 6) / 2
        page.insert_text((x, plot.y1 + 8), label, fontname=SANS, fontsize=6)


def draw_bars(page: pymupdf.Page, plot: pymupdf.Rect, seed: int) -> None:
    """Grouped bars for two systems with a small legend."""
    colors = ((0.25, 0.45, 0.72), (0.88, 0.56, 0.24))
    step = plot.width / 5
    bar = step * 0.32
    shape = page.new_shape()
    for series, color in enumerate(colors):
        for index, value in enumerate(fake_values(seed, 5, f"bar{series}")):
            x = plot.x0 + step * index + step * 0.18 + series * bar
            shape.draw_rect(pymupdf.Rect(x, plot.y1 - value * plot.height, x + bar, plot.y1))
            shape.finish(color=color, fill=color, width=0.3)
    shape.commit()
    draw_legend(page, plot, colors, ("ours", "baseline"))


def draw_curves(page: pymupdf.Page, plot: pymupdf.Rect, seed: int) -> None:
    """Two rising curves with markers and a small legend."""
    colors = ((0.80, 0.22, 0.20), (0.20, 0.50, 0.30))
    step = plot.width / 5
    shape = page.new_shape()
    for series, color in enumerate(colors):
        values = sorted(fake_values(seed, 5, f"curve{series}"))
        points = [pymupdf.Point(plot.x0 + step * (i + 0.5), plot.y1 - v * plot.height) for i, v in enumerate(values)]
        shape.draw_polyline(points)
        shape.finish(color=color, width=0.9)
        for point in points:
            shape.draw_circle(point, 1.6)
            shape.finish(color=color, fill=color, width=0.3)
    shape.commit()
    draw_legend(page, plot, colors, ("ours", "baseline"))


def draw_legend(
    page: pymupdf.Page, plot: pymupdf.Rect, colors: Sequence[tuple[float, float, float]], names: Sequence[str]
) -> None:
    """A two-entry legend in the top-left corner of the plot."""
    shape = page.new_shape()
    for index, color in enumerate(colors):
        y = plot.y0 + 4 + index * 8
        shape.draw_rect(pymupdf.Rect(plot.x0 + 6, y, plot.x0 + 12, y + 5))
        shape.finish(color=color, fill=color, width=0.3)
    shape.commit()
    for index, name in enumerate(names):
        page.insert_text((plot.x0 + 15, plot.y0 + 9 + index * 8), name, fontname=SANS, fontsize=6)


def draw_diagram(page: pymupdf.Page, rect: pymupdf.Rect, seed: int) -> None:
    """A pipeline diagram: four labelled boxes joined by arrows."""
    names = ("Query", "Encoder", "Scorer", "Top-k") if seed % 2 else ("Input", "Retriever", "Reader", "Answer")
    gap = 12.0
    box_w = (rect.width - 20 - 3 * gap) / 4
    box_h = min(34.0, rect.height / 3)
    y0 = rect.y0 + (rect.height - box_h) / 2
    shape = page.new_shape()
    for index in range(4):
        x0 = rect.x0 + 10 + index * (box_w + gap)
        shape.draw_rect(pymupdf.Rect(x0, y0, x0 + box_w, y0 + box_h), radius=0.15)
        shape.finish(color=(0.2, 0.3, 0.5), fill=(0.86, 0.9, 0.97), width=0.6)
        if index < 3:
            tip = pymupdf.Point(x0 + box_w + gap - 1, y0 + box_h / 2)
            shape.draw_line((x0 + box_w + 1, tip.y), tip)
            shape.draw_polyline([(tip.x - 3, tip.y - 2), tip, (tip.x - 3, tip.y + 2)])
            shape.finish(color=BLACK, width=0.6)
    shape.commit()
    for index, name in enumerate(names):
        x0 = rect.x0 + 10 + index * (box_w + gap)
        x = x0 + (box_w - text_width(name, SANS, 6)) / 2
        page.insert_text((x, y0 + box_h / 2 + 2), name, fontname=SANS, fontsize=6)


def cell_style(cell: str, header: bool) -> Segment:
    """A table cell's text and font; **x** marks a bold cell."""
    if cell.startswith("**") and cell.endswith("**") and len(cell) > 4:
        return Segment(cell[2:-2], BOLD)
    return Segment(cell, BOLD if header else BODY)


def table_widths(rows: Sequence[Sequence[str]], size: float) -> list[float]:
    """Natural width of each table column at a font size."""
    widths = [0.0] * len(rows[0])
    for index, row in enumerate(rows):
        for column, cell in enumerate(row):
            segment = cell_style(cell, index == 0)
            needed = text_width(segment.text, segment.font, size) + 2 * TABLE_PAD
            widths[column] = max(widths[column], needed)
    return widths


def fit_table(rows: Sequence[Sequence[str]], width: float, sizes: Sequence[float]) -> tuple[float, list[float]] | None:
    """The largest font size at which the table fits into width, with its column widths."""
    for size in sizes:
        widths = table_widths(rows, size)
        if sum(widths) <= width:
            return size, widths
    return None


def draw_table(
    page: pymupdf.Page, rows: Sequence[Sequence[str]], x0: float, y0: float, widths: Sequence[float], size: float
) -> float:
    """Draw a booktabs-style table; returns its height."""
    row_height = size * 1.5
    total = sum(widths)
    for index, row in enumerate(rows):
        top = y0 + 2 + index * row_height
        baseline = baseline_of(top, size, row_height)
        x = x0
        for column, cell in enumerate(row):
            segment = cell_style(cell, index == 0)
            cell_w = text_width(segment.text, segment.font, size)
            offset = TABLE_PAD if column == 0 else (widths[column] - cell_w) / 2
            page.insert_text((x + offset, baseline), segment.text, fontname=segment.font, fontsize=size)
            x += widths[column]
    height = 4 + len(rows) * row_height
    shape = page.new_shape()
    for y, thickness in ((y0, 0.8), (y0 + 2 + row_height, 0.5), (y0 + height, 0.8)):
        shape.draw_line((x0, y), (x0 + total, y))
        shape.finish(color=BLACK, width=thickness)
    shape.commit()
    return height


# --------------------------------------------------------------------------- page layout


class Renderer:
    """Lays out one paper into a new PyMuPDF document, column by column."""

    def __init__(self, paper: Paper) -> None:
        self.paper = paper
        self.meta = paper.meta
        self.style = TWO_COLUMN if paper.meta.layout == "two-column" else ONE_COLUMN
        self.doc = pymupdf.open()
        self.page = self.doc.new_page(width=self.style.page_width, height=self.style.page_height)
        self.column = 0
        self.top = self.style.margin_top
        self.y = self.top
        self.line_count = 0
        self.toc: list[list[Any]] = []
        self.wide_tables: list[Table] = []
        self.floats: list[Figure | Table] = []
        labels = [b.label for b in paper.blocks if isinstance(b, Reference) and b.label]
        self.reference_hang = max([text_width(label, BODY, REFERENCE_SIZE) + 5 for label in labels], default=12.0)

    def render(self) -> pymupdf.Document:
        """Lay out the whole paper and return the document."""
        self.top = self.y = self.draw_title_block()
        blocks = self.paper.blocks
        previous: Block | None = None
        for index, block in enumerate(blocks):
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            self.place_block(block, previous, following)
            if not isinstance(block, Figure | Table):  # floats do not end a paragraph run
                previous = block
        while self.floats:
            self.next_column()
        if self.wide_tables:
            self.new_page()
        self.finish()
        return self.doc

    # ----- flow primitives

    def column_span(self) -> tuple[float, float]:
        """Left and right x of the current column."""
        style = self.style
        x0 = style.margin_x + self.column * (style.column_width + style.gutter)
        return x0, x0 + style.column_width

    def new_page(self) -> None:
        """Start a new page with its running header."""
        self.page = self.doc.new_page(width=self.style.page_width, height=self.style.page_height)
        self.column = 0
        self.top = self.y = self.style.margin_top
        self.draw_running_header()
        self.flush_wide_tables()

    def next_column(self) -> None:
        """Continue at the top of the next column (or page)."""
        if self.column + 1 < self.style.columns:
            self.column += 1
            self.y = self.top
        else:
            self.new_page()
        self.flush_floats()

    def reserve(self, height: float) -> None:
        """Move on to the next column unless height fits below the current position."""
        full = self.style.bottom - self.style.margin_top
        if height > full + EPS:
            raise PaperError(f"a block of {height:.0f}pt does not fit in a column ({full:.0f}pt)")
        while self.y + height > self.style.bottom + EPS:
            self.next_column()

    def skip(self, height: float) -> None:
        """Vertical space, dropped at the top of a column."""
        if self.y > self.top + EPS:
            self.y += height

    def draw_pieces(
        self, pieces: Sequence[tuple[float, Line]], size: float, leading: float, numbered: bool = True
    ) -> None:
        """Place one text line in the flow; pieces are (offset from column left, line)."""
        self.reserve(leading)
        baseline = baseline_of(self.y, size, leading)
        x0 = self.column_span()[0]
        for offset, line in pieces:
            write_line(self.page, line, x0 + offset, baseline, size)
        if numbered and self.meta.line_numbers:
            self.draw_line_number(baseline)
        self.y += leading

    def draw_line_number(self, baseline: float) -> None:
        """Review-style line number: left margin, or right margin for a second column."""
        self.line_count += 1
        label = str(self.line_count)
        x0, x1 = self.column_span()
        left = x0 - 12 - text_width(label, SANS, LINE_NUMBER_SIZE)
        x = left if self.column == 0 else x1 + 12
        self.page.insert_text((x, baseline), label, fontname=SANS, fontsize=LINE_NUMBER_SIZE, color=GRAY)

    # ----- blocks

    def place_block(self, block: Block, previous: Block | None, following: Block | None) -> None:
        """Dispatch one block to its layout routine."""
        if isinstance(block, Heading):
            self.place_heading(block, following)
        elif isinstance(block, Paragraph):
            self.place_paragraph(block, indent=isinstance(previous, Paragraph))
        elif isinstance(block, Figure | Table):
            self.place_float(block)
        else:
            self.place_reference(block)

    def heading_style(self, level: int) -> tuple[str, float, float, float, float]:
        """(font, size, leading, space before, space after) of a heading level."""
        body = self.style.body_size
        return {
            1: (BOLD, 12.0, 14.5, 12.0, 4.0),
            2: (BOLD, 11.0, 13.5, 9.0, 3.0),
            3: (BOLD_ITALIC, body, self.style.leading, 7.0, 2.0),
        }[level]

    def min_height(self, block: Block | None) -> float:
        """Height that must fit together with the heading above a block."""
        width = self.style.column_width
        if isinstance(block, Figure):
            return self.figure_height(block, width)
        if isinstance(block, Table):
            size, _, wide = self.table_fit(block)
            return 2 * self.style.leading if wide else self.table_height(block, width, size)
        if isinstance(block, Reference):
            return 2 * REFERENCE_LEADING
        if isinstance(block, Heading):
            return self.heading_style(block.level)[2] + 2 * self.style.leading
        return 2 * self.style.leading if block else 0.0

    def place_heading(self, heading: Heading, following: Block | None) -> None:
        """A bold heading kept together with the start of what follows it."""
        font, size, leading, before, after = self.heading_style(heading.level)
        width = self.style.column_width
        lines = break_lines(words_of(heading.text, font), size, width, hyphens=False)
        self.skip(before)
        self.reserve(len(lines) * leading + after + self.min_height(following))
        self.toc.append([heading.level, heading.text, self.page.number + 1])
        centered = heading.text == "Abstract"
        for line in lines:
            offset = (width - line_width(line, size)) / 2 if centered else 0.0
            self.draw_pieces([(offset, line)], size, leading)
        self.y += after

    def place_paragraph(self, paragraph: Paragraph, indent: bool) -> None:
        """Body or abstract paragraph; the bold run-in shares the first line."""
        style = self.style
        inset = style.abstract_inset if paragraph.abstract else 0.0
        first_indent = style.par_indent if indent and not paragraph.abstract else 0.0
        width = style.column_width - 2 * inset
        words = words_of(paragraph.lead, BOLD) + words_of(paragraph.text, BODY)
        lines = break_lines(words, style.body_size, width, first_width=width - first_indent)
        if indent or paragraph.abstract:
            self.skip(style.par_skip)
        self.reserve(min(2, len(lines)) * style.leading)
        for index, line in enumerate(lines):
            offset = inset + (first_indent if index == 0 else 0.0)
            self.draw_pieces([(offset, line)], style.body_size, style.leading)

    def caption_lines(self, caption: str, width: float) -> list[Line]:
        """Caption text broken into 9pt lines."""
        return break_lines(words_of(caption, BODY), CAPTION_SIZE, width)

    def figure_height(self, figure: Figure, width: float) -> float:
        """Total height of a figure box plus its caption."""
        lines = self.caption_lines(figure.caption, width)
        return self.style.figure_height + 6 + len(lines) * CAPTION_LEADING

    def float_height(self, block: Figure | Table) -> float:
        """Height of a column figure or table including the space above it."""
        width = self.style.column_width
        if isinstance(block, Figure):
            return FLOAT_SKIP + self.figure_height(block, width)
        size, _, wide = self.table_fit(block)
        return 0.0 if wide else FLOAT_SKIP + self.table_height(block, width, size)

    def place_float(self, block: Figure | Table) -> None:
        """Place a figure or table here, at the top of the next column, or deferred.

        Like LaTeX floats: when it does not fit and would leave a large gap, the text
        goes on and the float waits for the top of the next column (in source order).
        """
        height = self.float_height(block)
        full = self.style.bottom - self.style.margin_top
        if height > full:
            raise PaperError(
                f"line {block.line}: {type(block).__name__} {block.label} is "
                f"{height:.0f}pt tall, more than a column ({full:.0f}pt)"
            )
        gap = self.style.bottom - self.y
        if not self.floats and height <= gap + EPS:
            self.draw_float(block)
        elif self.floats or gap > DEFER_MIN_GAP * full:
            self.floats.append(block)
        else:
            self.next_column()
            self.draw_float(block)

    def flush_floats(self) -> None:
        """Place deferred floats that fit at the top of a fresh column."""
        while self.floats and self.y + self.float_height(self.floats[0]) <= self.style.bottom:
            self.draw_float(self.floats.pop(0))

    def draw_float(self, block: Figure | Table) -> None:
        """Draw a figure or table in the flow."""
        if isinstance(block, Figure):
            self.place_figure(block)
        else:
            self.place_table(block)

    def place_figure(self, figure: Figure) -> None:
        """A placeholder figure with the caption below it, never split."""
        style = self.style
        width = style.column_width
        self.skip(FLOAT_SKIP)
        self.reserve(self.figure_height(figure, width))
        x0 = self.column_span()[0]
        box_width = min(width, style.figure_max_width)
        left = x0 + (width - box_width) / 2
        rect = pymupdf.Rect(left, self.y, left + box_width, self.y + style.figure_height)
        seed = stable_hash(f"{self.paper.slug}:{figure.label}")
        draw_figure(self.page, rect, figure.caption, seed)
        self.y = rect.y1 + 6
        self.place_caption(self.caption_lines(figure.caption, width))
        self.skip(FLOAT_SKIP)

    def place_caption(self, lines: Sequence[Line]) -> None:
        """Caption lines; a one-line caption is centered."""
        width = self.style.column_width
        for line in lines:
            offset = (width - line_width(line, CAPTION_SIZE)) / 2 if len(lines) == 1 else 0.0
            self.draw_pieces([(offset, line)], CAPTION_SIZE, CAPTION_LEADING, numbered=False)

    def table_fit(self, table: Table) -> tuple[float, list[float], bool]:
        """(font size, column widths, spans both columns) of a table."""
        style = self.style
        sizes = COLUMN_TABLE_SIZES if style.columns > 1 else WIDE_TABLE_SIZES
        fit = fit_table(table.rows, style.column_width, sizes)
        if fit:
            return fit[0], fit[1], False
        full_width = style.page_width - 2 * style.margin_x
        fit = fit_table(table.rows, full_width, WIDE_TABLE_SIZES) if style.columns > 1 else None
        if fit:
            return fit[0], fit[1], True
        needed = sum(table_widths(table.rows, WIDE_TABLE_SIZES[-1]))
        raise PaperError(
            f"line {table.line}: Table {table.label} is {needed:.0f}pt wide at "
            f"{WIDE_TABLE_SIZES[-1]}pt, more than the {full_width:.0f}pt text "
            "width; shorten its cells or drop a column"
        )

    def table_height(self, table: Table, width: float, size: float) -> float:
        """Total height of a table plus its caption."""
        lines = self.caption_lines(table.caption, width)
        return len(lines) * CAPTION_LEADING + 4 + 4 + len(table.rows) * size * 1.5

    def draw_table_block(self, table: Table, x0: float, width: float, size: float, widths: Sequence[float]) -> float:
        """Caption plus table drawn at self.y within [x0, x0 + width]; returns the height."""
        lines = self.caption_lines(table.caption, width)
        y = self.y
        for line in lines:
            x = x0 + (width - line_width(line, CAPTION_SIZE)) / 2 if len(lines) == 1 else x0
            write_line(self.page, line, x, baseline_of(y, CAPTION_SIZE, CAPTION_LEADING), CAPTION_SIZE)
            y += CAPTION_LEADING
        y += 4
        y += draw_table(self.page, table.rows, x0 + (width - sum(widths)) / 2, y, widths, size)
        return y - self.y

    def place_table(self, table: Table) -> None:
        """Caption above a booktabs-style table, never split.

        A table too wide for a column of a two-column paper spans both columns at the
        top of the next page, like LaTeX's table*.
        """
        size, widths, wide = self.table_fit(table)
        if wide:
            self.wide_tables.append(table)
            return
        width = self.style.column_width
        self.skip(FLOAT_SKIP)
        self.reserve(self.table_height(table, width, size))
        self.y += self.draw_table_block(table, self.column_span()[0], width, size, widths)
        self.skip(FLOAT_SKIP)

    def flush_wide_tables(self) -> None:
        """Place deferred full-width tables at the top of the current (new) page."""
        style = self.style
        full_width = style.page_width - 2 * style.margin_x
        for table in self.wide_tables:
            size, widths, _ = self.table_fit(table)
            height = self.table_height(table, full_width, size)
            if self.y + height > style.bottom:
                raise PaperError(f"line {table.line}: Table {table.label} does not fit on a page")
            self.y += self.draw_table_block(table, style.margin_x, full_width, size, widths)
            self.y += 2 * FLOAT_SKIP
        self.wide_tables.clear()
        self.top = self.y

    def place_reference(self, reference: Reference) -> None:
        """A 9pt bibliography entry with a hanging indent."""
        hang = self.reference_hang
        width = self.style.column_width
        words = words_of(reference.text, BODY)
        first_width = width - hang if reference.label else width
        lines = break_lines(words, REFERENCE_SIZE, width - hang, first_width=first_width)
        self.reserve(min(2, len(lines)) * REFERENCE_LEADING)
        for index, line in enumerate(lines):
            if index == 0 and reference.label:
                pieces = [(0.0, (Segment(reference.label, BODY),)), (hang, line)]
            else:
                pieces = [(0.0 if index == 0 else hang, line)]
            self.draw_pieces(pieces, REFERENCE_SIZE, REFERENCE_LEADING)
        self.y += 2.5

    # ----- page furniture

    def center(self, line: Line, y: float, size: float, leading: float) -> None:
        """Draw a line centered on the full text width, its slot starting at y."""
        style = self.style
        x = (style.page_width - line_width(line, size)) / 2
        write_line(self.page, line, x, baseline_of(y, size, leading), size)

    def draw_title_block(self) -> float:
        """Title, authors, affiliations and venue on page 1; returns where columns start."""
        style, meta = self.style, self.meta
        width = style.page_width - 2 * style.margin_x
        y = style.margin_top - 12
        if style.columns == 1:
            self.rule(y, 3.0)
            y += 10
        for line in break_lines(words_of(meta.title, BOLD), style.title_size, width * 0.9, hyphens=False):
            self.center(line, y, style.title_size, style.title_leading)
            y += style.title_leading
        y += 6
        if style.columns == 1:
            self.rule(y, 0.8)
            y += 10
        for line in pack_names(meta.authors, 11, width):
            self.center(line, y, 11, 13.5)
            y += 13.5
        y += 2
        for affiliation in meta.affiliations:
            for line in break_lines(words_of(affiliation, BODY), 10, width, hyphens=False):
                self.center(line, y, 10, 12)
                y += 12
        y += 4
        self.center((Segment(meta.venue, ITALIC),), y, 10, 12)
        if meta.arxiv:
            self.draw_arxiv_stamp(meta.arxiv)
        return y + 12 + 18

    def rule(self, y: float, thickness: float) -> None:
        """A horizontal rule across the text width."""
        style = self.style
        self.page.draw_line((style.margin_x, y), (style.page_width - style.margin_x, y), color=BLACK, width=thickness)

    def draw_arxiv_stamp(self, arxiv: str) -> None:
        """The gray rotated arXiv identifier in the left margin of page 1."""
        match = ARXIV_RE.match(arxiv)
        assert match is not None  # validated in field_arxiv
        year, month, number = match.group(1), int(match.group(2)), int(match.group(3))
        day = number % 28 + 1
        text = f"arXiv:{arxiv}  [cs.CL]  {day} {MONTHS[(month - 1) % 12]} 20{year}"
        length = text_width(text, BODY, 20)
        baseline_y = (self.style.page_height + length) / 2 + 60
        self.page.insert_text((32, baseline_y), text, fontname=BODY, fontsize=20, rotate=90, color=(0.5, 0.5, 0.5))

    def draw_running_header(self) -> None:
        """Short title left, venue right, thin rule below (pages >= 2)."""
        style = self.style
        x0, x1 = style.margin_x, style.page_width - style.margin_x
        baseline = style.margin_top - 22
        self.page.insert_text((x0, baseline), self.meta.short_title, fontname=ITALIC, fontsize=HEADER_SIZE)
        venue_x = x1 - text_width(self.meta.venue, BODY, HEADER_SIZE)
        self.page.insert_text((venue_x, baseline), self.meta.venue, fontname=BODY, fontsize=HEADER_SIZE)
        self.page.draw_line((x0, baseline + 4), (x1, baseline + 4), color=BLACK, width=0.4)

    def finish(self) -> None:
        """Page numbers, metadata and outline."""
        style = self.style
        for page in self.doc:
            label = str(page.number + 1)
            x = (style.page_width - text_width(label, BODY, PAGE_NUMBER_SIZE)) / 2
            page.insert_text(
                (x, style.page_height - style.margin_bottom / 2 + 3), label, fontname=BODY, fontsize=PAGE_NUMBER_SIZE
            )
            page.clean_contents()  # one content stream per page instead of one per call
        self.doc.set_metadata(pdf_metadata(self.paper))
        if self.meta.outline:
            self.doc.set_toc(self.toc)


def pdf_metadata(paper: Paper) -> dict[str, str]:
    """Fixed Info dictionary: no timestamps except a date derived from the venue year."""
    meta = paper.meta
    date = f"D:{meta.year}0601120000Z"
    title, author = "", ""
    if meta.pdf_title_metadata == "real":
        title, author = meta.title, ", ".join(meta.authors)
    elif meta.pdf_title_metadata == "junk":
        title = JUNK_TITLES[stable_hash(paper.slug) % len(JUNK_TITLES)]
    return {
        "title": title,
        "author": author,
        "subject": "",
        "keywords": "",
        "creator": CREATOR,
        "producer": PRODUCER,
        "creationDate": date,
        "modDate": date,
    }


def render_paper(paper: Paper) -> pymupdf.Document:
    """Render a parsed paper into a new in-memory document."""
    return Renderer(paper).render()


def save_pdf(doc: pymupdf.Document, path: Path) -> None:
    """Save deterministically (no new /ID, compressed, garbage-collected)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(doc.tobytes(garbage=3, deflate=True, no_new_id=True))


# --------------------------------------------------------------------------- README and CLI


def readme_table(rendered: Sequence[tuple[Paper, int]]) -> str:
    """Markdown table of the rendered papers."""
    lines = ["| Slug | Title | Layout | Pages | PDF extras |", "| --- | --- | --- | ---: | --- |"]
    for paper, pages in sorted(rendered, key=lambda item: item[0].slug):
        title = paper.meta.title.replace("|", "\\|")
        lines.append(
            f"| [`{paper.slug}`](papers/{paper.slug}.md) | {title} | "
            f"{paper.meta.layout} | {pages} | {pdf_extras(paper.meta)} |"
        )
    return "\n".join(lines)


def pdf_extras(meta: Meta) -> str:
    """Short description of the optional PDF features of a paper."""
    title = {"real": "real", "junk": "junk", "none": "no"}[meta.pdf_title_metadata]
    extras = [f"{title} metadata title"]
    if meta.arxiv:
        extras.append("arXiv stamp")
    if meta.outline:
        extras.append("outline")
    if meta.line_numbers:
        extras.append("line numbers")
    return ", ".join(extras)


def update_readme(path: Path, table: str) -> None:
    """Replace the text between the papers:start/end markers of the README."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise PaperError(f"{README_START} ... {README_END} markers not found")
    new = f"{text[: start + len(README_START)]}\n{table}\n{text[end:]}"
    path.write_text(new, encoding="utf-8")


def find_sources(papers_dir: Path, slugs: Sequence[str]) -> list[Path]:
    """The sources to render: the given slugs, or every *.md in papers_dir."""
    if not slugs:
        return sorted(papers_dir.glob("*.md"))
    paths = [papers_dir / f"{slug.removesuffix('.md')}.md" for slug in slugs]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"no such paper source: {', '.join(missing)}")
    return paths


def display(path: Path) -> str:
    """A path relative to the working directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="papers to render (default: all)")
    parser.add_argument(
        "--out", type=Path, default=EXAMPLES_DIR / "pdfs", help="output directory (default: examples/pdfs)"
    )
    parser.add_argument(
        "--papers", type=Path, default=EXAMPLES_DIR / "papers", help="source directory (default: examples/papers)"
    )
    parser.add_argument(
        "--readme", action="store_true", help="also rewrite the paper table in examples/README.md (all papers)"
    )
    args = parser.parse_args(argv)
    if args.readme and args.slugs:
        parser.error("--readme lists every paper; do not pass slugs with it")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Render the papers; returns the process exit code."""
    args = parse_args(argv)
    try:
        sources = find_sources(args.papers, args.slugs)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    if not sources:
        print(f"no paper sources in {display(args.papers)}", file=sys.stderr)
    failures = 0
    rendered: list[tuple[Paper, int]] = []
    for path in sources:
        try:
            paper, warnings = load_paper(path)
            doc = render_paper(paper)
        except PaperError as exc:
            print(f"{display(path)}: {exc}", file=sys.stderr)
            failures += 1
            continue
        for warning in warnings:
            print(f"{display(path)}: warning: {warning}", file=sys.stderr)
        save_pdf(doc, args.out / f"{paper.slug}.pdf")
        pages = doc.page_count
        note = "" if 4 <= pages <= 8 else "  (outside the 4-8 page target)"
        print(f"{paper.slug:<24} {pages:>2} pages {paper.words:>6} words{note}")
        rendered.append((paper, pages))
    if args.readme:
        if failures:
            print("README table not updated because some papers failed", file=sys.stderr)
        else:
            try:
                update_readme(EXAMPLES_DIR / "README.md", readme_table(rendered))
            except (OSError, PaperError) as exc:
                print(f"{display(EXAMPLES_DIR / 'README.md')}: {exc}", file=sys.stderr)
                return 1
            print(f"updated {display(EXAMPLES_DIR / 'README.md')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
