"""A paper's reference list read as entries, and each entry matched to a paper a library holds.

`parse_references` finds the reference list of a parsed `Paper` (the section(s) headed References, Bibliography,
Literature Cited, ...), cuts it into entries and pulls from each what identifies the cited work: DOI, arXiv id,
year, title, authors' family names. The parser hands the list over as it came off the page: an entry may be split
over several paragraphs, several entries may be joined into one, and two-column layouts sometimes interleave, so the
cutting works on the joined text and trusts labels ("[12]", "12.", "(12)") when the list is numbered, and otherwise
the shape of an author list followed by a year.

`ReferenceMatcher` indexes the held papers once (DOI, arXiv id, distinctive title words) so that matching a
hundred entries against a thousand papers stays a matter of milliseconds; `match_reference` is the one-off form.
A title match requires the held title to stand in the entry as a whole title (its words in order, bounded by
punctuation, not part of a longer title) or to nearly equal the entry's parsed title; short generic titles never
match, and a year more than one apart vetoes a title match.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from paperscope.parser import Paper, Paragraph

from .models import HeldPaper, Reference

__all__ = ["HeldPaper", "Reference", "ReferenceMatcher", "match_reference", "parse_references"]

# Bounds: a damaged PDF can yield a "reference list" of megabytes; nothing real comes near these.
MAX_ENTRIES = 2000
MAX_ENTRY_CHARS = 2000
_MAX_LIST_CHARS = MAX_ENTRIES * MAX_ENTRY_CHARS // 4
_MAX_TITLE_CHARS = 300


# ---------------------------------------------------------------------------------------------------------------
# Character classes. `re` has no \p{Lu}: build the upper/lower letter classes from the Unicode tables once, so that
# "Šediv", "Østergaard" or "Łukasz" count as capitalised names.

_UP = "".join(re.escape(c) for c in map(chr, range(0x41, 0x2000)) if c.isupper())
_LO = "".join(re.escape(c) for c in map(chr, range(0x61, 0x2000)) if c.islower())
U = f"[{_UP}]"
L = f"[{_LO}]"

_REF_TITLE = re.compile(
    r"^\s*(?:[0-9]+(?:\.[0-9]+)*\.?|[IVXLC]+\.|[A-Z]\.)?\s*"
    r"(?:references?(?:\s+(?:and|&)\s+notes)?|bibliography|literature(?:\s+cited)?|cited\s+literature|"
    r"works\s+cited|reference\s+list|references\s+cited|citations)\s*:?\s*$",
    re.IGNORECASE,
)
# A list the parser left inside another section: a paragraph opening with the heading itself.
_INLINE_HEADING = re.compile(r"^\s*(?:REFERENCES|References|Bibliography|BIBLIOGRAPHY)\s*:?\s+(?=\S)")

_YEAR = re.compile(r"(?<![\d./:–-])((?:19|20)\d\d)(?:[a-z](?![a-z]))?(?![\d/]|[.–-]\d)")
_DOI = re.compile(r"\b10\.\d{4,9}/(?:\s(?=[\w.]*\d))?[^\s\"<>“”]+", re.IGNORECASE)
_ARXIV_NEW = re.compile(
    r"(?:arxiv|corr)\b[^\n]{0,24}?(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])"
    r"|arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5})",
    re.IGNORECASE,
)
_ARCHIVES = (
    "astro-ph|cond-mat|gr-qc|hep-ex|hep-lat|hep-ph|hep-th|math-ph|nlin|nucl-ex|nucl-th|physics|quant-ph|"
    "math|cs|q-bio|q-fin|stat|chao-dyn|solv-int|patt-sol|adap-org|comp-gas|alg-geom|dg-ga|funct-an|q-alg"
)
_ARXIV_OLD = re.compile(rf"(?<![\w/-])((?:{_ARCHIVES})(?:\.[A-Z]{{2}})?/\d{{7}})(?:v\d+)?(?!\d)")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)


def _clean(text: str) -> str:
    """One line: whitespace collapsed, NUL and control characters dropped."""
    return re.sub(r"\s+", " ", "".join(ch for ch in text if ch >= " " or ch in "\t\n")).strip()


# ---------------------------------------------------------------------------------------------------------------
# Finding the list.


def _is_reference_heading(title: str) -> bool:
    return bool(_REF_TITLE.match(title))


def _looks_like_entry(title: str) -> bool:
    """A "heading" that is really an entry the parser promoted, e.g. "1. World Health Organization. World ..."."""
    return bool(re.match(r"^\s*(?:\[\d+\]|\(\d+\)|\d+\.?)\s+\S", title)) and (
        len(title.split()) >= 5 or bool(_YEAR.search(title))
    )


def _list_paragraphs(paper: Paper) -> list[str]:
    """The texts that make up the reference list(s), in reading order."""
    by_section: dict[int, list[Paragraph]] = {}
    for para in paper.paragraphs:
        by_section.setdefault(para.section_id, []).append(para)

    texts: list[str] = []
    inside = False
    ref_level = 0
    for section in paper.sections:
        if _is_reference_heading(section.title):
            inside, ref_level = True, section.level
        elif inside and (section.level > ref_level or _looks_like_entry(section.title)):
            # A subheading under References, or an entry taken for a heading: still the list.
            if _looks_like_entry(section.title):
                texts.append(section.title)
        else:
            inside = False
        if inside:
            # Captions and tables that float onto the page of the list are not entries.
            texts.extend(p.text for p in by_section.get(section.id, []) if p.kind == "body")

    if not texts:
        # No heading found: the parser may have left "REFERENCES [1] ..." as the start of a body paragraph.
        start_section: int | None = None
        for para in paper.paragraphs:
            if start_section is None:
                m = _INLINE_HEADING.match(para.text) if para.kind == "body" else None
                if m and re.match(r"\s*(?:\[1\]|1\.|\(1\)|" + U + ")", para.text[m.end() :]):
                    start_section = para.section_id
                    texts.append(para.text[m.end() :])
            elif para.section_id != start_section:
                break
            elif para.kind == "body":
                texts.append(para.text)

    out: list[str] = []
    total = 0
    for text in texts:
        text = _clean(text)
        if text:
            out.append(text)
            total += len(text) + 1
            if total > _MAX_LIST_CHARS:
                break
    return out


# ---------------------------------------------------------------------------------------------------------------
# Numbered lists.

_LABEL_STYLES: dict[str, re.Pattern[str]] = {
    # Labels must follow a space or the start of the text; what may come after depends on the style.
    "bracket": re.compile(r"(?:(?<=\s)|^)\[(\d{1,4})\](?=\s|$)"),
    "paren": re.compile(r"(?:(?<=\s)|^)\((\d{1,4})\)(?=\s+\S)"),
    "dot": re.compile(r"(?:(?<=\s)|^)(\d{1,4})\.(?=\s+[" + _UP + r"\d“\"'‘(\[])"),
    "plain": re.compile(r"(?:(?<=\s)|^)(\d{1,4})(?=\s+" + U + L + r")"),
}
_LABEL_FORMAT = {"bracket": "[{n}]", "paren": "({n})", "dot": "{n}.", "plain": "{n}"}


def _scan_labels(text: str, para_starts: set[int], style: str) -> list[tuple[int, int, int]]:
    """Labels 1, 2, 3, ... found in order: (number, start, end). A single missing number is stepped over."""
    found: list[tuple[int, int, int]] = []
    n = 1
    for m in _LABEL_STYLES[style].finditer(text):
        k = int(m.group(1))
        if k not in (n, n + 1) or (k == n + 1 and not found):
            continue
        # Plain numbers are everywhere (volumes, pages): only trust them where a paragraph starts or right after
        # what ends an entry.
        if (
            style == "plain"
            and m.start() not in para_starts
            and not re.search(r"[\d.)]\s$", text[max(0, m.start() - 3) : m.start()])
        ):
            continue
        found.append((k, m.start(), m.end()))
        n = k + 1
        if len(found) >= MAX_ENTRIES:
            break
    # A list must start near its top: "1." found deep inside an author-year list is a page or volume number.
    if found and found[0][1] > 300:
        return []
    return found


def _split_numbered(text: str, para_starts: set[int]) -> tuple[str, list[tuple[str, str]]] | None:
    best: tuple[str, list[tuple[int, int, int]]] | None = None
    for style in ("bracket", "paren", "dot", "plain"):
        labels = _scan_labels(text, para_starts, style)
        if len(labels) >= 3 and (best is None or len(labels) > len(best[1]) * 1.2):
            best = (style, labels)
    if best is None:
        return None
    style, labels = best
    entries: list[tuple[str, str]] = []
    for i, (n, _start, end) in enumerate(labels):
        stop = labels[i + 1][1] if i + 1 < len(labels) else len(text)
        entries.append((_LABEL_FORMAT[style].format(n=n), text[end:stop].strip()))
    return style, entries


# ---------------------------------------------------------------------------------------------------------------
# Author lists: used to find where author-year entries start, and to read the authors of any entry.

_PARTICLE = r"(?:van|von|de|der|den|del|della|di|da|dos|du|la|le|ten|ter|bin|al|el|zu|y)"
# "Agarwal", "Bar-Haim", "McCollum", "O’Neill", "ABADI"; "Hsu- Han" is "Hsu-Han" broken at a line end.
_WORD = rf"{U}(?:[\w'’`´¨ˇ˚]|-(?=\w)|-\s(?={U}))*"  # accents that extraction left loose: "Šediv`y"
_FAMILY = rf"(?:{_PARTICLE}\s+)*{_WORD[:-1]}+"  # two letters at least: "A" is an initial, not a family name
_INITIALS = rf"{U}\.(?:\s?-?{U}\.)*"  # "P.", "A. Y.", "J.-P.", "G.E."
_STOP_START = (
    "In|The|A|An|On|Of|For|And|To|From|With|Proceedings|Proc|Journal|Available|Accessed|Retrieved|See|Technical"
    "|Tech|Springer|Elsevier|Conference|Workshop|International|Association|University|Department|Vol|Volume|URL"
    "|Advances|Transactions|IEEE|ACM|Chapter|Part|Section|Table|Figure|Fig|Thesis|PhD|Master|Press|Nature|Science"
)
_NOT_STOP = rf"(?!(?:{_STOP_START})(?:\s|$))"  # "A Survey" is a title, "A. Smith" a name

# Three shapes of a name; `fam` captures the family name.
_NAME_FORMS = {
    # "Agarwal, A." / "Bosch, J.M." / "ABADI, D. J."  (APA, Elsevier, ICML, Nature)
    "family_initials": rf"{_NOT_STOP}(?P<fam>{_FAMILY}(?:\s{_WORD})?),\s*{_INITIALS}",
    # "Bates DM" / "Afgan E" / "Yang Z"  (Vancouver, JSS, PeerJ)
    "family_caps": rf"{_NOT_STOP}(?P<fam>{_FAMILY}(?:[\s-]{_WORD})?)\s+{U}{{1,3}}(?![\w'’-]|\.\w)",
    # "Anant K. Agarwal" / "E. Agichtein" / "Madeleine van Zuylen"  (ACL, NeurIPS, IEEE)
    "given_family": rf"{_NOT_STOP}(?:(?:{_INITIALS}\s*|{_WORD}\s+)){{1,3}}(?P<fam>{_FAMILY})",
}
_SEP = r"(?:\s*,\s*(?:and\s+|AND\s+|&\s*)?|\s*;\s*|\s+and\s+|\s+AND\s+|\s*&\s*)"
_ETAL = r"(?:,?\s*et\.?\s*al\.?)"
_COMPILED_NAMES = {k: re.compile(v) for k, v in _NAME_FORMS.items()}
# Inside a given-name-first list a one-word name ("Mausam") is still a name.
_MONONYM = re.compile(rf"(?P<fam>{_WORD})(?=\s*(?:,|\band\b|\.))")
_SEP_RE = re.compile(_SEP)
_ETAL_RE = re.compile(_ETAL)


@dataclass
class _Authors:
    families: list[str]
    end: int  # offset just past the author list (and "et al.")
    form: str


def _read_authors(text: str, pos: int = 0, forms: Iterable[str] = tuple(_NAME_FORMS)) -> _Authors | None:
    """The longest author list starting at `pos`, in whichever name shape reads the most names."""
    best: _Authors | None = None
    for form in forms:
        name_re = _COMPILED_NAMES[form]
        m = name_re.match(text, pos)
        if not m:
            continue
        families = [m.group("fam")]
        end = m.end()
        while len(families) < 200:
            sep = _SEP_RE.match(text, end)
            nxt = name_re.match(text, sep.end()) if sep else None
            if sep and nxt is None and form == "given_family":
                nxt = _MONONYM.match(text, sep.end())
            if not sep or not nxt:
                break
            families.append(nxt.group("fam"))
            end = nxt.end()
        etal = _ETAL_RE.match(text, end)
        if etal:
            end = etal.end()
        if best is None or len(families) > len(best.families):
            best = _Authors(families, end, form)
    return best


# What may follow an author list where an author-year entry starts: its year, or (no year after the authors, as in
# ICML or NeurIPS) a period and the title.
_AFTER_GIVEN = re.compile(rf"\.?\s*\(?(?:19|20)\d\d[a-z]?\b|\.\s+[{_UP}“\"‘\d]|:\s")
_AFTER_FAMILY = re.compile(rf"\s*[.,]?\s*\(?(?:19|20)\d\d[a-z]?\b|\.?\s+[{_UP}“\"‘]|:\s")


_ORGANISATION = re.compile(rf"{_WORD}\.\s+(?:19|20)\d\d[a-z]?\.")  # "OpenAI. 2023."
_MORE_NAMES = re.compile(r"\s*(?:[,;&]|and\s)")


def _entry_start(text: str, pos: int) -> bool:
    """True when an author-year entry plausibly starts at `pos`: an author list, then a year or a title."""
    if _ORGANISATION.match(text, pos):
        return True
    for form in _NAME_FORMS:
        authors = _read_authors(text, pos, (form,))
        if authors is None:
            continue
        after = _AFTER_GIVEN if form == "given_family" else _AFTER_FAMILY
        # Three names in a row are an author list even when the rest of it does not parse ("Hsu- Han Ooi").
        if (
            after.match(text, authors.end)
            or len(authors.families) >= 3
            # "Whitehead, D., Beadle C.L., 2004": "Family, I." and more names is a list even if the next one is odd
            or (form == "family_initials" and _MORE_NAMES.match(text, authors.end))
        ):
            return True
    return False


def _split_author_year(text: str, para_starts: set[int]) -> list[str]:
    # Candidate starts: paragraph starts, and positions right after what ends an entry (a period, a closing
    # bracket, a page number) but not after an initial ("G. Hinton. Deep ..." must not split at "Deep").
    candidates = set(para_starts)
    for m in re.finditer(r"(?:[.)\]?!]|\d)\s+(?=\S)", text):
        before = text[max(0, m.start() - 6) : m.start() + 1]
        if re.search(rf"(?:^|[\s.\-]){U}\.$", before) or before.endswith("et al."):
            continue
        candidates.add(m.end())
    starts = sorted(p for p in candidates if p == 0 or _entry_start(text, p))
    if not starts or starts[0] != 0:
        starts.insert(0, 0)

    # Keep a start only when both the entry it ends and the entry it opens have a year (every entry of an author-year
    # list has one): a journal name or a title-case title that looks like an author list ("Neural Computation.",
    # "Generative Adversarial Nets.") would leave one of the two without.
    kept: list[int] = [0]
    for i, start in enumerate(starts[1:], start=1):
        stop = starts[i + 1] if i + 1 < len(starts) else len(text)
        own, before = text[start:stop], text[kept[-1] : start]
        if _YEAR.search(own) and _YEAR.search(before) and len(own) >= 25:
            kept.append(start)
    return [text[a:b].strip() for a, b in zip(kept, [*kept[1:], len(text)], strict=True) if text[a:b].strip()]


# ---------------------------------------------------------------------------------------------------------------
# Fields of one entry.


def _find_doi(text: str) -> str | None:
    m = _DOI.search(text)
    if not m:
        return None
    doi = m.group(0).replace(" ", "")
    # Trailing punctuation belongs to the sentence; a closing bracket only when it has no opening one.
    while doi and (doi[-1] in ".,;:'’”]}>" or (doi[-1] == ")" and doi.count("(") < doi.count(")"))):
        doi = doi[:-1]
    return doi.lower() if "/" in doi and len(doi.split("/", 1)[1]) >= 2 else None


def _find_arxiv(text: str) -> str | None:
    m = _ARXIV_NEW.search(text)
    if m:
        ident = m.group(1) or m.group(2)
        month = int(ident[2:4])
        if 1 <= month <= 12 and (len(ident.split(".")[1]) == 4 or int(ident[:2]) >= 15):
            return ident
    old = _ARXIV_OLD.search(text)
    return old.group(1) if old else None


def _find_year(text: str) -> int | None:
    # Numbers inside DOIs, arXiv ids and URLs are not years.
    text = _URL.sub(" ", _DOI.sub(" ", _ARXIV_NEW.sub(" ", text)))
    years = [(m.start(), int(m.group(1)), m.group(0)) for m in _YEAR.finditer(text)]
    years = [y for y in years if 1800 <= y[1] <= 2099]
    if not years:
        return None
    # Prefer a year printed as a year: "(2019)", "2019.", "2019a," -- page ranges and volumes are not.
    for start, year, _ in years:
        tail = text[start + 4 : start + 6]
        if text[start - 1 : start] == "(" or re.match(r"[a-z]?[.,;:)]", tail) or start + 4 >= len(text):
            return year
    return years[0][1]


def _sentence_end(text: str, pos: int) -> int:
    """Offset of the end of the sentence starting at `pos` (abbreviated initials and "vs." do not end one)."""
    for m in re.finditer(r"[.?!](?=\s|$)", text[pos:]):
        end = pos + m.start()
        word = re.search(r"(\S+)$", text[pos:end])
        if word and (re.fullmatch(rf"{U}|vs|al|e\.g|i\.e|[Vv]ol|pp|[Nn]o|St", word.group(1))):
            continue
        return end + (1 if text[end] in "?!" else 0)
    return len(text)


def _find_title(text: str, authors: _Authors | None) -> str:
    quoted = re.search(r"[“\"]([^”\"]{8,}?)[,.]?[”\"]", text)
    if quoted:  # IEEE and JSS put the title in quotes
        return quoted.group(1).strip(" ,.")
    pos = authors.end if authors else 0
    # Past the author list: punctuation, then a year ("2019." / "(2019)." / ", 2019.") if there is one.
    skip = re.compile(r"[\s.,:;]*(?:\(?(?:19|20)\d\d[a-z]?\)?(?=[\s.,:;]|$)[\s.,:;]*)?")
    m = skip.match(text, pos)
    if m:
        pos = m.end()
    end = _sentence_end(text, pos)
    title = text[pos:end].strip(" .,;:")
    if not authors and len(title.split()) < 3 and end < len(text):
        # An organisation or a lone year before the title: "3GPP. TS 36.321: ..." -> take the next sentence.
        nxt = _sentence_end(text, end + 1)
        title = text[end + 1 : nxt].strip(" .,;:") or title
    return title[:_MAX_TITLE_CHARS]


def _make_reference(n: int, label: str, text: str) -> Reference:
    text = _clean(text)[:MAX_ENTRY_CHARS]
    authors = _read_authors(text)
    if authors is not None and authors.form == "given_family" and not re.match(r"\s*[.,:(“\"]", text[authors.end :]):
        authors = None  # "Deep learning for ..." read as a name: no punctuation after it, so not an author list
    return Reference(
        n=n,
        label=label,
        text=text,
        title=_find_title(text, authors),
        authors=[f.strip() for f in authors.families] if authors else [],
        year=_find_year(text),
        doi=_find_doi(text),
        arxiv_id=_find_arxiv(text),
    )


def parse_references(paper: Paper) -> list[Reference]:
    """The entries of the paper's reference list(s), in order; [] when no list is found."""
    paragraphs = _list_paragraphs(paper)
    if not paragraphs:
        return []
    para_starts: set[int] = set()
    offset = 0
    for text in paragraphs:
        para_starts.add(offset)
        offset += len(text) + 1
    joined = " ".join(paragraphs)

    numbered = _split_numbered(joined, para_starts)
    author_year = None if numbered and len(numbered[1]) >= 8 else _split_author_year(joined, para_starts)
    if numbered and (author_year is None or len(numbered[1]) >= 0.5 * len(author_year)):
        pairs = numbered[1]
    else:
        pairs = [("", entry) for entry in author_year or []]
    return [_make_reference(i, label, text) for i, (label, text) in enumerate(pairs[:MAX_ENTRIES], start=1)]


