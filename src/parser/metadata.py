"""Paper metadata: title, authors and year from PDF metadata and page 1."""

from __future__ import annotations

import re

from .categories import known_heading, match_category
from .layout import Line
from .text import normalize

_JUNK_TITLE = re.compile(
    r"(microsoft\s+word|\.docx?$|\.tex$|\.pdf$|^untitled|template|^title$|^paper$|^main$|^draft|"
    r"^[\w\-]+\.\w{2,4}$|^doi:|^arxiv:|^\d"
    # The venue, not the paper: "Proceedings of the 45th Annual Meeting of ...", "Journal of Hydrology".
    r"|^(proceedings|journal\s+of|transactions\s+on|ieee\s+transactions|conference|workshop|symposium)\b)",
    re.I,
)
_ARTICLE_TYPE = re.compile(
    r"(research|review|original|short|brief|technical|invited|regular)?\s*(article|paper|report|communication|"
    r"note|letter|review|research|perspective|commentary|editorial)s?",
    re.I,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_VENUES = (
    r"NeurIPS|NIPS|ICML|ICLR|ACL|EMNLP|NAACL|EACL|COLING|COLM|AAAI|IJCAI|KDD|SIGIR|WSDM|WWW|CIKM|ECIR|"
    r"CVPR|ICCV|ECCV|CHI|UIST|CSCW|OSDI|SOSP|NSDI|EuroSys|MLSys|VLDB|SIGMOD|ICDE|TACL|JMLR|UAI|AISTATS|"
    r"Interspeech|ICASSP|RecSys|TREC|CLEF|LREC|ISWC|JCDL"
)
_VENUE_YEAR = re.compile(rf"\b(?:{_VENUES})\s*['\u2019]?\s*((?:19|20)\d{{2}}|\d{{2}})\b")
_ARXIV = re.compile(r"arXiv:\s*(\d{2})(\d{2})\.\d{4,5}", re.I)
_PROCEEDINGS = re.compile(r"\b(?:Proceedings|Conference|Symposium|Workshop)\b.*?\b((?:19|20)\d{2})\b")
_COPYRIGHT = re.compile(r"(?:\u00a9|\(c\)|copyright)\s*((?:19|20)\d{2})", re.I)


# "Disk-Based Storage for Scalable Video - Circuits and Systems for Video Technology, IEEE Transactions on":
# some publishers append the journal to the metadata title.
_VENUE_SUFFIX = re.compile(
    r"\s+[-\u2013\u2014|]\s+[^-\u2013\u2014|]*\b(transactions|journal|proceedings|conference|symposium|letters|"
    r"magazine|review)\b[^-\u2013\u2014|]*$",
    re.I,
)
# Footnote marks a title carries for its \thanks ("... LATEX class\u2020", "... Linebreak\u2217").
_TITLE_MARKS = re.compile(r"[\s*\u2217\u2020\u2021\u00a7\u00b6\u22c6\u2605]+$")


def metadata_title(meta: dict[str, str] | None, page_one_text: str) -> str | None:
    """The metadata title when it is a real one (not a file name, present on page 1), without a journal
    name the publisher appended to it."""
    title = _VENUE_SUFFIX.sub("", normalize((meta or {}).get("title") or ""))
    cjk = len(_CJK.findall(title))
    if (len(title.split()) < 3 and cjk < 6) or _JUNK_TITLE.search(title):
        return None
    if cjk >= 6 and title.replace(" ", "") not in page_one_text.replace(" ", ""):
        return None
    words = [w for w in re.findall(r"[a-z]{4,}", title.lower())]
    page = page_one_text.lower()
    if words and sum(w in page for w in words) < 0.6 * len(words):
        return None
    return title


def title_text(lines: list[Line]) -> str:
    """The title's text: its lines joined, without the footnote marks set after it (small superscripts,
    daggers and asterisks)."""
    if not lines:
        return ""
    last = lines[-1]
    spans = list(last.spans)
    while spans and (not spans[-1].text.strip() or spans[-1].size < 0.75 * last.size):
        spans.pop()  # a superscript mark ("1", "a") closing the title
    tail = normalize("".join(sp.text for sp in spans)) if spans else last.text
    return _TITLE_MARKS.sub("", " ".join([*(ln.text for ln in lines[:-1]), tail]))


def title_lines(lines: list[Line], page_height: float, body: float = 0.0) -> list[Line]:
    """The lines set in the largest type near the top of page 1; when nothing is larger than the body, the
    bold centred lines that open the page (AASTeX, amsart set the title so); else none."""
    # Logos and teaser figures further down can carry bigger type than the title.
    top = [ln for ln in lines if ln.y0 < page_height * 0.3 and len(ln.text) > 1]
    candidates = [ln for ln in top if re.search(r"[^\W\d_]{3}", ln.text)]
    if not candidates:
        return []
    biggest = max(ln.size for ln in candidates)
    if biggest < 1.1 * body:
        return _bold_title(top, lines, body)
    first = next(i for i, ln in enumerate(top) if ln.size == biggest and ln in candidates)
    chosen = [top[first]]
    for ln in top[first + 1 :]:
        if abs(ln.size - biggest) < 0.3 and -0.5 * biggest <= ln.y0 - chosen[-1].y1 < 1.2 * biggest:
            chosen.append(ln)
        else:
            break
    # "Research Article" above the title, in the same type: the kind of article, not its title.
    return [ln for ln in chosen if not _ARTICLE_TYPE.fullmatch(ln.text)] or chosen


def _bold_title(top: list[Line], lines: list[Line], body: float) -> list[Line]:
    """A title in bold at the body size: the first bold, centred lines before any running text or heading."""
    # Centred on the running text's block (margin line numbers and side notes aside).
    text = [ln for ln in lines if abs(ln.size - body) < 0.6 and len(ln.text) >= 40] or top
    if not top:
        return []
    left, right = min(ln.x0 for ln in text), max(ln.x1 for ln in text)
    middle = (left + right) / 2
    chosen: list[Line] = []
    for ln in top:
        centred = abs((ln.x0 + ln.x1) / 2 - middle) < 0.05 * (right - left) and ln.x1 - ln.x0 < 0.9 * (right - left)
        # Mostly bold (a footnote mark, a typewriter name aside); a title's next lines may be less so.
        bold = ln.share("bold") >= (0.3 if chosen else 0.7)
        title_like = bold and centred and abs(ln.size - body) < 1.0 and re.search(r"[^\W\d_]{3}", ln.text)
        heading = known_heading(ln.text) is not None or re.match(r"^(\d|[IVX]+\.\s)", ln.text)
        if title_like and not heading and (not chosen or 0 <= ln.y0 - chosen[-1].y1 < 1.5 * ln.size):
            chosen.append(ln)
            continue
        if chosen or heading or (not bold and abs(ln.size - body) < 0.6 and len(ln.text) >= 40):
            break  # the title block is over, or the text began without one
    return chosen


def byline(lines: list[Line], title: list[Line]) -> list[Line]:
    """Page 1's lines under the title and above where the abstract (or the text) begins, read in rows: top to
    bottom, each row left to right. Bylines are set as grids (names side by side, each with its affiliation below
    it) that the reading order of columns would read one column at a time; and what stands above the title (a
    journal's banner) or beside the byline further down (an "Edited by" box) is no byline."""
    top = min((ln.y0 for ln in title), default=float("-inf"))
    under = [ln for ln in lines if (ln.y0 + ln.y1) / 2 > top]
    stop = min((ln.y0 for ln in under if _starts_text(ln)), default=float("inf"))
    above = sorted((ln for ln in under if ln.y0 < stop), key=lambda ln: (ln.y0 + ln.y1) / 2)
    rows: list[list[Line]] = []
    for ln in above:
        if rows and (ln.y0 + ln.y1) / 2 <= max(x.y1 for x in rows[-1]):
            rows[-1].append(ln)  # on the row above's band: beside it, not under it
        else:
            rows.append([ln])
    return [ln for row in rows for ln in sorted(row, key=lambda ln: ln.x0)]


def _starts_text(ln: Line) -> bool:
    """The abstract's heading, or a line of running text: many words, few of them capitalised (a list of names
    or an address capitalises most of its words)."""
    words = ln.text.split()
    if _ABSTRACT_START.match(ln.text):
        return True
    capitalised = sum(1 for w in words if w[:1].isupper())
    return len(words) >= 10 and capitalised < 0.5 * len(words)


def authors_from(meta: dict[str, str] | None, byline_lines: list[Line]) -> list[str]:
    """Authors from the byline under the title (`byline`), or the PDF metadata when it names more of them."""
    from_meta: list[str] = []
    raw = normalize((meta or {}).get("author") or "")
    if raw and not _JUNK_TITLE.search(raw) and len(raw) < 400:
        from_meta = [p for p in _name_parts(raw) if _looks_like_name(p)]
    from_page: list[str] = []
    given = ""  # a first name that ended a line, its surname on the next ("... and Andrew" / "D. White")
    for ln in byline_lines[:25]:
        if _starts_text(ln):
            break  # the abstract (or the text) begins: the byline is over
        text = _without_superscripts(ln)
        parts = [p for p in _name_parts(text) if p]
        if given and parts and _looks_like_name(f"{given} {parts[0]}"):
            parts[0] = f"{given} {parts[0]}"
        given = ""
        # Only a word alone on its line, or after the list's closing "and", is taken for a cut name: an address
        # ends with a word too ("..., Heidelberg, Germany").
        alone = len(parts) == 1 or re.search(r"\band\s+\S+\s*$", text)
        if parts and alone and _GIVEN.fullmatch(parts[-1]):
            given = parts.pop()
        # Names come first; from the first institution on the line is an address ("..., Bristol, United Kingdom").
        cut = next((i for i, p in enumerate(parts) if _ORGANISATION.search(p)), len(parts))
        names = [natural_case(p) for p in parts[:cut] if _looks_like_name(p)]
        if names and len(names) >= 0.5 * cut:
            from_page += [n for n in names if n not in from_page]
    return (from_page if len(from_page) >= len(from_meta) else from_meta)[:30]


_GIVEN = re.compile(r"[A-Z][a-z\u00e0-\u017f'’\-]+")  # one capitalised word: a name cut by the line's end
_ABSTRACT_START = re.compile(r"^(abstract|a\s?b\s?s\s?t\s?r\s?a\s?c\s?t|summary|摘\s*要)\b", re.I)
_MARKS = re.compile(r"[\u2217*\u2020\u2021\u00a7\u00b6\u22c6\u21d1\u2660-\u2667#\u2709]")
_ORGANISATION = re.compile(
    r"@|\d|\b(universit\w*|institut\w*|d[eé]part[ae]?ment\w*|dept|school|college|laborator\w*|lab|research|inc|ltd|"
    r"corporation|publishing|journal|article|preprint|access|cent(er|re|ro)|division|faculty|hospital|received|accepted|editor|"
    r"copyright|volume|keywords|e-?mails?|tel|fax|correspondence|proceedings|conference|society|press|sciences?|"
    r"engineering|technology|google|microsoft|yahoo|facebook|ieee|acm|open|group|ai|llc|physics|medicine|health|"
    r"ecole|laboratoire|normale|measurements|uc|search|design|metabolomics|gmbh|street|road|avenue|"
    r"united|kingdom|states|africa|town|city|san|new|arbor)\b",
    re.I,
)
_PARTICLES = {"de", "van", "von", "der", "den", "di", "da", "del", "la", "le", "du", "dos", "das", "bin", "al"}


_ROMAN = re.compile(r"(?:II|III|IV|VI{0,3})\.?")


def natural_case(name: str) -> str:
    """A name the page prints in capitals (or small caps, read as capitals) in its natural case: "TAL AUGUST" ->
    "Tal August", "MARTI A. HEARST" -> "Marti A. Hearst", "JEAN-PIERRE O'NEIL" -> "Jean-Pierre O'Neil", "LUDWIG VAN
    BEETHOVEN" -> "Ludwig van Beethoven". A name in mixed case is as printed."""
    if not name.isupper() or len(re.sub(r"[^A-Za-z\u00c0-\u024f]", "", name)) < 4:
        return name
    words = name.split()
    out: list[str] = []
    for i, word in enumerate(words):
        if (_ROMAN.fullmatch(word) and i > 0) or re.fullmatch(r"([A-Z]\.-?)+", word):
            out.append(word)  # "III", "A.", "J.-P." stay
        elif word.lower() in _PARTICLES and 0 < i < len(words) - 1:
            out.append(word.lower())
        else:
            # Each part after a hyphen or an apostrophe starts upper-case: "Jean-Pierre", "O'Neil".
            out.append(re.sub(r"[^\W\d_]+", lambda m: m.group(0).capitalize(), word.lower()))
    return " ".join(out)


def _without_superscripts(ln: Line) -> str:
    """A byline line with its small affiliation marks ("Lane^a,c,*") turned into separators."""
    size = ln.size
    return normalize("".join(s.text if s.size >= 0.8 * size else ", " for s in ln.spans))


def _name_parts(text: str) -> list[str]:
    text = _MARKS.sub(",", text)
    text = re.sub(r"\([^)]*\)|\{[^}]*\}", ",", text)  # "(Stanford Univ.)", "{et al.}"
    text = re.sub(r"(?<=[a-z\u00e0-\u017f])\d+[a-z]?(?:,\d+[a-z]?)*", ",", text)  # "Agyeman-Duah1", "Focke 1"
    parts = re.split(r"\s*(?:,|;|\band\b|&|、|，|\s\d+\s)\s*", text)
    if all(re.fullmatch(r"[\u4e00-\u9fff ]+", p) for p in parts if p.strip()):
        parts = text.split()  # Chinese names are set apart by spaces
    return [p.strip(" .") if not re.search(r"\b[A-Z]\.$", p.strip()) else p.strip() for p in parts]


def _looks_like_name(text: str) -> bool:
    if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", text):
        return match_category(text) is None  # a Chinese name (张三, 欧阳修), not a heading (摘要)
    words = text.split()
    if not 2 <= len(words) <= 5 or _ORGANISATION.search(text):
        return False
    initials = sum(1 for w in words if re.fullmatch(r"([A-Z]\.-?)+", w))
    named = all(
        w.lower() in _PARTICLES or re.fullmatch(r"([A-Z]\.-?)+|[A-Z\u00c0-\u017d][\w\u00c0-\u017f'’\-.˘´¨]*", w)
        for w in words
    )
    return named and initials < len(words)


def year_from(page_one_text: str, meta: dict[str, str] | None) -> int | None:
    """Publication year: a venue line, an arXiv id, a proceedings or copyright line, then metadata dates.

    The venue (publication) wins over the arXiv id (first preprint). Venues are looked for
    only in the front matter and footer of page 1, not in citations of the introduction.
    """
    intro = re.search(r"\bintroduction\b", page_one_text, re.I)
    front = page_one_text[: intro.start() if intro else 1500] + " " + page_one_text[-400:]
    if m := _VENUE_YEAR.search(front):
        y = int(m.group(1))
        return y if y > 100 else 2000 + y if y < 50 else 1900 + y
    if m := _ARXIV.search(page_one_text):
        return 2000 + int(m.group(1))
    if m := _PROCEEDINGS.search(front):
        return int(m.group(1))
    if m := _COPYRIGHT.search(page_one_text):
        return int(m.group(1))
    for key in ("creationDate", "modDate"):
        if m := re.match(r"D:((?:19|20)\d{2})", (meta or {}).get(key) or ""):
            return int(m.group(1))
    return None


_ARXIV_ID = re.compile(r"arXiv:\s*(\d{4}\.\d{4,5})(?:v\d+)?", re.I)
_OLD_ARXIV_ID = re.compile(r"arXiv:\s*([a-z\-]+/\d{7})", re.I)
_DOI = re.compile(r"\b(?:doi:\s*|https?://(?:dx\.)?doi\.org/)(10\.\d{4,9}/[^\s,;\"'<>]*[^\s,;\"'<>.)])", re.I)


def identifiers(text: str) -> tuple[str | None, str | None]:
    """The arXiv id and the DOI printed on a page (the first one), when there are any."""
    m = _ARXIV_ID.search(text) or _OLD_ARXIV_ID.search(text)
    d = _DOI.search(text)
    return (m.group(1) if m else None), (d.group(1) if d else None)
