"""Section headings from every signal a careful reader uses, not from bold or large type alone.

A line is a heading candidate when it stands apart (a block of its own, aligned with its column or
centred, alone on its row, outside figures, not a caption, table-of-contents entry or formula). It is
accepted when it carries a number that fits the paper's numbering, or is a known section name, in a
type that differs from the body (weight, size, capitals, small caps, italics, font, centring); or when
its type is one the paper uses for such headings, or one the paper repeats for short stand-alone lines.
Levels come from the numbering, else from how the heading types nest.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .captions import FLOAT_LABEL, starts_caption
from .categories import known_heading
from .layout import Line, PageLines, inside
from .models import SectionCategory as Cat
from .numbering import Numbering, parse_heading
from .outline import OutlineMatch, fold, match_outline

_GAP = 0.5  # vertical space, in body sizes, that sets a block apart
_OPERATORS = re.compile(r"[=+<>\u2212\u00d7\u00f7\u2264\u2265\u2211\u222b\u2192\u2208\u2248\u00b1^_|/\\]")
_TOP_NAMES = re.compile(
    r"^(abstract|introduction|references?|bibliography|acknowledge?ments?|appendix|conclusions?)$", re.I
)
_RUNNING_ON = re.compile(r"(\b(a|an|the|of|and|or|is|are|to|in|for|with|by|on|at|from|that|which|pages)|[a-z]-)$")
_AFFILIATION = re.compile(
    r"@|\b(universit(y|ies|[äàé]t?)|institute|department|laborator(y|ies)|school\s+of|college|inc\.|gmbh)\b", re.I
)
_PAGE_NO = re.compile(r"^(\d{1,3}|[ivxlc]{1,6})$", re.I)
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


@dataclass(frozen=True)
class Hit:
    """A heading found at a line: how many lines it spans, its level, and its text."""

    n_lines: int
    level: int
    title: str
    runin_spans: int = 0  # > 0: a run-in heading, the first spans of its line; the rest is body text


@dataclass
class _Cand:
    i: int
    n: int
    text: str
    num: Numbering
    size: float  # relative to the body
    bold: bool
    italic: bool
    caps: bool
    small_caps: bool
    font_diff: bool
    centered: bool
    gap_above: float
    style: tuple[str, float, bool, bool, bool]
    named: Cat | None
    runin_spans: int = 0
    numbered: bool = False
    level: int | None = None
    accepted_by: str = ""
    path: tuple[int, ...] = field(default_factory=tuple)

    @property
    def strong(self) -> bool:
        return self.size >= 1.12 or self.bold or self.caps or self.small_caps

    @property
    def distinct(self) -> bool:
        return self.strong or self.italic or self.font_diff or self.centered or self.size >= 1.05


def find_headings(
    pages: list[PageLines], body: float, body_font: str, leading: float, toc: list[list[object]], title: str
) -> dict[int, Hit]:
    """Headings of a paper: index of the first line in reading order -> Hit.

    `leading` is the usual space between lines of a paragraph; `toc` the PDF outline (may be empty);
    `title` the paper's title, which outlines often list.
    """
    lines = [ln for p in pages for ln in p.lines]
    page_of = {p.number: p for p in pages}
    finder = _Finder(lines, page_of, body, body_font, leading)
    outline = match_outline(lines, toc, title, finder.toc) if toc else None
    return finder.run(outline)


class _Finder:
    def __init__(
        self, lines: list[Line], page_of: dict[int, PageLines], body: float, body_font: str, leading: float
    ) -> None:
        self.lines = lines
        # Gaps are measured as if the paper were single-spaced: double-spaced preprints space every line.
        self.extra_gap = max(0.0, leading - 0.25 * body)
        self.page_of = page_of
        self.body = body
        self.body_font = body_font
        self.toc = self._toc_lines()

    # -- candidates ---------------------------------------------------------------------------

    def run(self, outline: OutlineMatch | None) -> dict[int, Hit]:
        cands = self._candidates(outline)
        trusted = outline is not None and outline.share >= 0.6 and len(outline.hits) >= 3
        accepted: list[_Cand] = []
        for c in cands:
            if outline is not None and c.i in outline.hits:
                c.level, c.accepted_by = outline.hits[c.i][0], "outline"
            elif c.runin_spans:
                c.accepted_by = "runin" if not trusted else ""
            elif c.numbered and c.distinct and not trusted:
                c.accepted_by = "number"
            elif c.named is not None and (c.distinct or c.gap_above >= 0.8):
                c.accepted_by = "name"
            elif c.numbered and not trusted and c.gap_above >= 0.8 and self._plain_ok(c):
                c.accepted_by = "sequence"  # body type: only if the numbering says so (checked below)
            if c.accepted_by:
                accepted.append(c)
        accepted = self._check_sequence(accepted)
        accepted = self._add_outline_styled(cands, accepted) if trusted else self._add_styled(cands, accepted)
        accepted = self._drop_front_matter(accepted)
        self._levels(accepted)
        self.accepted = accepted
        return {c.i: Hit(c.n, c.level or 0, c.text, c.runin_spans) for c in accepted}

    def _candidates(self, outline: OutlineMatch | None) -> list[_Cand]:
        out: list[_Cand] = []
        i = 0
        forced = outline.hits if outline is not None else {}
        while i < len(self.lines):
            if i in forced:
                n = forced[i][1]
                c = self._features(i, n)
                out.append(c)
                i += n
                continue
            found = self._candidate(i)
            if found is not None:
                out.append(found)
                i += found.n
            else:
                i += 1
        return out

    def _candidate(self, i: int) -> _Cand | None:
        ln = self.lines[i]
        if i in self.toc or starts_caption(ln, self.body) or FLOAT_LABEL.match(ln.text) or ln.size < 0.7 * self.body:
            return None
        text = ln.text
        if not self._starts_block(i):
            return None
        runin = self._runin(i)
        if runin:
            c = self._features(i, 1, runin)
            # An unnumbered bold or italic lead ("Datasets. We use ...") is a paragraph label, and so is
            # "J. Neurosci." in a reference: decimal numbering makes a run-in heading.
            # So does back matter (acknowledgments, funding), a section however it is set, when it runs into its text
            # without a stop ("Acknowledgments We thank ..."). A topic so set ("Benchmarks The dataset ...", LaTeX's
            # \paragraph) labels a paragraph, as any lead with a stop does ("Results. We ...").
            if c.numbered:
                return c if c.num.style in ("arabic", "paren", "appendix") and c.num.depth >= 0 else None
            stop = re.search(r"[.:]$", "".join(s.text for s in ln.spans[:runin]).strip())
            return c if c.named is Cat.OTHER and c.bold and not stop else None
        if self._footnote(ln):
            return None
        n = self._extent(i)
        c = self._features(i, n)
        words = c.text.split()
        if not 2 <= len(c.text) <= 150 or len(words) > 18 or not re.search(r"[^\W\d_]{2}", c.text):
            return None
        if re.match(r"\d+:\s", text):
            return None  # a numbered line of an algorithm listing
        if re.search(r"[,;]$", c.text) or (
            re.match(r"[a-z]", c.num.name) and not re.match(r"[a-z]+[A-Z_(]", c.num.name)
        ):
            return None  # headings start with a capital, or with a code name ("3.1. readData")
        if c.text.endswith(".") and len(words) > (6 if c.numbered or c.named else 3):
            return None  # a sentence (or a numbered list item), not a title
        if c.text.count(",") >= 3 and not c.numbered:
            return None  # a list of names: authors, affiliations, a reference
        if ln.page == 1 and _AFFILIATION.search(c.text):
            return None  # "1 Saarland University, ..." under the title: an affiliation, not section 1
        if _RUNNING_ON.search(c.text):
            return None  # a line broken mid-sentence: "... the sensitivity of f is", "the aggre-"
        if self._mathy(i, n) or not self._placed(i) or not self._ends_block(i + n - 1):
            return None
        if not self._alone_on_row(i):
            return None
        return c

    def _features(self, i: int, n: int, runin_spans: int = 0) -> _Cand:
        ln = self.lines[i]
        if runin_spans:
            spans = ln.spans[:runin_spans]
            text = re.sub(r"[.:\s]+$", "", "".join(s.text for s in spans).strip())
            text = " ".join(text.split())
        else:
            text = " ".join(x.text for x in self.lines[i : i + n])
        num = parse_heading(text)
        letters = [ch for ch in num.name if ch.isalpha()]
        caps = len(letters) >= 3 and all(ch.isupper() for ch in letters if ch.isascii())
        size = ln.head_size / self.body
        prev = self.lines[i - 1] if i else None
        if prev is None or prev.page != ln.page or prev.column != ln.column:
            gap = 9.0
        else:
            gap = (ln.y0 - prev.y1 - self.extra_gap) / self.body
        bold = ln.share("bold") >= 0.6
        italic = ln.share("italic") >= 0.8 if not runin_spans else all(s.italic for s in ln.spans[:runin_spans])
        if runin_spans:
            bold = all(s.bold for s in ln.spans[:runin_spans] if s.text.strip())
        font = ln.font
        c = _Cand(
            i=i,
            n=n,
            text=text,
            num=num,
            size=round(size, 2),
            bold=bold,
            italic=italic,
            caps=caps,
            small_caps=ln.small_caps,
            font_diff=bool(font) and font != self.body_font and ln.math_share < 0.3,
            centered=self._centered(i),
            gap_above=gap,
            style=(font, round(ln.head_size * 2) / 2, bold, italic, caps or ln.small_caps),
            named=_named(num),
            runin_spans=runin_spans,
        )
        c.numbered = num.number is not None and num.style != "none" and self._plausible_number(num)
        return c

    # -- geometry and text signals ----------------------------------------------------------

    def _edges(self, ln: Line) -> tuple[float, float]:
        page = self.page_of[ln.page]
        left = page.column_left.get(ln.column, page.column_left.get(0, ln.x0))
        right = page.column_right.get(ln.column, page.column_right.get(0, ln.x1))
        return left, max(right, left + 1.0)

    def _text_edges(self, i: int) -> tuple[float, float]:
        """Left and right edges of the running text around line i (the column when there is none)."""
        ln = self.lines[i]
        near = [
            x
            for x in (*self.lines[i + 1 : i + 6], *reversed(self.lines[max(0, i - 5) : i]))
            if x.page == ln.page
            and x.column == ln.column
            and x.size >= 0.75 * self.body
            and len(x.text) >= 25
            and x.x0 < ln.x1
            and x.x1 > ln.x0  # the same block of text, not a sidebar beside it
        ]
        if len(near) < 2:
            return self._edges(ln)
        return min(x.x0 for x in near), max(x.x1 for x in near)

    def _centered(self, i: int) -> bool:
        """Centred in its column, or in the running text around it (columns are not always found)."""
        ln = self.lines[i]
        for left, right in (self._edges(ln), self._text_edges(i)):
            width = right - left
            if ln.x0 > left + 0.05 * width and abs((ln.x0 + ln.x1) / 2 - (left + right) / 2) < 0.06 * width:
                return True
        return False

    def _full(self, ln: Line) -> bool:
        left, right = self._edges(ln)
        return ln.x1 > right - 0.12 * (right - left)

    def _placed(self, i: int) -> bool:
        """Flush with the column's left edge (or a little indented), or centred in it."""
        ln = self.lines[i]
        lefts = (self._edges(ln)[0], self._text_edges(i)[0])
        if any(-2 * self.body <= ln.x0 - left <= 3 * self.body for left in lefts) or self._centered(i):
            return not any(inside(ln, box) for box in self.page_of[ln.page].figures)
        return False

    def _starts_block(self, i: int) -> bool:
        ln = self.lines[i]
        prev = self.lines[i - 1] if i else None
        if prev is None or prev.page != ln.page or prev.column != ln.column:
            return True
        gap = ln.y0 - prev.y1 - self.extra_gap
        if gap > _GAP * self.body or gap < -0.5 * self.body:
            return True
        if _style(prev) != _style(ln):
            return True
        return not self._full(prev) and bool(re.search(r"[.!?:]['\")\]]?$", prev.text))

    def _ends_block(self, j: int) -> bool:
        ln = self.lines[j]
        nxt = self.lines[j + 1] if j + 1 < len(self.lines) else None
        if nxt is None or nxt.page != ln.page or nxt.column != ln.column:
            return True
        gap = nxt.y0 - ln.y1 - self.extra_gap
        return gap > 0.4 * self.body or _style(nxt) != _style(ln) or not self._full(ln)

    def _extent(self, i: int) -> int:
        """Lines a heading spans: it wraps when the next line's first word would not fit on its line."""
        ln = self.lines[i]
        n = 1
        while n < 3 and i + n < len(self.lines):
            nxt, last = self.lines[i + n], self.lines[i + n - 1]
            same = _style(nxt) == _style(ln) and nxt.page == ln.page and nxt.column == ln.column
            gap = nxt.y0 - last.y1
            if not same or not -0.2 * ln.size <= gap < 0.8 * ln.size + self.extra_gap:
                break
            if parse_heading(nxt.text).number is not None:
                break
            if ln.bold and not nxt.bold:
                break  # a line that leaves the heading's bold midway is a paragraph with a run-in lead
            if self._centered(i + n - 1):
                if not self._centered(i + n) or _upper(nxt.text) != _upper(ln.text):
                    break  # a centred heading ends where the left-aligned or lower-case text begins
                n += 1  # a centred heading broken over lines ("APPENDIX A" / "PROOF OF THE ...")
                continue
            _, right = self._edges(last)
            word = nxt.text.split()[0]
            word_width = (nxt.x1 - nxt.x0) * (len(word) + 1) / max(len(nxt.text), 1)
            if right - last.x1 > word_width + 0.5 * ln.size:
                break  # the word would have fit: the next line is a new block
            n += 1
        return n

    def _alone_on_row(self, i: int) -> bool:
        """No other text on the heading's row in its column: table cells and contents entries share rows."""
        ln = self.lines[i]
        mid = (ln.y0 + ln.y1) / 2
        for other in self.page_of[ln.page].lines:
            if other is ln or abs((other.y0 + other.y1) / 2 - mid) > 0.4 * max(ln.height, 1.0):
                continue
            if other.height > 1.6 * ln.height and len(other.text) <= 2:
                continue  # a drop capital beside the heading
            if abs(other.size - ln.size) > 0.15 * ln.size:
                continue  # a sidebar or margin note in other type
            if ln.column == -1 or other.column in (ln.column, -1):
                return False
        return True

    def _mathy(self, i: int, n: int) -> bool:
        """Formulas are never headings: math fonts, or operators with hardly a word."""
        lines = self.lines[i : i + n]
        if any(ln.math_share >= 0.3 for ln in lines):
            return True
        text = " ".join(ln.text for ln in lines)
        words = re.findall(r"[^\W\d_]{3,}", text)
        name = parse_heading(text).name
        return bool(_OPERATORS.search(name) or re.search(r"\s[-*]\s", name)) and len(words) <= 1

    def _runin(self, i: int) -> int:
        """Spans of a run-in lead set apart by its type: "8.1. Bold versions of symbols. In the ..."."""
        spans = self.lines[i].spans
        # The number may be set in the body type, the name in bold: "8.1. Bold versions ..." (amsart).
        k = 0
        while k < len(spans) and re.fullmatch(r"\s*([A-Z]\.)?[\d.)]*\s*", spans[k].text):
            k += 1
        if k >= len(spans) - 1:
            return 0
        # Code names inside a bold lead ("9.12. \mod and its relatives.") are set in typewriter.
        first = next((s for s in spans[k:] if s.text.strip() and not s.mono), spans[k])
        styled = (lambda s: s.bold) if first.bold else (lambda s: s.italic) if first.italic else None
        if styled is None:
            return 0
        chars = marked = 0
        for j in range(k, len(spans)):
            n = len(spans[j].text.strip())
            chars += 0 if spans[j].mono else n  # code names neither make nor break the lead
            marked += n if styled(spans[j]) else 0
            ends = styled(spans[j]) and re.search(r"[.:]$", spans[j].text.strip())
            if ends and (j + 1 == len(spans) or not styled(spans[j + 1])):
                lead = "".join(s.text for s in spans[: j + 1]).strip()
                rest = "".join(s.text for s in spans[j + 1 :]).split()
                if marked < 0.5 * chars or len(lead.split()) > 12 or not rest or rest[0][:1].islower():
                    return 0  # "3. Extract: the system takes ...": an item of a list that runs on lower-case
                if not re.search(r"[^\W\d_]{2}", parse_heading(lead).name):
                    return 0  # "3.1." alone in bold: the name follows in another type
                return j + 1
            if not styled(spans[j]) and not spans[j].mono and spans[j].text.strip():
                # A section every paper may have, set in bold and run into its text without a stop ("Acknowledgments
                # We would like to thank", ACL's style): its name is the lead.
                lead = "".join(s.text for s in spans[:j]).strip()
                return j if j > k and known_heading(lead) is not None and len(lead.split()) <= 3 else 0
        return 0

    def _footnote(self, ln: Line) -> bool:
        """Small type opening with a note mark ("1Code is at ...", "*Equal contribution"), or at a page's foot."""
        if ln.size >= 0.95 * self.body:
            return False
        if re.match(r"\d{1,2}[A-Za-z]|[*\u2217\u2020\u2021]", ln.text):
            return True
        low = ln.y0 > 0.72 * self.page_of[ln.page].height
        return low and ln.size < 0.92 * self.body and bool(re.match(r"\d{1,2}\s[A-Za-z]", ln.text))

    def _plain_ok(self, c: _Cand) -> bool:
        """A heading in body type must look like one: short, no sentence end, not a list item."""
        return not c.text.endswith(".") and len(c.text.split()) <= 10 and not self._full(self.lines[c.i + c.n - 1])

    def _plausible_number(self, num: Numbering) -> bool:
        if num.style == "arabic":
            parts = [int(x) for x in (num.number or "0").split(".")]
            return parts[0] <= 30 and all(x <= 40 for x in parts[1:])
        return True

    def _toc_lines(self) -> set[int]:
        """Lines of a printed table of contents: entries whose row ends with a page number."""
        toc: set[int] = set()
        for page in self.page_of.values():
            rows: dict[int, list[Line]] = {}
            for ln in page.lines:
                rows.setdefault(round((ln.y0 + ln.y1) / 4), []).append(ln)
            entries = []
            for row in rows.values():
                if len(row) >= 2:
                    row.sort(key=lambda x: x.x0)
                    if _PAGE_NO.match(row[-1].text) and re.search(r"[^\W\d_]{3}", row[0].text):
                        entries.extend(row)
                elif re.search(r"[^\W\d_]{3}.*?(\s\.){3,}\s*\d{1,3}$|[^\W\d_]{3}.*?\.{4,}\s*\d{1,3}$", row[0].text):
                    entries.extend(row)
            if len(entries) >= 6:
                ids = {id(x) for x in entries}
                toc.update(k for k, ln in enumerate(self.lines) if id(ln) in ids)
        # The "Contents" title right before the entries goes with them.
        for k in sorted(toc):
            if k > 0 and k - 1 not in toc and re.fullmatch(r"(table\s+of\s+)?contents", self.lines[k - 1].text, re.I):
                toc.add(k - 1)
        return toc

    # -- acceptance -----------------------------------------------------------------------

    def _check_sequence(self, accepted: list[_Cand]) -> list[_Cand]:
        """Numbered headings in body-like type must continue the numbering (1, 2, 2.1, 2.2, 3 ...)."""
        roman_paper = sum(1 for c in accepted if c.numbered and c.num.style == "roman") >= 2
        stack: list[int] = []
        kept = []
        for c in accepted:
            if not c.numbered:
                kept.append(c)
                continue
            path = _path(c.num, stack, roman_paper)
            fits = path is not None and _fits(stack, path)
            if c.accepted_by == "sequence" and not stack:
                fits = False  # body type opening a numbering: a list, not a section
            # Letters number appendices (A, B ...) and IEEE subsections: "K. Laborator" on a title page is a name.
            weak = c.accepted_by in ("sequence", "runin") or not c.strong or c.num.style == "letter"
            if c.accepted_by == "outline" or fits or (not weak and path is not None):
                c.path = path or ()
                stack = list(path) if path is not None else stack
                kept.append(c)
            elif not weak:
                kept.append(c)
        return kept

    def _add_styled(self, cands: list[_Cand], accepted: list[_Cand]) -> list[_Cand]:
        """Unnumbered, unnamed lines whose type the paper uses for headings."""
        chosen = {c.i for c in accepted}
        numbered_doc = sum(1 for c in accepted if c.numbered and c.num.style in ("arabic", "roman")) >= 3
        styles = {c.style for c in accepted if c.accepted_by != "sequence"}
        loose = [
            c for c in cands if c.i not in chosen and not c.numbered and not c.runin_spans and self._next_is_body(c)
        ]
        repeats = Counter(c.style for c in loose)
        out = list(accepted)
        for c in loose:
            emphasised = c.strong or (c.italic and c.size >= 0.98) or (c.font_diff and c.size >= 0.9)
            if not emphasised or c.text.endswith((".", ":")) or self.lines[c.i].share("mono") >= 0.5:
                continue  # code and verbatim lines are set apart too, and "Affiliation:" labels what follows
            full = self._full(self.lines[c.i])
            if c.n == 1 and not (c.bold or c.caps) and full and len(c.text.split()) >= 6 and c.size < 1.05:
                continue  # a line of running text that fills its column (a long heading is set larger)
            if numbered_doc:
                # Below numbered subsections, unnumbered lines are paragraph heads unless set larger.
                ok = c.size >= 1.05 and (c.style in styles or repeats[c.style] >= 2)
            elif c.style in styles:
                ok = True
            else:
                ok = c.size >= 1.12 or repeats[c.style] >= 2
            if ok:
                c.accepted_by = "style"
                out.append(c)
        out.sort(key=lambda c: c.i)
        return out

    def _add_outline_styled(self, cands: list[_Cand], accepted: list[_Cand]) -> list[_Cand]:
        """Headings a trusted outline leaves out, set in the very type of those it lists: LaTeX's outline omits
        unnumbered sections (\\section*), an appendix's among them."""
        listed = {c.style for c in accepted if c.accepted_by == "outline"}
        # Set apart from the text above as the listed headings are (the tightest of them, give or take).
        gap = 0.8 * min((c.gap_above for c in accepted if c.accepted_by == "outline"), default=0.0)
        chosen = {c.i for c in accepted}
        # A heading is printed once: a line repeating one the outline placed is a printed contents' entry.
        placed = {fold(c.text) for c in accepted}
        out = list(accepted)
        for c in cands:
            if c.i in chosen or c.runin_spans or c.style not in listed or not c.strong or c.gap_above < gap:
                continue
            if fold(c.text) in placed:
                continue
            if c.text.endswith((".", ":")) or not self._next_is_body(c):
                continue
            c.accepted_by = "style"
            out.append(c)
        out.sort(key=lambda c: c.i)
        return out

    def _next_is_body(self, c: _Cand) -> bool:
        """What follows a heading is a paragraph (or another heading), not more labels."""
        j = c.i + c.n
        if j >= len(self.lines):
            return False
        nxt = self.lines[j]
        return len(nxt.text) >= 25 or (_style(nxt) != _style(self.lines[c.i]) and nxt.size >= 0.9 * self.body)

    def _drop_front_matter(self, accepted: list[_Cand]) -> list[_Cand]:
        """Before the first numbered or named heading, styled lines are the title block, not sections."""
        first = next((k for k, c in enumerate(accepted) if c.accepted_by != "style"), len(accepted))
        return [c for k, c in enumerate(accepted) if k >= first or c.accepted_by != "style"]

    # -- levels -----------------------------------------------------------------------------

    def _levels(self, accepted: list[_Cand]) -> None:
        """Numbered: the numbering's depth. Outline: its level. Else how the heading types nest."""
        style_level: dict[tuple[str, float, bool, bool, bool], int] = {}
        for c in accepted:
            if c.level is None and c.path:
                c.level = min(len(c.path) - 1, 2)
            if c.level is not None and (c.numbered or c.accepted_by == "outline"):
                style_level.setdefault(c.style, c.level)
        stack: list[tuple[str, float, bool, bool, bool]] = []
        for c in accepted:
            if c.level is None:
                if c.style in style_level:
                    c.level = style_level[c.style]
                elif _TOP_NAMES.match(c.num.name.strip(" .:")):
                    c.level = 0
                else:
                    level = len(stack)
                    while level > 0 and _prominence(c.style) >= _prominence(stack[level - 1]):
                        level -= 1
                    c.level = min(level, 2)
                style_level.setdefault(c.style, c.level)
            stack = [*stack[: c.level], c.style]