# ---------------------------------------------------------------------------------------------------------------
# Matching.

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "and",
        "or",
        "in",
        "on",
        "to",
        "with",
        "by",
        "from",
        "at",
        "as",
        "is",
        "are",
        "be",
        "via",
        "using",
        "toward",
        "towards",
        "into",
        "its",
        "their",
        "our",
    ]
)
_GENERIC_TITLES = frozenset(
    {
        "introduction",
        "abstract",
        "references",
        "bibliography",
        "contents",
        "table of contents",
        "untitled",
        "supplementary material",
        "supplementary information",
        "supplemental material",
        "appendix",
        "preface",
        "editorial",
        "foreword",
        "index",
        "erratum",
        "correction",
        "acknowledgements",
        "acknowledgments",
        "conclusion",
        "conclusions",
        "discussion",
        "related work",
        "front matter",
        "back matter",
        "book review",
        "letter to the editor",
        "proceedings",
    }
)


def _fold(text: str) -> str:
    """Case, accents, ligatures and hyphenation folded: "Citation-informed" and "Citationinformed" agree."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    # Hyphens join ("tough-to-beat" -> "toughtobeat"); a line-break hyphen "SciB- ERT" leaves two tokens whose
    # concatenation the run test below reads as one.
    return re.sub(r"[-\u00ad\u2010\u2011]", "", text)


_TOKEN = re.compile(r"[^\W_]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_fold(text))


def _norm_doi(doi: str | None) -> str | None:
    if not doi:
        return None
    doi = re.sub(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", "", doi.strip(), flags=re.IGNORECASE)
    doi = doi.rstrip(".,;").lower()
    return doi or None


def _norm_arxiv(ident: str | None) -> str | None:
    if not ident:
        return None
    ident = re.sub(r"^(?:arxiv:\s*|https?://arxiv\.org/(?:abs|pdf)/)", "", ident.strip(), flags=re.IGNORECASE)
    ident = re.sub(r"(?:v\d+)?(?:\.pdf)?$", "", ident)
    return ident.lower() or None


@dataclass
class _HeldTitle:
    index: int
    compact: str  # folded title words joined without spaces
    tokens: list[str]


@dataclass
class _EntryText:
    """An entry's text folded for title search: compact string, and where its words start and end in it."""

    compact: str
    starts: dict[int, int]  # offset in compact -> index of the word starting there
    ends: dict[int, int]  # offset in compact just past a word -> index of that word
    spans: list[tuple[int, int]]  # each word's span in the folded text
    folded: str
    keys: set[str]

    @classmethod
    def of(cls, text: str) -> _EntryText:
        folded = _fold(text)
        words = list(_TOKEN.finditer(folded))
        starts: dict[int, int] = {}
        ends: dict[int, int] = {}
        parts: list[str] = []
        offset = 0
        for i, m in enumerate(words):
            starts[offset] = i
            parts.append(m.group(0))
            offset += len(m.group(0))
            ends[offset] = i
        tokens = [m.group(0) for m in words]
        # Adjacent pairs too, so "scib ert" can find the key "scibert".
        keys = set(tokens) | {a + b for a, b in pairwise(tokens)}
        return cls("".join(parts), starts, ends, [m.span() for m in words], folded, keys)


