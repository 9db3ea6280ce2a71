"""The quotable units of retrieved text: sentences, and table rows given as "header: value" cells.

The PDF text layer mixes prose with formula and table debris (runs of symbols, isolated numbers, broken
math, "(1) (2) (3)" equation labels, dot leaders of a table of contents); such pieces are never offered as
answer sentences. A table row the parser wrote as one line of cells under their headers
("Table 2: caption | Model: BERT | F1: 90.9") is a unit of its own, quoted whole.

Sentence splitting is done here rather than with pysbd, sentencex or syntok: each of them splits after
the abbreviations of scholarly text ("Eq. (4)", "Figs. 4 and 5", "approx. 100 MB", "Sec. 2").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Abbreviations after which a period does not end a sentence (compared lower-cased, without the period).
_ABBREVIATIONS = frozenset(
    str.split(
        """e.g i.e cf vs al fig figs eq eqs eqn eqns sec secs sect tab ref refs no nos vol pp approx resp
    ca dr mr mrs ms prof inc ltd co st jr sr thm def lem prop cor alg ch chap app appx viz
    avg std dept univ corp jan feb mar apr jun jul aug sep sept oct nov dec"""
    )
)
# A boundary candidate: end punctuation, closing quotes or brackets, white space.
_BOUNDARY = re.compile(r"[.!?]['\"”’)\]]*\s+|[。！？]\s*")
# What may open a sentence after a boundary: a capital, a digit, an opening bracket or quote, CJK.
_OPENER = re.compile(r"['\"“‘(\[]?[A-Z0-9\u4e00-\u9fff]")
_HYPHEN_BREAK = re.compile(r"(?<=[a-z])-\n(?=[a-z])")

# A table row line: an optional "Table N" or "Table N: caption" cell (the parser writes the label alone), then at
# least two "header: value" cells, " | " apart.
_ROW_SEPARATOR = " | "
_TABLE_LABEL = re.compile(r"^(?:Table|Tab\.|TABLE)\s*[\dIVXA-Z]+(?:\.\d+)?\s*(?:[:.]|$)", re.I)
_CELL = re.compile(r"^(?P<header>[^:|]{1,80}?):\s*(?P<value>.*)$")

_CELL_RUN = 8  # tokens of table cells at a sentence's end that are cut off
_WORDISH = re.compile(r"[A-Za-z\u00c0-\u024f]{3,}")
_SHORT_OK = frozenset(str.split("a an as at be by do he if in is it me my no of on or so to up us we"))
_EQUATION_LABELS = re.compile(r"(?:\(\s*\d{1,3}[a-z]?\s*\)\s*){2,}")  # "(1) (2) (3)": a run of equation labels
_LEADER = re.compile(r"(?:\.\s?){4,}|…{2,}|_{4,}")
_REFERENCE_ENTRY = re.compile(r"^\s*(?:\[\d{1,3}\]\s+[A-Z]|(?:REFERENCES|References|Bibliography|BIBLIOGRAPHY)\b)")
# What only a bibliography entry holds: "vol. 47, pp. 7–42", "In Proc. of SIGMOD (2006)".
_BIBLIOGRAPHIC = re.compile(r"\bvol\.\s*\d+|\bpp\.\s*\d+\s*[-–]\s*\d+|\bIn Proc(?:eedings|\.)\b.*\b(?:19|20)\d\d\b")
# Publisher boilerplate of a first page: a DOI, a copyright line.
_BOILERPLATE = re.compile(r"\bdoi:\s*10\.|©|\(c\) \d{4}|\ball rights reserved\b|\bfront matter\b", re.I)
_INITIALS = re.compile(r"\b[A-Z]\.\s?(?:[A-Z]\.\s?)*(?:-?[A-Z]\.\s?)?[A-Z][a-z]+")


@dataclass(frozen=True)
class TableRow:
    """A table row as the parser writes it: the table's label and caption, then (column header, value) cells."""

    caption: str
    cells: tuple[tuple[str, str], ...]

    def render(self) -> str:
        """The row as one quotable line, its caption first, each value under its column header."""
        cells = " | ".join(f"{h}: {v}" if h else v for h, v in self.cells)
        return f"{self.caption} | {cells}" if self.caption else cells