def _named(num: Numbering) -> Cat | None:
    """The category a heading's name gives it; "Appendix. Model specification" is named by its first word."""
    named = known_heading(num.name)
    return Cat.OTHER if named is None and num.style == "appendix" else named


def _style(ln: Line) -> tuple[str, float, bool]:
    return ln.font, round(ln.head_size * 2) / 2, ln.share("bold") >= 0.6


def _prominence(style: tuple[str, float, bool, bool, bool]) -> tuple[bool, float, bool]:
    _, size, bold, _, caps = style
    return caps, size, bold


def _upper(text: str) -> bool:
    """Mostly capitals: a caps heading's second line, not the sentence that follows it."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(ch.isupper() for ch in letters) >= 0.5 * len(letters)


def _roman(text: str) -> int:
    total = 0
    for a, b in zip(text, text[1:] + " ", strict=True):
        va, vb = _ROMAN.get(a, 0), _ROMAN.get(b, 0)
        total += -va if va < vb else va
    return total


def _path(num: Numbering, stack: list[int], roman_paper: bool) -> tuple[int, ...] | None:
    """Where a number sits in the paper's numbering: "3.2" -> (3, 2); "B" under "II" in IEEE style -> (2, 2)."""
    number = num.number or ""
    if num.style == "arabic":
        parts = tuple(int(x) for x in number.split("."))
        if roman_paper and len(parts) == 1:  # "1." below "A." (or below "Appendix B") in a roman-numbered paper
            return (*stack[:2], parts[0]) if stack else None
        return parts
    if num.style == "paren":
        return (*stack[:2], int(number)) if stack else None
    if num.style == "roman":
        return (_roman(number),)
    if num.style == "letter" and roman_paper:
        return (*stack[:1], ord(number) - 64) if stack else None
    if num.style in ("letter", "appendix"):
        parts_a = number.split(".")
        if not parts_a[0].isalpha():
            return None
        return (100 + ord(parts_a[0].upper()) - 64, *(int(x) for x in parts_a[1:] if x.isdigit()))
    return None


def _fits(stack: list[int], path: tuple[int, ...]) -> bool:
    """True when `path` can follow `stack`: the next sibling at some depth, or a first child."""
    depth = len(path) - 1
    if path[0] > 100 and depth == 0:  # appendix letters: A first, then B, C ...
        return path[0] == 101 or (bool(stack) and path[0] == stack[0] + 1)
    if not stack:
        return all(x <= 1 for x in path)
    if tuple(stack) == path[:-1] and path[-1] in (0, 1):
        return True  # first child: 3 -> 3.1
    for d in range(min(depth + 1, len(stack))):
        # next sibling at depth d, then first children: 3.2 -> 3.3, 3.2 -> 4, 3.2 -> 4.1 (4 missed);
        # one number may be skipped, for a heading this parser did not see.
        step = path[d] - stack[d]
        if tuple(stack[:d]) == path[:d] and step in (1, 2) and all(x == 1 for x in path[d + 1 :]):
            return True
    return False