def _title_qualifies(title: str, tokens: list[str]) -> bool:
    """Only titles specific enough to be found in someone else's text: 3+ words or 20+ characters, not generic."""
    plain = " ".join(title.casefold().split())
    if not tokens or plain.strip(" .:") in _GENERIC_TITLES or " ".join(tokens) in _GENERIC_TITLES:
        return False
    content = [t for t in tokens if t not in _STOPWORDS]
    return len(content) >= 2 and (len(tokens) >= 3 or len(plain) >= 20)


def _dice(a: list[str], b: list[str]) -> float:
    if not a or not b:
        return 0.0
    common = sum((Counter(a) & Counter(b)).values())
    return 2 * common / (len(a) + len(b))


class ReferenceMatcher:
    """Matches reference entries to held papers; build once per library, call `match` per entry."""

    def __init__(self, held: Sequence[HeldPaper]) -> None:
        self._held = list(held)
        self._by_doi: dict[str, int] = {}
        self._by_arxiv: dict[str, int] = {}
        self._titles: list[_HeldTitle] = []
        for i, paper in enumerate(self._held):
            doi, arxiv = _norm_doi(paper.doi), _norm_arxiv(paper.arxiv_id)
            if doi:
                self._by_doi.setdefault(doi, i)
            if arxiv:
                self._by_arxiv.setdefault(arxiv, i)
            tokens = _tokens(paper.title)
            if _title_qualifies(paper.title, tokens):
                self._titles.append(_HeldTitle(i, "".join(tokens), tokens))
        # Index each title under its two rarest content words: an entry citing it contains both, and rare words
        # keep the candidate lists short.
        df: Counter[str] = Counter()
        for held_title in self._titles:
            df.update(set(held_title.tokens))
        self._by_key: dict[str, list[int]] = {}
        for pos, held_title in enumerate(self._titles):
            content = sorted(
                {t for t in held_title.tokens if t not in _STOPWORDS} or set(held_title.tokens),
                key=lambda t: (df[t], -len(t)),
            )
            for key in content[:2]:
                self._by_key.setdefault(key, []).append(pos)

    def match(self, ref: Reference) -> str | None:
        """doc_id of the held paper the entry cites, or None."""
        doi = _norm_doi(ref.doi)
        if doi and doi in self._by_doi:
            return self._held[self._by_doi[doi]].doc_id
        arxiv = _norm_arxiv(ref.arxiv_id)
        if arxiv and arxiv in self._by_arxiv:
            return self._held[self._by_arxiv[arxiv]].doc_id

        entry = _EntryText.of(ref.text)
        title_tokens = _tokens(ref.title)
        candidates: set[int] = set()
        for key in entry.keys:
            candidates.update(self._by_key.get(key, ()))
        best: _HeldTitle | None = None
        for pos in candidates:
            held_title = self._titles[pos]
            if not self._year_agrees(ref.year, self._held[held_title.index].year):
                continue
            # Several held titles may fit (a short one inside a longer one): the longest is the most specific.
            if best is not None and len(held_title.compact) <= len(best.compact):
                continue
            if self._run_matches(held_title, entry) or (
                len(held_title.tokens) >= 4 and _dice(held_title.tokens, title_tokens) >= 0.85
            ):
                best = held_title
        return self._held[best.index].doc_id if best else None

    @staticmethod
    def _year_agrees(ref_year: int | None, held_year: int | None) -> bool:
        return ref_year is None or held_year is None or abs(ref_year - held_year) <= 1

    @staticmethod
    def _run_matches(held_title: _HeldTitle, entry: _EntryText) -> bool:
        """The held title's words, in order, as a whole title of the entry: starting and ending on word bounds, and
        bounded by punctuation rather than by more words ("Dense Passage Retrieval" must not match inside
        "Dense Passage Retrieval for Open-Domain Question Answering")."""
        compact = held_title.compact
        at = entry.compact.find(compact)
        while at >= 0:
            first = entry.starts.get(at)
            last = entry.ends.get(at + len(compact))
            if first is not None and last is not None:
                before = entry.folded[: entry.spans[first][0]].rstrip()
                after = entry.folded[entry.spans[last][1] :].lstrip()
                if (not before or not before[-1].isalnum()) and (not after or after[0] in ".,;?!”\"’')]"):
                    return True
            at = entry.compact.find(compact, at + 1)
        return False


def match_reference(ref: Reference, held: Sequence[HeldPaper]) -> str | None:
    """doc_id of the held paper `ref` cites, or None. For many entries build one `ReferenceMatcher` instead."""
    return ReferenceMatcher(held).match(ref)