@dataclass(frozen=True)
class Unit:
    """One quotable piece of a passage: a sentence, or a table row (then `row` is set)."""

    text: str
    row: TableRow | None = None


def table_row(line: str) -> TableRow | None:
    """The table row `line` holds ("Table 2: caption | Model: BERT | F1: 90.9"), or None for any other line."""
    if _ROW_SEPARATOR not in line:
        return None
    parts = [p.strip() for p in line.strip().split(_ROW_SEPARATOR)]
    caption = parts.pop(0) if _TABLE_LABEL.match(parts[0]) else ""
    cells: list[tuple[str, str]] = []
    for k, part in enumerate(parts):
        m = _CELL.match(part)
        if m is None and k == 0 and caption and part:
            cells.append(("", part))  # the row's label under a column without a header ("– shaping | Score: 0.59")
            continue
        if m is None:
            return None
        cells.append((m.group("header").strip(), m.group("value").strip()))
    if len(cells) < 2 or not any(v for h, v in cells if h):
        return None
    return TableRow(caption=caption, cells=tuple(cells))


# A caption's label, at the start of the text or of a sentence: "Table 5.", "Fig. 3.", "FIGURE 2."
_CAPTION_LABEL = re.compile(r"(?:^|[.!?:]\s+)(?:Table|TABLE|Tab\.|Figure|FIGURE|Fig\.)\s*[\dIVX]+[a-z]?\.$")


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the punctuation just before `end` closes a sentence (not "e.g.", "Fig.", "et al.", "J.")."""
    if text[end - 1] in "。！？":
        return True
    head = text[:end].rstrip()
    head = head.rstrip("'\"”’)]")
    if not head.endswith("."):
        return True  # "!" or "?"
    if _CAPTION_LABEL.search(head):
        return False  # "Table 5. SCM for Pamplona": a caption's label opens its sentence, it does not end one
    word = head[:-1].rsplit(None, 1)[-1] if head[:-1].strip() else ""
    word = word.lstrip("(['\"“‘")
    if word.lower() in _ABBREVIATIONS or word.lower().rstrip(".") in _ABBREVIATIONS:
        return False
    if "." in word and re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):
        return False  # "i.e.", "U.S.", "a.k.a."
    return not re.fullmatch(r"[A-Z]", word)  # an initial ("J. Smith") does not end one


# A sentence that is one bracketed aside: "(N = 500, M = 2, η = 0.05).", "(See Table 2.)"
_ASIDE = re.compile(r"\([^()]*(?:\([^()]*\)[^()]*)*\)[.;]?")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph: splits at . ! ? (and 。！？) before a capital, digit or bracket, but not after
    scholarly abbreviations ("e.g.", "et al.", "Fig. 3", "Sec. 2", "Eq. (4)"), initials, or inside decimals."""
    text = " ".join(text.split())
    out: list[str] = []
    starts: list[int] = []  # where each sentence of `out` starts in `text`

    def add(start: int, end: int) -> None:
        piece = text[start:end].strip()
        if piece and out and _ASIDE.fullmatch(piece):
            # "... with all other parameters being equal. (N = 500, M = 2, η = 0.05)." : an aside in brackets
            # completes the sentence before it (its settings, its source); alone it is no sentence.
            out[-1] = text[starts[-1] : end].strip()
        elif piece:
            out.append(piece)
            starts.append(text.index(piece, start))

    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end()
        if end < len(text) and not _OPENER.match(text, end):
            continue
        if not _ends_sentence(text, m.start() + len(m.group(0).rstrip())):
            continue
        add(start, end)
        start = end
    add(start, len(text))
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` (an answer), split as `split_sentences` splits them, its lines (a
    Markdown list's items) kept apart; a list marker ("1.", "-") stays with the sentence it opens."""
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        squeezed, where = _squeeze(line.group(0))
        at, carry = 0, -1
        for sentence in split_sentences(squeezed):
            begin = squeezed.find(sentence, at)
            at = begin + len(sentence)
            if _LIST_MARKER.fullmatch(sentence):
                carry = begin if carry < 0 else carry
                continue
            first = begin if carry < 0 else carry
            carry = -1
            spans.append((line.start() + where[first], line.start() + where[at - 1] + 1))
    return spans


_LIST_MARKER = re.compile(r"(?:[-*•]\s*)?(?:\d{1,2}[.)])?")


def units(text: str) -> list[Unit]:
    """The quotable units of a passage: its table-row lines whole, its prose as sentences (hyphenation at
    line ends joined), debris left out and a sentence's debris tail cut off."""
    return [unit for unit, _, _ in units_at(text)]


def units_at(text: str) -> list[tuple[Unit, int, int]]:
    """`units(text)`, each with where it stands in `text`: (unit, start, end), `text[start:end]` being the unit as
    printed (its line breaks, spacing and hyphenation as they are; a trimmed debris tail left out). A claim cites
    exactly that span of its chunk."""
    clean, to_raw = _without_breaks(text)
    out: list[tuple[Unit, int, int]] = []
    block: list[tuple[int, str]] = []  # the prose lines of a paragraph: (offset in `clean`, line)

    def flush() -> None:
        if not block:
            return
        joined = " ".join(line for _, line in block)
        # Where each character of `joined` is in `clean`: a joining space stands for the line break it replaced.
        in_clean: list[int] = []
        for k, (start, line) in enumerate(block):
            in_clean.extend(range(start, start + len(line)))
            if k < len(block) - 1:
                in_clean.append(start + len(line))
        squeezed, in_joined = _squeeze(joined)
        at = 0
        for sentence in split_sentences(joined):  # each is a substring of `squeezed`, in order
            begin = squeezed.find(sentence, at)
            at = begin + len(sentence)
            unit = trim_debris(sentence)
            if not unit or is_debris(unit):
                continue
            shown = unit[: -len(_ELLIPSIS)] if unit != sentence and unit.endswith(_ELLIPSIS) else unit
            first, last = in_joined[begin], in_joined[begin + len(shown) - 1]
            out.append((Unit(unit), to_raw[in_clean[first]], to_raw[in_clean[last]] + 1))
        block.clear()

    offset = 0
    for line in clean.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        row = table_row(body)
        if row is not None:
            flush()
            lead = len(body) - len(body.lstrip())
            out.append((Unit(row.render(), row), to_raw[offset + lead], to_raw[offset + len(body.rstrip()) - 1] + 1))
        elif not body.strip():
            flush()
        else:
            block.append((offset, body))
        offset += len(line)
    flush()
    return out


_ELLIPSIS = " …"  # what `trim_debris` puts where it cut a sentence


def _without_breaks(text: str) -> tuple[str, list[int]]:
    """`text` without soft hyphens and without the hyphens of words broken at a line end ("impro-\nvement"), and
    for each character left its index in `text`."""
    if "\u00ad" not in text and not _HYPHEN_BREAK.search(text):
        return text, list(range(len(text)))  # most passages: nothing to take out
    kept = [(i, ch) for i, ch in enumerate(text) if ch != "\u00ad"]
    soft = "".join(ch for _, ch in kept)
    dropped: set[int] = set()
    for m in _HYPHEN_BREAK.finditer(soft):
        dropped.update(range(m.start(), m.end()))
    chars = [(kept[i][0], ch) for i, ch in enumerate(soft) if i not in dropped]
    return "".join(ch for _, ch in chars), [i for i, _ in chars]


def _squeeze(text: str) -> tuple[str, list[int]]:
    """`" ".join(text.split())`, and for each of its characters the index in `text` it comes from."""
    pieces: list[str] = []
    where: list[int] = []
    for m in _NON_SPACE.finditer(text):
        if pieces:
            pieces.append(" ")
            where.append(m.start() - 1)  # the joining space stands for the white space just before the word
        pieces.append(m.group(0))
        where.extend(range(m.start(), m.end()))
    return "".join(pieces), where


_NON_SPACE = re.compile(r"\S+")


@lru_cache(maxsize=65536)  # tokens repeat (words, numbers): a passage's are mostly ones seen before
def _symbolic(token: str) -> bool:
    """A token of formula debris: math symbols, a lone letter or Greek letter with marks, a bare operator."""
    if any(unicodedata.category(ch) in ("Sm", "So", "Sk", "Co", "Cn") or ch == "\ufffd" for ch in token):
        return True
    core = token.strip(".,;:()[]{}")
    if not core:
        return bool(token.strip())  # a bare bracket or punctuation run
    if len(core) == 1 and core.isalpha() and core.lower() not in ("a",) and not core.isupper():
        return True  # "x", "µ": a variable
    return bool(_OPERATOR.fullmatch(core))


_OPERATOR = re.compile(r"[=+\-*/^_|<>~]+")


def is_debris(sentence: str) -> bool:
    """Text-layer debris rather than a sentence: formulas, runs of symbols, isolated numbers, equation labels,
    table-of-contents leaders, a reference-list entry, publisher boilerplate, or too few words to say anything."""
    tokens = sentence.split()
    if len(tokens) < 4 or len(_WORDISH.findall(sentence)) < 3:
        return True
    if _LEADER.search(sentence) or _REFERENCE_ENTRY.match(sentence) or _BOILERPLATE.search(sentence):
        return True
    if _BIBLIOGRAPHIC.search(sentence):
        return True
    if _EQUATION_LABELS.search(sentence):
        return True
    if _run_in_heading(tokens):
        return True
    if len(_SETTING.findall(sentence)) >= 2 and len(_WORDISH.findall(rest := _SETTINGS.sub(" ", sentence))) >= 3:
        # Settings ("for ΩF = ΩB = 0.2, xF = xB = 63109, τ = 0.13") are what a caption or a method states, not
        # formula debris: the words around them are what is judged.
        tokens = rest.split()
    n = len(tokens)
    marks = [_symbolic(t) for t in tokens]
    symbolic = sum(marks)
    numeric = sum(1 for t in tokens if _NUMERIC.fullmatch(t))
    words = sum(1 for t, mark in zip(tokens, marks, strict=True) if not mark and _wordy(t))
    # Numbers are neither words nor debris: a statistical report ("the WMD of Hb was 12.88 g/l (95% CI 6.03 to
    # 19.74 g/l, p<0.00001)") is prose between its figures. Text made mostly of numbers is the next check's.
    if words / max(1, n - numeric) < 0.5:
        return True  # formula debris, or symbols with a few words among them
    if symbolic / n > 0.2 and sum(1 for t in tokens if _prose(t)) < 0.6 * n:
        return True  # symbols not carried by prose ("we generate the matrix Γ⋆with s = 3r non-zero columns" is)
    if numeric / n > 0.4 and n >= 6:
        return True  # flattened table cells
    # A reference list: several "A. Name" author initials and a year.
    return len(_INITIALS.findall(sentence)) >= 3 and bool(re.search(r"\b(?:19|20)\d\d\b", sentence))


_NUMERIC = re.compile(r"[(\[]?[-+±]?\d[\d.,]*%?[)\]]?[.,;]?")


@lru_cache(maxsize=65536)
def _wordy(token: str) -> bool:
    """A token that reads as a word: three letters or more, or a short function word."""
    return bool(_WORDISH.search(token)) or token.strip(".,;:()").lower() in _SHORT_OK


def _prose(token: str) -> bool:
    """A token only running text has: a lower-case word (not a unit or variable), or a function word."""
    core = token.strip(".,;:()[]'\"“”‘’")
    return (len(core) >= 2 and core.isalpha() and core.islower()) or core.lower() in _SHORT_OK


def _run_in_heading(tokens: list[str]) -> bool:
    """A heading run into the text ("Dataset and Evaluation Metrics."): a few capitalised words, no verb."""
    content = [t.strip(".,;:()") for t in tokens if t.strip(".,;:()").lower() not in _SHORT_OK | {"and", "for", "the"}]
    if len(tokens) > 8 or not content or any(ch.isdigit() for t in content for ch in t):
        return False
    return sum(1 for t in content if t[:1].isupper()) / len(content) >= 0.75


def trim_debris(sentence: str) -> str:
    """`sentence` without a tail of formula debris ("... called the teacher: √ � v∗ �w∗ M M ...") or of table
    cells run into it ("... with other Baseline CoT Finetuned CoT 8-shot T5 XXL 3 0.00 0.00 94.8"), when the
    prose before it says something on its own; the sentence unchanged when it has no such tail."""
    tokens = sentence.split(" ")
    run = ticks = 0
    for i, token in enumerate(tokens):
        run = run + 1 if _symbolic(token) else 0
        if run == 3 and not _prose_follows(tokens[i + 1 :]):
            return _cut(sentence, tokens, i - 2)
        ticks = ticks + 1 if _TICK.fullmatch(token) else 0
        if ticks == _TICK_RUN:
            # A figure's axis run into the sentence ("by Subframe index 1 2 3 4 5 6 7 8 9 Detected UE list 16 0"):
            # prose lists its numbers with commas and words, an axis prints them bare, one after another.
            return _cut(sentence, tokens, i - _TICK_RUN + 1)
    # Table cells: eight or more tokens at the end none of which is a lower-case word, three of them numbers.
    k = len(tokens)
    while k > 0 and not _prose(tokens[k - 1]):
        k -= 1
    tail = tokens[k:]
    if len(tail) >= _CELL_RUN and sum(1 for t in tail if re.search(r"\d", t)) >= 3 and not _settings(tail):
        return _cut(sentence, tokens, k)
    return sentence


_TICK = re.compile(r"[-−]?\d+(?:\.\d+)?")  # a bare number: no unit, no comma, no bracket
_TICK_RUN = 5


# One setting of a list of them: "N = 500,", "η=0.05", "v∗= 4)"; _SETTINGS: a whole one, names and value
# ("xF = xB = 63109,").
_SETTING = re.compile(r"[^\W\d][\w∗*′']{0,3}\s*[=≈]\s*[-+−]?\d")
_SETTINGS = re.compile(r"(?:[^\W\d][\w∗*′']{0,3}\s*[=≈]\s*)+[-+−]?\d[\d.,]*[,;]?")


def _settings(tail: list[str]) -> bool:
    """Whether a tail of non-words is a list of settings ("(N = 500, M = 2, η = 0.05, σ = 0.01)"): the values
    a sentence was measured with, not table cells run into it."""
    found = _SETTING.findall(" ".join(tail))
    return len(found) >= 2 and 3 * len(found) >= len(tail) - 2


def _prose_follows(rest: list[str]) -> bool:
    """Whether the sentence goes on as prose after a run of symbols: inline math ("the matrix Γ⋆with s = 3r
    non-zero columns of arbitrary magnitude"), not a tail of formula debris."""
    prose = sum(1 for t in rest if _prose(t))
    return prose >= 3 and prose >= 0.5 * len(rest)


def _cut(sentence: str, tokens: list[str], at: int) -> str:
    head = " ".join(tokens[:at]).rstrip(" ,;:(")
    return head + _ELLIPSIS if len(_WORDISH.findall(head)) >= 6 else sentence
