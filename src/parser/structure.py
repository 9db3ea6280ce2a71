"""Assemble a Paper from headings and text blocks in reading order (PDF and Markdown alike)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from .categories import HeadingInfo, classify_sections, match_category
from .models import Box, Paper, Paragraph, Section, Table
from .models import SectionCategory as Cat
from .numbering import Numbering, parse_heading

_RUN_IN_ABSTRACT = re.compile(r"^(abstract|摘\s*要)(?:\s*[\u2014\u2013\-:.：]+\s*|\s+(?=[A-Z]))", re.I)
_INTRO_LEAD = re.compile(r"^(1\.?\s*|I\.\s*)?(introduction|引\s*言|绪\s*论|前\s*言)\b", re.I)
_SECTION_LEAD = re.compile(r"^(\d{1,2}\.?\s+[A-Z]|(II|III|IV)\.\s|[二三四五六七八九]、)")
_ADDRESS = re.compile(r"@|\b(universit\w*|institute|department|correspondence|e-?mail)\b", re.I)
_KEYWORDS = re.compile(r"^(keywords|key\s*words|index\s+terms|ccs\s+concepts|acm\s+reference)", re.I)


@dataclass
class Heading:
    """A section heading as found in the source."""

    text: str
    page: int
    level: int | None = None  # given by the source (outline, Markdown depth), else inferred
    size: float = 0.0
    printed: bool = True  # False when the parser supplied it (an abstract without a heading)
    numbering: Numbering = field(init=False)

    def __post_init__(self) -> None:
        self.numbering = parse_heading(self.text)


@dataclass
class Text:
    """A paragraph, caption or table as found in the source, with the boxes of its lines (PDF only)."""

    text: str
    page: int
    page_end: int
    kind: Literal["body", "caption", "table"] = "body"
    boxes: list[Box] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # where each box's line begins in `text`
    table: Table | None = None

    def after(self, n: int) -> Text:
        """The text from character `n` on (a run-in label cut off), its boxes kept."""
        starts = [max(0, s - n) for s in self.starts]
        return Text(self.text[n:], self.page, self.page_end, self.kind, self.boxes, starts)


Item = Heading | Text


def assemble(items: list[Item], *, title: str, authors: list[str], year: int | None, pages: int, source: str) -> Paper:
    """Build the section tree, categories, abstract and caption links."""
    first_heading = next((i for i, it in enumerate(items) if isinstance(it, Heading)), len(items))
    if first_heading == len(items):
        return _unstructured(items, title=title, authors=authors, year=year, pages=pages, source=source)
    front = [it for it in items[:first_heading] if isinstance(it, Text)]
    body = items[first_heading:]
    has_abstract_heading = any(
        isinstance(it, Heading) and match_category(it.numbering.name) is Cat.ABSTRACT for it in body
    )
    if not has_abstract_heading:
        abstract = _abstract_from_front(front)
        if abstract:
            body = [Heading("Abstract", abstract[0].page, 0, printed=False), *abstract, *body]
    return _paper(body, title=title, authors=authors, year=year, pages=pages, source=source)


def _unstructured(
    items: list[Item], *, title: str, authors: list[str], year: int | None, pages: int, source: str
) -> Paper:
    """A paper without a single heading found: its abstract, an Introduction where the text names one, the rest."""
    texts = [it for it in items if isinstance(it, Text)]
    opening = texts[: max(8, len(texts) // 5)]
    at = next((k for k, t in enumerate(opening) if _RUN_IN_ABSTRACT.match(t.text)), None)
    if at is None:
        at = next((k for k, t in enumerate(opening) if t.kind == "body" and len(t.text.split()) >= 60), None)
    abstract: list[Text] = []
    if at is not None:
        m = _RUN_IN_ABSTRACT.match(texts[at].text)
        first = texts[at]
        abstract = [first.after(m.end()) if m else first]
    before = texts[:at] if at is not None else []
    rest = texts[at + 1 :] if at is not None else texts
    body: list[Item] = []
    if before:  # a plain text file's opening lines, a PDF's title block: kept, not guessed at
        body += [Heading("Text", before[0].page, 0, printed=False), *before]
    if abstract:
        body += [Heading("Abstract", abstract[0].page, 0, printed=False), *abstract]
    intro = next((k for k, t in enumerate(rest) if _INTRO_LEAD.match(t.text)), None)
    if intro is not None:
        # The introduction runs to the next paragraph that opens a section in the running text, at most a
        # quarter of what is left: the text says where it begins, not where it ends.
        end = next((k for k in range(intro + 1, len(rest)) if _SECTION_LEAD.match(rest[k].text)), len(rest))
        end = min(end, intro + 1 + max(3, (len(rest) - intro) // 4))
        body += [*rest[:intro], Heading("Introduction", rest[intro].page, 0, printed=False), *rest[intro:end]]
        rest = rest[end:]
    if rest or not body:
        body += [Heading("Text" if not before else "Body", rest[0].page if rest else 1, 0, printed=False), *rest]
    return _paper(body, title=title, authors=authors, year=year, pages=pages, source=source)


def _paper(body: list[Item], *, title: str, authors: list[str], year: int | None, pages: int, source: str) -> Paper:
    if not any(isinstance(it, Heading) for it in body):
        body = [Heading("Text", body[0].page if body else 1, 0, printed=False), *body]

    headings = [it for it in body if isinstance(it, Heading)]
    sections = _sections(headings)
    paragraphs: list[Paragraph] = []
    current = -1
    for it in body:
        if isinstance(it, Heading):
            current += 1
            continue
        paragraphs.append(
            Paragraph(
                text=it.text,
                page=it.page,
                page_end=it.page_end,
                section_id=current,
                kind=it.kind,
                boxes=it.boxes,
                box_starts=it.starts,
                table=it.table,
            )
        )
    _tie_captions(paragraphs)
    abstract_text = " ".join(
        p.text for p in paragraphs if sections[p.section_id].category is Cat.ABSTRACT and p.kind == "body"
    )
    return Paper(
        title=title,
        authors=authors,
        year=year,
        abstract=abstract_text,
        pages=pages,
        source=source,
        sections=sections,
        paragraphs=paragraphs,
    )


def _abstract_from_front(front: list[Text]) -> list[Text]:
    """Abstract paragraphs from the front matter: a run-in "Abstract—" or the longest block."""
    for i, t in enumerate(front):
        m = _RUN_IN_ABSTRACT.match(t.text)
        if m and len(t.text) > m.end() + 20:
            rest = [x for x in front[i + 1 :] if not _KEYWORDS.match(x.text) and len(x.text.split()) >= 25]
            return [t.after(m.end()), *rest]
    long = [t for t in front if t.kind == "body" and len(t.text.split()) >= 60]
    if long:
        # The longest paragraph, with the paragraphs of running text right before and after it: an abstract
        # broken by a page column or a sidebar ("Edited by: ...") comes in several pieces.
        at = front.index(max(long, key=lambda t: len(t.text)))
        lo, hi = at, at
        while lo > 0 and _abstract_piece(front[lo - 1]):
            lo -= 1
        while hi + 1 < len(front) and _abstract_piece(front[hi + 1]):
            hi += 1
        return front[lo : hi + 1]
    # A short abstract: the paragraphs that close the front matter, after the names and addresses.
    tail: list[Text] = []
    for t in reversed(front):
        if t.kind != "body" or _KEYWORDS.match(t.text) or len(t.text.split()) < 12:
            break
        tail.insert(0, t)
    return tail if sum(len(t.text.split()) for t in tail) >= 25 else []


def _abstract_piece(t: Text) -> bool:
    return (
        t.kind == "body"
        and len(t.text.split()) >= 25
        and not _KEYWORDS.match(t.text)
        and not _ADDRESS.search(t.text)  # the correspondence address of a sidebar
    )


def _sections(headings: list[Heading]) -> list[Section]:
    roman_paper = any(h.numbering.style == "roman" for h in headings)
    levels: list[int] = []
    numbers: list[str | None] = []
    appendix: list[bool] = []
    names: list[str] = []
    after_refs = False
    size_level = _levels_by_size(headings)
    for h in headings:
        num = h.numbering
        number, name, depth, is_appendix = num.number, num.name, num.depth, num.style == "appendix"
        if num.style == "letter":
            if roman_paper:
                depth = 1
            elif after_refs or (appendix and appendix[-1]):
                is_appendix = True
            else:
                number, name, depth = None, h.text, 0
        if h.level is not None:
            level = h.level
        elif number is not None:
            level = depth
        else:
            level = size_level.get(round(h.size, 1), 0)
        prev = levels[-1] if levels else -1
        level = max(0, min(level, prev + 1))
        if level == 0 and match_category(name) is Cat.OTHER and re.search(r"referenc|bibliograph", name, re.I):
            after_refs = True
        levels.append(level)
        numbers.append(number)
        appendix.append(is_appendix or (level > 0 and bool(appendix) and _parent_appendix(levels, appendix)))
        names.append(name)

    parents: list[int | None] = []
    for i, level in enumerate(levels):
        parents.append(next((j for j in range(i - 1, -1, -1) if levels[j] < level), None))
    infos = [HeadingInfo(names[i], levels[i], parents[i], appendix[i]) for i in range(len(headings))]
    cats = classify_sections(infos)
    return [
        Section(
            id=i,
            title=headings[i].text,
            number=numbers[i],
            level=levels[i],
            category=cats[i],
            page=headings[i].page,
            parent_id=parents[i],
            printed=headings[i].printed,
        )
        for i in range(len(headings))
    ]


def _levels_by_size(headings: list[Heading]) -> dict[float, int]:
    """Level of an unnumbered heading from its type size.

    A size used by numbered headings takes their level; the other sizes are ranked
    below the largest, biggest first (at most three levels).
    """
    known: dict[float, int] = {}
    for h in headings:
        if h.size and h.numbering.number is not None and h.numbering.style in ("arabic", "roman"):
            known.setdefault(round(h.size, 1), h.numbering.depth)
    # The abstract heading is often styled on its own; it says nothing about levels.
    ranked = [h for h in headings if h.size and match_category(h.numbering.name) is not Cat.ABSTRACT]
    others = sorted({round(h.size, 1) for h in ranked if round(h.size, 1) not in known}, reverse=True)
    for size in others:
        bigger = [lvl for s, lvl in known.items() if s > size]
        known[size] = min(2, max(bigger) + 1) if bigger else 0
    return known


def _parent_appendix(levels: list[int], appendix: list[bool]) -> bool:
    level = levels[-1]
    for j in range(len(appendix) - 1, -1, -1):
        if levels[j] < level:
            return appendix[j]
    return False


def _tie_captions(paragraphs: list[Paragraph]) -> None:
    """Attach each caption (a table's too) to the nearest body paragraph: of its section if it has one, else any."""
    for i, p in enumerate(paragraphs):
        if p.kind == "body":
            continue
        before = [q for q in reversed(paragraphs[:i]) if q.kind == "body"]
        after = [q for q in paragraphs[i + 1 :] if q.kind == "body"]
        same = [q for q in before[:1] + after[:1] if q.section_id == p.section_id]
        candidates = same or before[:1] or after[:1]
        if candidates:
            candidates[0].captions.append(p.table.caption if p.table is not None else p.text)
