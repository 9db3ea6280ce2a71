"""Page geometry: visual lines, running headers/footers, margins, reading order."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any

import pymupdf

from . import math_glyphs
from .text import lowered, normalize, raised

# Set here, not left to what else was imported. PyMuPDF 2 imports pymupdf4llm when it can, which turns MuPDF's
# quad corrections off for the whole process and silences MuPDF's error messages; the parser's constants were set
# with those, and the parsing worker (bounded.py) does not import pymupdf4llm. With the corrections on, character
# boxes change height and the dev set loses a heading (F1 0.988 either way; 879 against 880 matched).
pymupdf.TOOLS.unset_quad_corrections(True)
pymupdf.TOOLS.mupdf_display_errors(False)  # what a damaged file is reaches the user as one ParseError line

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|medi|\bbx|cmbx|-b$|\.b$", re.I)
_ITALIC_FONT = re.compile(r"italic|oblique|-it$|\bcmti|cmsl", re.I)
_MATH_FONT = re.compile(
    r"^(cmmi|cmsy|cmex|msam|msbm|eufm|rsfs|stixmath|cambriamath|mathematicalpi|lmmath)|math|symbol", re.I
)
_SMALL_CAPS_FONT = re.compile(r"CSC|SmallCaps|[a-z]SC\b|-SC|Caps\b")
_MONO_FONT = re.compile(r"mono|courier|consol|\bcmtt|sfmono|inconsolata|typewriter", re.I)
_PAGE_NUMBER = re.compile(r"^(page\s*)?(\d{1,4}|[ivxlc]{1,6})(\s*(of|/)\s*\d{1,4})?$", re.I)
_BAND_GAP = 4.0  # in body sizes: a blank across both columns this tall ends a band
_MARGIN = 0.12  # share of the page height where running headers and footers live


@dataclass
class Span:
    """A run of text in one font."""

    text: str
    size: float
    bold: bool
    italic: bool = False
    font: str = ""
    mono: bool = False
    baseline: float | None = None  # y of the baseline the glyphs sit on (None for a space put between pieces)

    @property
    def math(self) -> bool:
        """Set in a math font (its subset prefix aside: "ABCDEF+CMMI10")."""
        return bool(_MATH_FONT.search(self.font.split("+", 1)[-1]))


@dataclass
class Line:
    """One visual line: spans on the same baseline, left to right."""

    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    spans: list[Span] = field(default_factory=list)
    column: int = 0  # 0 = left or only column, 1 = right, -1 = spans the page
    sidebar: bool = False  # in a block down the margin beside the text (affiliations, a publisher's box)
    # The text and size, worked out once: headings and layout ask for them a million times over a paper set. A line
    # changes only while pieces are appended to it (`_append_piece`), which clears them.
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    _size: float | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = normalize("".join(s.text for s in self.spans))
        return self._text

    @property
    def marked_text(self) -> str:
        """The text with small type raised or lowered off the line's baseline set as superscript or subscript
        characters, for running text: "10¹⁰", "xᵢ", "P⁺". A footnote mark stuck to a word is raised the same way
        ("SPECTER,²", "benchmark.¹"), not dropped: the word no longer reads as another and a quote keeps the
        pointer to the footnote it came with. A character without such a form stays as printed ("Pᵠ" does not
        exist: "PQ"). Unicode compatibility folding (NFKC) gives back the text layer's own reading ("1010",
        "SPECTER,2"): a passage copied from the PDF still matches the chunk, word for word.
        """
        size = self.size
        base = self._baseline(size)
        if base is None:
            return self.text
        out = ""
        prev = ""
        for at, s in enumerate(self.spans):
            mark = _script_mark(s, size, base, self._math_at(at))
            visible = s.text.strip()
            # Only a script stuck to what comes before it; raised letters after a figure are an ordinal ("21st").
            stuck = out[-1:].strip() and mark != prev
            if mark and visible and stuck and not (mark == "^" and out[-1].isdigit() and visible.isalpha()):
                out += raised(visible) if mark == "^" else lowered(visible)
            else:
                out += s.text
            prev = mark if visible else prev
        return normalize(out)

    def _baseline(self, size: float) -> float | None:
        """The baseline most characters of the line's usual size sit on."""
        weights: Counter[float] = Counter()
        for s in self.spans:
            if s.baseline is not None and abs(s.size - size) < 0.3:
                weights[round(s.baseline, 1)] += len(s.text.strip())
        return weights.most_common(1)[0][0] if weights else None

    def _math_at(self, at: int) -> bool:
        """True when span `at` or the one before it is set in a math font (a subscript marks math, not a formula
        such as TiO2 set in a text font)."""
        return any(s.math for s in self.spans[max(0, at - 1) : at + 1])

    @property
    def size(self) -> float:
        """Font size of most of the characters."""
        if self._size is None:
            weights: Counter[float] = Counter()
            for s in self.spans:
                weights[round(s.size, 1)] += len(s.text.strip())
            self._size = weights.most_common(1)[0][0] if weights else 0.0
        return self._size

    @property
    def bold(self) -> bool:
        """True when every visible character is bold, the math in it aside: TeX sets "the increment m_µ" of a bold
        heading in its (upright weight) math fonts unless the author asks for bold math."""
        visible = [s for s in self.spans if s.text.strip()]
        words = [s for s in visible if not s.math]
        return bool(words) and all(s.bold for s in words)

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def font(self) -> str:
        """The font most characters are set in, without a subset prefix ("ABCDEF+Times-Bold" -> "Times-Bold")."""
        weights: Counter[str] = Counter()
        for s in self.spans:
            weights[s.font.split("+", 1)[-1]] += len(s.text.strip())
        return weights.most_common(1)[0][0] if weights else ""

    def share(self, attr: str) -> float:
        """Share of the visible characters set in bold ("bold"), italic ("italic") or typewriter ("mono")."""
        total = sum(len(s.text.strip()) for s in self.spans)
        return sum(len(s.text.strip()) for s in self.spans if getattr(s, attr)) / total if total else 0.0

    @property
    def math_share(self) -> float:
        """Share of the visible characters set in math fonts."""
        total = sum(len(s.text.strip()) for s in self.spans)
        math = sum(len(s.text.strip()) for s in self.spans if s.math)
        return math / total if total else 0.0

    @property
    def small_caps(self) -> bool:
        """Set in small capitals: a small-caps font, or capitals in two sizes ("I" 10pt + "NTRODUCTION" 8pt)."""
        letters = [s for s in self.spans if any(c.isalpha() for c in s.text)]
        if not letters:
            return False
        if all(_SMALL_CAPS_FONT.search(s.font) for s in letters):
            return True
        sizes = {round(s.size, 1) for s in letters}
        upper = all(c.isupper() for s in letters for c in s.text if c.isalpha())
        return upper and len(sizes) >= 2 and min(sizes) >= 0.6 * max(sizes)

    @property
    def head_size(self) -> float:
        """The size a reader sees: the capitals' size for small caps, else the usual size."""
        return max(s.size for s in self.spans if s.text.strip()) if self.small_caps else self.size


@dataclass
class PageLines:
    """The lines of one page, in reading order, and the page's size."""

    number: int
    width: float
    height: float
    lines: list[Line]
    two_column: bool = False
    figures: list[tuple[float, float, float, float]] = field(default_factory=list)
    column_left: dict[int, float] = field(default_factory=dict)
    column_right: dict[int, float] = field(default_factory=dict)
    #: False for a page with too many paths to list (page_cost.py): its figures and rules are not looked for.
    drawings: bool = True


def _script_mark(span: Span, size: float, base: float, math: bool) -> str:
    """ "^" for small type raised off the baseline, "_" for small type lowered in math, else ""."""
    if span.baseline is None or span.size > 0.85 * size:
        return ""
    rise = base - span.baseline
    if rise > 0.2 * size:
        return "^"
    if rise < -0.1 * size and math:
        return "_"
    return ""


def _is_bold(span: dict[str, object]) -> bool:
    flags = int(span.get("flags", 0))  # type: ignore[call-overload]
    return bool(flags & pymupdf.TEXT_FONT_BOLD) or bool(_BOLD_FONT.search(str(span.get("font", ""))))


def _is_italic(span: dict[str, object]) -> bool:
    flags = int(span.get("flags", 0))  # type: ignore[call-overload]
    return bool(flags & pymupdf.TEXT_FONT_ITALIC) or bool(_ITALIC_FONT.search(str(span.get("font", ""))))


def _is_mono(span: dict[str, object]) -> bool:
    flags = int(span.get("flags", 0))  # type: ignore[call-overload]
    return bool(flags & pymupdf.TEXT_FONT_MONOSPACED) or bool(_MONO_FONT.search(str(span.get("font", ""))))


_TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


def raw_lines(page: pymupdf.Page, number: int) -> list[Line]:
    """Horizontal text lines of a page, with PyMuPDF's lines on one baseline merged."""
    pieces: list[Line] = []
    data = page.get_text("dict", flags=_TEXT_FLAGS)
    _name_math_glyphs(page, data)
    for block in data["blocks"]:
        if block.get("type") != 0:
            continue
        for line in block["lines"]:
            dx, dy = line["dir"]
            if abs(dy) > 0.05 or dx < 0:  # rotated text: arXiv stamps, axis labels
                continue
            spans = [
                Span(
                    text,
                    float(s["size"]),
                    _is_bold(s),
                    _is_italic(s),
                    str(s.get("font", "")),
                    _is_mono(s),
                    float(s["origin"][1]),
                )
                for s in line["spans"]
                if (text := math_glyphs.printable(s["text"]))
            ]
            if not any(s.text.strip() for s in spans):
                continue
            x0, y0, x1, y1 = line["bbox"]
            pieces.append(Line(number, x0, y0, x1, y1, spans))
    return _merge_baselines(pieces, page.rect.width)


def _name_math_glyphs(page: pymupdf.Page, data: dict[str, Any]) -> None:
    """Read the glyphs of TeX math fonts that PyMuPDF could not name (U+FFFD) off their character codes.

    Only a page with such glyphs is read again, and only the region of the spans that hold them: the second
    reading gives each unnamed glyph's code in place of U+FFFD, and math_glyphs knows what the code draws.
    """
    spans = [
        s
        for block in data["blocks"]
        if block.get("type") == 0
        for line in block["lines"]
        for s in line["spans"]
        if math_glyphs.needs_codes(str(s.get("font", "")), s["text"])
    ]
    if not spans:
        return
    clip = pymupdf.Rect()
    for s in spans:
        clip |= pymupdf.Rect(s["bbox"])
    clip = pymupdf.Rect(clip.x0 - 1, clip.y0 - 1, clip.x1 + 1, clip.y1 + 1)  # whole glyphs, not cut at an edge
    codes = page.get_text("dict", flags=_TEXT_FLAGS | pymupdf.TEXT_USE_CID_FOR_UNKNOWN_UNICODE, clip=clip)
    by_origin = {
        _span_key(s): s["text"]
        for block in codes["blocks"]
        if block.get("type") == 0
        for line in block["lines"]
        for s in line["spans"]
    }
    for s in spans:
        font = str(s.get("font", ""))
        s["text"] = math_glyphs.decode(font, s["text"], by_origin.get(_span_key(s), ""))


def _span_key(span: dict[str, Any]) -> tuple[str, float, float]:
    x, y = span["origin"]
    return str(span.get("font", "")), round(x, 1), round(y, 1)


def _merge_baselines(pieces: list[Line], width: float) -> list[Line]:
    gutters = [width / 2, *_gutters(pieces, width)]
    pieces = _join_stacked_pieces(pieces, gutters)
    pieces.sort(key=lambda ln: (round((ln.y0 + ln.y1) / 2), ln.x0))
    merged: list[Line] = []
    for ln in pieces:
        prev = merged[-1] if merged else None
        if prev is not None:
            same_row = abs((prev.y0 + prev.y1) / 2 - (ln.y0 + ln.y1) / 2) < 0.5 * max(prev.height, ln.height, 1)
            if same_row and _side_by_side_pieces(prev, ln, gutters):
                _append_piece(prev, ln)
                continue
            if same_row and _NUMBER_PIECE.fullmatch(ln.text) and _side_by_side_pieces(ln, prev, gutters):
                # A section number that opens the row but sits a little lower ("3.6" before a heading whose µ rises
                # above the line) sorts after the rest of its row: it goes in front.
                _append_piece(ln, prev)
                merged[-1] = ln
                continue
        merged.append(ln)
    return merged


_NUMBER_PIECE = re.compile(r"(?:\d{1,2}|[A-Z])(?:\.\d{1,2})*\.?")


def _side_by_side_pieces(left: Line, right: Line, gutters: list[float]) -> bool:
    """True when `right` continues `left` across a word space or so, on the same side of every gutter."""
    gap = right.x0 - left.x1
    size = max(left.size, right.size, 1)
    across_gutter = any(left.x1 <= g <= right.x0 for g in gutters) and gap > 0.4 * size
    # Review line numbers sit right next to the text, in smaller type: keep them apart.
    margin_number = any(
        re.fullmatch(r"\d{1,4}", x.text) and x.size < 0.85 * y.size for x, y in ((left, right), (right, left))
    )
    # Type of another size past more than a word space is another block: a side box's line ("... conflicts:
    # Dr." in 8 pt) ending just before the text's column starts (10 pt).
    if abs(left.spans[-1].size - right.spans[0].size) > 1 and gap > 0.5 * size:
        return False
    # A subscript set under the superscript before it ("ϵ∗_g") starts left of where that ends.
    stacked = left.spans[-1].size < 0.85 * left.size or right.spans[0].size < 0.85 * right.size
    overlap = 0.6 * size if stacked else 1.0
    return -overlap <= gap < 1.5 * size and not across_gutter and not margin_number


def _append_piece(line: Line, piece: Line) -> None:
    if piece.x0 - line.x1 > 0.15 * piece.size and not line.spans[-1].text.endswith(" "):
        line.spans.append(Span(" ", piece.size, piece.bold))
    line.spans.extend(piece.spans)
    line._text = line._size = None
    line.x1 = max(line.x1, piece.x1)
    line.y0, line.y1 = min(line.y0, piece.y0), max(line.y1, piece.y1)


def _join_stacked_pieces(lines: list[Line], gutters: list[float]) -> list[Line]:
    """Join the pieces of a display equation into one line, left to right.

    A big delimiter, a sum sign or a fraction stands taller than the symbols beside it, and its box reaches
    above and below theirs, so the pieces of one equation have middles too far apart to read as one row by
    baseline, and came out as lines of their own, out of order. Two pieces side by side are one line when the
    shorter lies within the height of the taller and one of them is set in a math font; the pieces of a prose
    line share their middles and are left to the merge by baseline.
    """
    parent = list(range(len(lines)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # A piece of prose (words in a text font, a math symbol or two among them) is not a piece of a display.
    prose = {i for i, ln in enumerate(lines) if ln.math_share < 0.5 and len(ln.text.split()) > 3}
    math = [i for i, ln in enumerate(lines) if i not in prose and any(s.math for s in ln.spans)]
    for i in math:
        for j in range(len(lines)):
            if i == j or j in prose:
                continue
            a, b = sorted((lines[i], lines[j]), key=lambda ln: ln.x0)
            if _stacked_within(a, b) and _side_by_side_pieces(a, b, gutters):
                parent[root(j)] = root(i)
    groups: dict[int, list[Line]] = {}
    for i, ln in enumerate(lines):
        groups.setdefault(root(i), []).append(ln)
    out: list[Line] = []
    for i, ln in enumerate(lines):
        group = groups[root(i)]
        if len(group) == 1:
            out.append(ln)
        elif ln is group[0]:
            pieces = sorted(group, key=lambda p: p.x0)
            first = pieces[0]
            for piece in pieces[1:]:
                _append_piece(first, piece)
            out.append(first)
    return out


def _stacked_within(a: Line, b: Line) -> bool:
    """True when the shorter line's top and bottom lie within the taller's (a quarter of its height spare)."""
    short, tall = (a, b) if a.height <= b.height else (b, a)
    spare = 0.25 * short.height
    # Half as tall again: a big delimiter or a stacked fraction, not a byline whose affiliation marks (in a math
    # font) rise a little above the names.
    return short.y0 >= tall.y0 - spare and short.y1 <= tall.y1 + spare and 1.5 * short.height <= tall.height


def _gutters(pieces: list[Line], width: float) -> list[float]:
    """x of the vertical blanks between blocks of text away from the page's middle: a sidebar's edge, the
    gutter of columns of unequal width. Many lines end left of such a blank and many start right of it,
    and (nearly) none cross it."""
    text = [p for p in pieces if len(p.text.strip()) > 3]
    if len(text) < 20:
        return []
    # How many lines cover each point of x: +1 where a line starts, -1 past its end, summed left to right.
    starts = [0] * (int(width) + 3)
    for p in text:
        a, b = max(0, int(p.x0)), min(int(width) + 1, int(p.x1))
        if a <= b:
            starts[a] += 1
            starts[b + 1] -= 1
    cover = list(accumulate(starts))
    allowed = max(1, 0.05 * len(text))
    out: list[float] = []
    x = int(0.1 * width)
    while x < 0.9 * width:
        if cover[x] > allowed:
            x += 1
            continue
        end = x
        while end < 0.9 * width and cover[end] <= allowed:
            end += 1
        left = sum(1 for p in text if p.x1 <= x + 1)
        right = sum(1 for p in text if p.x0 >= end - 1)
        if end - x >= 5 and left >= 8 and right >= 8:
            out.append((x + end) / 2)
        x = end + 1
    return out


def figure_boxes(page: pymupdf.Page, lines: list[Line], body: float) -> list[tuple[float, float, float, float]]:
    """Regions holding pictures or vector drawings: a line inside one is a label, not a heading."""
    boxes: list[tuple[float, float, float, float]] = [tuple(info["bbox"]) for info in page.get_image_info()]
    boxes += [(r.x0, r.y0, r.x1, r.y1) for r in page.cluster_drawings() if r.width > 30 and r.height > 30]
    # Drawings also frame pages, shade columns and rule tables of text: a region holding running
    # text (long body-size lines) is not a figure.
    return [b for b in boxes if sum(1 for ln in lines if inside(ln, b) and _running_text(ln, body)) < 3]


def _running_text(ln: Line, body: float) -> bool:
    return abs(ln.size - body) < 0.6 and len(ln.text) >= 40


def inside(ln: Line, box: tuple[float, float, float, float]) -> bool:
    """True when the middle of the line lies within the box."""
    x, y = (ln.x0 + ln.x1) / 2, (ln.y0 + ln.y1) / 2
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def body_size(pages: list[list[Line]]) -> float:
    """The font size most characters of the document are set in."""
    weights: Counter[float] = Counter()
    for lines in pages:
        for ln in lines:
            for s in ln.spans:
                weights[round(s.size, 1)] += len(s.text.strip())
    return weights.most_common(1)[0][0] if weights else 10.0


def body_font(pages: list[list[Line]], size: float) -> str:
    """The font most body-size characters are set in."""
    weights: Counter[str] = Counter()
    for lines in pages:
        for ln in lines:
            for s in ln.spans:
                if abs(s.size - size) < 0.3:
                    weights[s.font.split("+", 1)[-1]] += len(s.text.strip())
    return weights.most_common(1)[0][0] if weights else ""


def line_gap(pages: list[PageLines], body: float) -> float:
    """The usual space between two lines of a paragraph (double-spaced preprints have a lot)."""
    gaps = []
    for page in pages:
        for a, b in zip(page.lines, page.lines[1:], strict=False):
            same = a.column == b.column and abs(a.size - body) < 0.6 and abs(b.size - body) < 0.6
            if same and len(a.text) > 40 and len(b.text) > 40 and 0 <= b.y0 - a.y1 < 3 * body:
                gaps.append(b.y0 - a.y1)
    if len(gaps) < 5:
        return 0.2 * body
    gaps.sort()
    return gaps[len(gaps) // 2]


def _signature(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def drop_page_furniture(pages: list[list[Line]], heights: list[float], body: float) -> list[list[Line]]:
    """Remove running headers/footers, page numbers, line numbers and tiny text."""
    n = len(pages)
    margin_sigs: Counter[str] = Counter()
    for lines, h in zip(pages, heights, strict=True):
        sigs = {_signature(ln.text) for ln in lines if _in_margin(ln, h)}
        margin_sigs.update(sigs)
    repeated = {s for s, c in margin_sigs.items() if c >= max(2, 0.3 * n)}
    kept: list[list[Line]] = []
    for number, (lines, h) in enumerate(zip(pages, heights, strict=True), start=1):
        edges = _text_edges(lines, body)
        out = []
        for ln in lines:
            text = ln.text
            if not text:
                continue
            if ln.size < 0.7 * body:  # figure labels, stray superscripts
                continue
            if _in_margin(ln, h) and (_signature(text) in repeated or _PAGE_NUMBER.match(text)):
                continue
            if number == 1 and _signature(text) in repeated and ln.size <= 1.05 * body and len(text.split()) <= 6:
                continue  # the running head page 1 sets under its title ("A PREPRINT"), in body type, not the title
            if ln.y1 < h * _MARGIN and not ln.bold and _numbered_running_head(text, number):
                continue
            if _is_line_number(ln, edges):
                continue
            out.append(ln)
        kept.append(out)
    return kept


def _numbered_running_head(text: str, page: int) -> bool:
    """ "2 K. T. Smith et al." on page 2: a running head with its page number, even if it never repeats."""
    words = text.split()
    if len(words) < 2 or len(words) > 12 or str(page) not in (words[0], words[-1]):
        return False
    # A section that starts its own page ("3 The AVE System" on page 3) is bold, or in capitals.
    rest = " ".join(words[1:] if words[0] == str(page) else words[:-1])
    return not rest.isupper()


def _in_margin(ln: Line, height: float) -> bool:
    return ln.y1 < height * _MARGIN or ln.y0 > height * (1 - _MARGIN)


def _text_edges(lines: list[Line], body: float) -> tuple[float, float]:
    wide = [ln for ln in lines if abs(ln.size - body) < 0.6 and len(ln.text) > 25]
    if not wide:
        return (0.0, 1e9)
    return (min(ln.x0 for ln in wide), max(ln.x1 for ln in wide))


def _is_line_number(ln: Line, edges: tuple[float, float]) -> bool:
    # Review copies number every line in the margin, outside the text block.
    return bool(re.fullmatch(r"\d{1,4}", ln.text)) and (ln.x1 <= edges[0] + 2 or ln.x0 >= edges[1] - 2)


def order_page(lines: list[Line], number: int, width: float, height: float, body: float) -> PageLines:
    """Put a page's lines in reading order: column by column between full-width lines.

    A sidebar down the left margin (BMJ journals set affiliations and notes there on the first page) is
    read as one block after the lines above it (title, authors), and the columns are those right of it. A box
    down the right margin (a publisher's notes, key points) is read after the text, and the columns are those
    left of it.
    """
    sidebar, main = _left_sidebar(lines, width, height)
    right = not sidebar
    if right:
        sidebar, main = _right_sidebar(lines, width, height)
    if not sidebar:
        return _order_columns(lines, number, width, height, body, width / 2)
    left_edge, right_edge = min(ln.x0 for ln in main), max(ln.x1 for ln in main)
    page = _order_columns(main, number, width, height, body, (left_edge + right_edge) / 2, right_edge - left_edge)
    top = min(ln.y0 for ln in sidebar)
    at = next((i for i, ln in enumerate(page.lines) if ln.column != -1 and ln.y0 >= top), len(page.lines))
    for ln in sidebar:
        ln.column, ln.sidebar = 0, True
    # On a later page the box's tail stands beside a paragraph the page before began: it is read after the page's
    # text, so the paragraph reads on. A box down the right margin is read after the text beside it on every page
    # (read where it starts, it would open the abstract).
    at = at if number == 1 and not right else len(page.lines)
    page.lines[at:at] = sorted(sidebar, key=lambda ln: (ln.y0, ln.x0))
    return page


def _left_sidebar(lines: list[Line], width: float, height: float) -> tuple[list[Line], list[Line]]:
    """The lines of a narrow block down the left margin that no other line reaches into, and the other lines
    (([], lines) if there is no such block)."""
    # The main text starts where the lines reaching past a third of the page start (a running head or foot, in
    # the margins, may run across the sidebar's column and does not count); the sidebar's lines end before it.
    # A fixed share of the width does not do: PLOS's box of citation, editor and dates ends at 0.30 of it, BMJ's
    # abstract heading at 0.32.
    wide = [ln for ln in lines if ln.x1 >= width / 3 and not _in_margin(ln, height)]
    if not wide:
        return [], lines
    start = min(ln.x0 for ln in wide)
    narrow = [ln for ln in lines if ln.x1 < start - 4]
    rest = [ln for ln in lines if ln.x1 >= start - 4]
    # A box's tail on the next page (PLOS's competing interests) is short, but set smaller than the text.
    sizes = sorted(ln.size for ln in rest)
    small = bool(narrow) and bool(sizes) and max(ln.size for ln in narrow) < 0.9 * sizes[len(sizes) // 2]
    tall = len(narrow) >= 8 and max(ln.y1 for ln in narrow) - min(ln.y0 for ln in narrow) >= 0.3 * height
    if not (tall or (small and len(narrow) >= 3)):
        return [], lines
    edge = max(ln.x1 for ln in narrow)
    # The block stands apart: the text right of it starts clear of its edge, and the text is mostly there (counted
    # in characters: a box's short lines may outnumber a page's long ones).
    body = [ln for ln in rest if not _in_margin(ln, height)]
    if sum(len(ln.text) for ln in body) < sum(len(ln.text) for ln in narrow) or any(ln.x0 < edge + 4 for ln in body):
        return [], lines
    return narrow, rest


def _right_sidebar(lines: list[Line], width: float, height: float) -> tuple[list[Line], list[Line]]:
    """A narrow block down the right margin, found as the left one is on the page seen in a mirror."""
    mirrored = [replace(ln, x0=width - ln.x1, x1=width - ln.x0) for ln in lines]
    box, _ = _left_sidebar(mirrored, width, height)
    ids = {id(m) for m in box}
    pairs = list(zip(lines, mirrored, strict=True))
    return [ln for ln, m in pairs if id(m) in ids], [ln for ln, m in pairs if id(m) not in ids]


def _order_columns(
    lines: list[Line], number: int, width: float, height: float, body: float, mid: float, span: float | None = None
) -> PageLines:
    """Lines in reading order, as one column or two split at ``mid``; ``span`` is the width the text spans
    (the page's, unless a sidebar takes part of it)."""
    span = span or width
    slack = 0.02 * width

    def column_of(ln: Line) -> int:
        if ln.x1 <= mid + slack:
            return 0
        if ln.x0 >= mid - slack:
            return 1
        return -1

    wide_left = sum(1 for ln in lines if column_of(ln) == 0 and ln.x1 - ln.x0 > 0.28 * span)
    wide_right = sum(1 for ln in lines if column_of(ln) == 1 and ln.x1 - ln.x0 > 0.28 * span)
    # A short right column (the last page, a one-page paper) still makes two columns when nothing
    # but a few lines crosses the gutter.
    right = sum(1 for ln in lines if column_of(ln) == 1 and len(ln.text) > 10)
    crossing = sum(1 for ln in lines if column_of(ln) == -1 and len(ln.text) > 40)
    two_column = wide_left >= 3 and (wide_right >= 3 or (right >= 3 and crossing <= wide_left // 4))
    page = PageLines(number, width, height, [], two_column)
    if not two_column:
        page.lines = sorted(lines, key=lambda ln: (ln.y0, ln.x0))
        for ln in page.lines:
            ln.column = 0
        _column_edges(page, body)
        return page

    ordered: list[Line] = []
    band: list[Line] = []

    def flush() -> None:
        for part in _split_at_gaps(band, body):
            for col in (0, 1):
                ordered.extend(sorted((ln for ln in part if ln.column == col), key=lambda ln: (ln.y0, ln.x0)))
        band.clear()

    for ln in lines:
        ln.column = column_of(ln)
    _widen_full_width_blocks(lines, body)
    _beside_a_sidebar(lines)
    wide: list[Line] = []
    for ln in sorted(lines, key=lambda ln: (ln.y0, ln.x0)):
        if ln.column == -1:
            flush()
            wide.append(ln)
        else:
            ordered.extend(_side_by_side(wide))
            wide = []
            band.append(ln)
    flush()
    ordered.extend(_side_by_side(wide))
    page.lines = ordered
    _column_edges(page, body)
    return page


def _split_at_gaps(band: list[Line], body: float) -> list[list[Line]]:
    """Cut a two-column band where both columns end level, a wide blank follows, and both start again level.

    Text above such a gap is finished before what stands below it starts: a reference list set in two
    columns under the last section's balanced columns reads after both columns of the section, not in
    the middle of it. Columns that merely pause at the same height (a heading in each, a figure in one
    and a caption in the other) do not end and restart level, so they stay one band.
    """
    lines = sorted(band, key=lambda ln: (ln.y0, ln.x0))
    first_below: list[dict[int, float]] = [{} for _ in range(len(lines) + 1)]  # column -> top, lines i..
    for i in range(len(lines) - 1, -1, -1):
        first_below[i] = {**first_below[i + 1], lines[i].column: lines[i].y0}
    parts: list[list[Line]] = []
    part: list[Line] = []
    last_above: dict[int, float] = {}  # column -> bottom, lines of this part
    for i, ln in enumerate(lines):
        below = first_below[i]
        if (
            len(last_above) == 2
            and len(below) == 2
            and ln.y0 - max(last_above.values()) >= _BAND_GAP * body
            and abs(last_above[0] - last_above[1]) <= 1.5 * body
            and abs(below[0] - below[1]) <= 1.5 * body
        ):
            parts.append(part)
            part, last_above = [], {}
        part.append(ln)
        last_above[ln.column] = max(last_above.get(ln.column, -1e9), ln.y1)
    parts.append(part)
    return parts


def _beside_a_sidebar(lines: list[Line]) -> None:
    """A wide line that starts right of a left-column block beside it (a sidebar of editors and addresses
    next to the abstract, as Frontiers sets it) is the right-hand block, not a line across the page."""
    left = [ln for ln in lines if ln.column == 0]
    flagged: dict[int, list[Line]] = {}
    for ln in lines:
        if ln.column != -1:
            continue
        beside = [x for x in left if x.y0 < ln.y1 + 2 * ln.height and x.y1 > ln.y0 - 2 * ln.height]
        if beside and all(x.x1 < ln.x0 for x in beside):
            flagged.setdefault(round(ln.x0 / 4), []).append(ln)
    # A block of text, flush on one left edge: a single centred line (a venue under the title) stays.
    for block in flagged.values():
        if len(block) >= 3:
            for ln in block:
                ln.column = 1


def _side_by_side(run: list[Line]) -> list[Line]:
    """A full-width band made of two blocks side by side (Elsevier's "article info | abstract") reads left
    block, then right block, not line by line across both."""
    if len(run) < 6:
        return run
    for gutter in sorted({round(ln.x1) + 2 for ln in run}):
        left = [ln for ln in run if ln.x1 < gutter]
        right = [ln for ln in run if ln.x0 > gutter]
        if len(left) + len(right) == len(run) and len(left) >= 3 and len(right) >= 3:
            top, bottom = (
                max(min(x.y0 for x in left), min(x.y0 for x in right)),
                min(max(x.y1 for x in left), max(x.y1 for x in right)),
            )
            if bottom > top:  # the blocks stand beside each other, not one above the other
                for ln in left:
                    ln.column = 0
                for ln in right:
                    ln.column = 1
                return left + right
    return run


def _widen_full_width_blocks(lines: list[Line], body: float) -> None:
    """Small type stacked against a full-width line belongs to it (a wide table or caption).

    The cells of a table spanning both columns each fit in one column; left alone they
    would be read column by column, splitting the table's rows.
    """
    changed = True
    while changed:
        changed = False
        wide = [ln for ln in lines if ln.column == -1]
        for ln in lines:
            if ln.column == -1 or ln.head_size > body - 0.4:
                continue
            if any(
                -1.5 * ln.size < ln.y0 - w.y1 < 1.5 * ln.size or -1.5 * ln.size < w.y0 - ln.y1 < 1.5 * ln.size
                for w in wide
                if w.size < body - 0.4
            ):
                ln.column = -1
                changed = True


def _column_edges(page: PageLines, body: float) -> None:
    for col in (-1, 0, 1):
        body_lines = [ln for ln in page.lines if ln.column == col and abs(ln.size - body) < 0.6]
        if body_lines:
            # The leftmost edge that many lines share: lists and indented paragraphs sit right of it.
            counts = Counter(round(ln.x0) for ln in body_lines)
            common = [x for x, c in counts.items() if c >= max(2, 0.15 * len(body_lines))]
            page.column_left[col] = min(common) if common else counts.most_common(1)[0][0]
            page.column_right[col] = max(ln.x1 for ln in body_lines)
