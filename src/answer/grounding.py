"""The grounding check: the figures a model writes must occur in the evidence it read.

A small model writes numbers that are in no source ("a window size of 128" where the paper says 4096) and shows
them with citations as if they were supported. Citations are checked by citations.py (every one points at a
passage that was read); this module checks what the sentences say, for every answer a model writes (the agent,
its fallback, the single-shot answer):

- numbers, in the forms papers and models write them: "4,096" = "4096" = "4 096", "4k" = 4000 or 4096,
  "1.2 million" = "1.2M" = 1200000, "93.5%" = "93.5 percent" = 0.935, a figure rounded from the source's
  ("about 93%" for 93.4), "three" in the source for "3" in the answer; numbers that are labels ("Table 3",
  "Section 4.2"), list markers and digits inside names ("GPT-3", "T5", "3D") are not figures;
- quoted names and phrases ("called “gist tokens”"), compared without case, accents, hyphens or spacing;
- author citations the model writes itself ("Karpukhin et al. (2020)", "(Smith, 2019)").

Figures the question itself holds count as given. A sentence with a figure the evidence lacks is unsupported:
it is marked in the answer ("(not in the sources: 128)"). The answer's *key* figures are unsupported when the
question asks for a figure of that kind (a number, a name) and one the answer gives for it is missing, or when
most of the answer's figures are missing; the writer then sets `supported` to false and gives the extracted
answer beside the model's. The share of figures found is one of the reflection loop's scores.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ..rag.cues import STOPWORDS
from .citation_forms import SHORT_BRACKET
from .question_type import Ask, question_type
from .sentences import sentence_spans

# --- numbers ---------------------------------------------------------------------------------------------------

_SCALE = {
    "k": (1e3, 1024.0),
    "thousand": (1e3,),
    "m": (1e6,),
    "million": (1e6,),
    "mn": (1e6,),
    "b": (1e9,),
    "bn": (1e9,),
    "billion": (1e9,),
    "t": (1e12,),
    "trillion": (1e12,),
    "千": (1e3,),
    "万": (1e4,),
    "百万": (1e6,),
    "亿": (1e8,),
}
_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
_WORD_NUMBERS = {w: float(i) for i, w in enumerate([*_UNITS.split(), "seventeen", "eighteen", "nineteen", "twenty"])}
_WORD_NUMBERS |= {"thirty": 30.0, "forty": 40.0, "fifty": 50.0, "sixty": 60.0, "hundred": 100.0, "thousand": 1000.0}
_WORD_NUMBERS |= {"twice": 2.0, "double": 2.0, "triple": 3.0, "half": 0.5, "dozen": 12.0}
# A number as written: "4,096", "4 096", "93.5", ".5", with an optional scale ("4k", "1.2 million"), a
# percent sign or word, or a multiplier ("10x").
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.,])(?P<num>\d{1,3}(?:[,\u2009\u202f]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s?(?P<scale>[kKMBT](?![a-zA-Z])|thousand|million|mn|billion|bn|trillion)\b|(?P<cjk>百万|千|万|亿))?"
    r"(?P<pct>\s?(?:%|percent\b|per\s?cent\b))?"
    r"(?:\s?[x×](?![a-zA-Z]))?"
)
_SPACED_THOUSANDS = re.compile(r"(?<![\w.,])\d{1,3}(?: \d{3})+(?![\w.,])")
_WORD_NUMBER = re.compile(r"\b(" + "|".join(_WORD_NUMBERS) + r")\b", re.I)
# What stands before a number that is a label, not a figure: "Table 3", "Sec. 4.2", "Eq. (5)".
_LABEL_BEFORE = re.compile(
    r"(?:Table|Tab\.|Figure|Fig\.|Figs\.|Section|Sections|Sec\.|§|Eq\.|Eqs\.|Eqn\.|Equation|Algorithm|Appendix|"
    r"Chapter|Theorem|Lemma|Definition|Corollary|Proposition|Step|Line|page|p\.|pp\.|Exp\.|Experiment)\s*\(?$",
    re.I,
)
# Digits glued to a name: "GPT-3", "T5", "top-5", "Llama-2-7B", "P1:12".
_NAME_BEFORE = re.compile(r"(?:[A-Za-z]\w*[-_/:]?|\d:)$")
# Digits glued to letters after them that make a name or an ordinal: "3D", "2nd", "5th".
_NAME_AFTER = re.compile(r"(?:st|nd|rd|th|D)\b|[A-Za-z]+\d")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]\s*)?\d{1,2}[.)]\s", re.M)


def _value(num: str) -> float:
    return float(re.sub(r"[,\u2009\u202f ]", "", num))


@dataclass(frozen=True)
class Figure:
    """One checkable thing an answer says: a number, a quoted name, an author citation."""

    kind: str  # "number" | "name" | "citation"
    text: str  # as written
    # numbers: (value, tolerance) pairs it may stand for: "4k" is 4000 or 4096, "93.5%" 93.5 or 0.935, and a
    # figure written with d decimals matches a source's value that rounds to it.
    readings: tuple[tuple[float, float], ...] = ()
    span: tuple[int, int] = (0, 0)  # numbers: where it stands in the text checked


def _readings(m: re.Match[str]) -> tuple[tuple[float, float], ...]:
    num = m.group("num")
    base = _value(num)
    decimals = len(num.split(".", 1)[1]) if "." in num else 0
    half = 0.5 * 10**-decimals
    scales = _SCALE.get((m.group("scale") or m.group("cjk") or "").lower(), (1.0,))
    out = [(base * s, half * s) for s in scales]
    if m.group("pct"):
        out.append((base / 100, half / 100))
    return tuple(out)


def numbers(text: str) -> list[Figure]:
    """The figures a text states as numbers (labels, list markers, citations and digits in names left out)."""
    text = _LIST_MARKER.sub(lambda m: " " * len(m.group(0)), SHORT_BRACKET.sub(lambda m: " " * len(m.group(0)), text))
    found: list[Figure] = []
    for m in _NUMBER.finditer(text):
        before = text[max(0, m.start() - 14) : m.start()]
        if _LABEL_BEFORE.search(before) or _NAME_BEFORE.search(before):
            continue
        if not (m.group("scale") or m.group("cjk")) and _NAME_AFTER.match(text, m.end("num")):
            continue
        found.append(Figure("number", m.group(0).strip(), _readings(m), (m.start(), m.end())))
    return found


def _all_values(text: str) -> list[float]:
    """Every value a passage states: digits in any form (inside names too: the check is lenient), spaced
    thousands ("4 096") and number words ("three")."""
    values: set[float] = set()
    for m in _NUMBER.finditer(text):
        values.update(v for v, _ in _readings(m))
    for m in _SPACED_THOUSANDS.finditer(text):
        values.add(_value(m.group(0)))
    for m in re.finditer(r"\d+(?:\.\d+)?", text):  # "GPT-3", "4096-token", "Table 3"
        values.add(float(m.group(0)))
    for m in _WORD_NUMBER.finditer(text):
        values.add(_WORD_NUMBERS[m.group(1).lower()])
    return sorted(values)


def _number_found(fig: Figure, known: Sequence[float]) -> bool:
    return any(abs(e - v) <= tol + 1e-9 * max(1.0, abs(v)) for v, tol in fig.readings for e in known)


# --- names and citations ----------------------------------------------------------------------------------

_QUOTED = re.compile(r"“([^”\n]{2,120})”|\"([^\"\n]{2,120})\"|‘([^’\n]{2,120})’|`([^`\n]{2,80})`")
_AUTHOR = re.compile(
    r"\b([A-Z][a-zA-Z'\-]{1,30})(?:\s+(?:et\s+al\.?|and\s+[A-Z][a-zA-Z'\-]+))?,?\s*\(?((?:19|20)\d\d)[a-z]?\)?"
)
_AUTHOR_ETAL = re.compile(r"\b([A-Z][a-zA-Z'\-]{1,30})\s+et\s+al\b")


def _plain(text: str) -> str:
    """Lower-case letters and digits, one space between words: for comparing names and phrases."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = re.sub(r"-\s*\n\s*", "", text)  # hyphenation at a line end
    return " ".join(re.findall(r"[^\W_]+", text))


def names(text: str) -> list[Figure]:
    """Quoted names and phrases, and author citations the text writes (`Smith et al.`, `(Smith, 2019)`)."""
    found = [
        Figure("name", next(g for g in m.groups() if g is not None).strip())
        for m in _QUOTED.finditer(text)
        if any(c.isalpha() for c in next(g for g in m.groups() if g is not None))
    ]
    authors = {m.group(1) for m in _AUTHOR_ETAL.finditer(text)}
    authors |= {m.group(1) for m in _AUTHOR.finditer(text) if m.group(0).rstrip().endswith(")") or "(" in m.group(0)}
    found += [Figure("citation", a) for a in sorted(authors) if a not in _NOT_AUTHORS]
    return found


# Capitalised words that precede a year without being an author: "In 2019", "Since 2020", "Table 2019"...
_NOT_AUTHOR_WORDS = (
    "In Since From By Until Before After During Of On At For And The As To Up Through Around About Circa Year "
    "January February March April May June July August September October November December Spring Summer "
    "Autumn Fall Winter Table Figure Section"
)
_NOT_AUTHORS = frozenset(_NOT_AUTHOR_WORDS.split())


def _name_found(fig: Figure, plain_evidence: str) -> bool:
    words = _plain(fig.text).split()
    if not words:
        return True
    if len(words) <= 12:
        return " ".join(words) in plain_evidence
    # A long quotation: most of its 4-word runs must be there (a model re-punctuates and drops a word).
    grams = [" ".join(words[i : i + 4]) for i in range(len(words) - 3)]
    return sum(g in plain_evidence for g in grams) >= 0.8 * len(grams)


# --- the check -----------------------------------------------------------------------------------------------


class UnsupportedClaim(BaseModel):
    """A sentence of the answer with figures the evidence lacks."""

    sentence: str
    missing: list[str] = Field(description="The figures as written that no passage read contains.")


class GroundingReport(BaseModel):
    """What the grounding check found in one answer (reported as `Answer.grounding`)."""

    figures: int = Field(0, description="Numbers, quoted names and author citations checked.")
    found: int = Field(0, description="Of those, how many occur in the evidence read (or the question).")
    unsupported: list[UnsupportedClaim] = Field(default_factory=list)
    key_unsupported: bool = Field(
        False, description="The figures the question asks for (or most of the answer's) are not in the evidence."
    )

    @property
    def score(self) -> float:
        """1-10: the share of the answer's figures found in the evidence (10 when it states none)."""
        if not self.figures:
            return 10.0
        return round(1 + 9 * self.found / self.figures, 1)

    @property
    def missing(self) -> list[str]:
        return list(dict.fromkeys(m for c in self.unsupported for m in c.missing))


@dataclass
class EvidenceIndex:
    """The evidence read, ready for lookups: its words and every value it states."""

    plain: str
    values: list[float] = field(default_factory=list)
    cjk: bool = False  # the evidence holds Chinese, Japanese or Korean text

    @classmethod
    def of(cls, texts: Iterable[str]) -> EvidenceIndex:
        joined = "\n".join(texts)
        return cls(
            plain=f" {_plain(joined)} ", values=_all_values(_plain_numbers(joined)), cjk=bool(_CJK.search(joined))
        )

    def holds(self, fig: Figure) -> bool:
        if fig.kind == "number":
            return _number_found(fig, self.values)
        return _name_found(fig, self.plain)


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _plain_numbers(text: str) -> str:
    """Text with hyphenation at line ends joined (a number split over lines, "40-\\n96", is whole again)."""
    return re.sub(r"(\d)-\s*\n\s*(\d)", r"\1\2", unicodedata.normalize("NFKC", text))


def _stems(text: str) -> set[str]:
    """Words of 3+ letters, lower-case, a plural "s" dropped: "windows" and "window" are one word here."""
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in re.findall(r"[a-z][a-z0-9-]{2,}", text.lower())}


_FILLER = STOPWORDS | {"ha", "wa", "thi"}  # stopwords, also as _stems leaves them ("has", "was", "this")


def _about(sentence: str, fig: Figure, asked: set[str]) -> bool:
    """Whether a number is the figure the question asks for: the words just before it (back to a citation or
    another number) or the one or two after it name something the question names ("a window size of 128" for
    "what window size"; not "on 256 GPUs" for "how many tokens")."""
    start, end = fig.span
    before = re.split(r"\]|\d", sentence[max(0, start - 40) : start])[-1]
    after = " ".join(sentence[end : end + 30].split()[:2])
    return bool((_stems(before) | _stems(after)) - _FILLER & asked)


def check(answer: str, evidence: Sequence[str], question: str = "") -> GroundingReport:
    """Check the figures of `answer` against the `evidence` texts read (and the question's own words)."""
    index = EvidenceIndex.of([*evidence, question])
    index.cjk = any(_CJK.search(e) for e in evidence)  # the papers' script, not the question's
    asks = question_type(question).asks if question else frozenset()
    asked = _stems(question) - _FILLER
    report = GroundingReport()
    key = False
    numbers_found = numbers_checked = 0
    for start, end in sentence_spans(answer):
        sentence = answer[start:end]
        missing: list[str] = []
        for fig in [*numbers(sentence), *names(sentence)]:
            if fig.kind != "number" and _CJK.search(fig.text) and not index.cjk:
                continue  # a name the answer translated cannot be looked up in papers in another script
            report.figures += 1
            numbers_checked += fig.kind == "number"
            if index.holds(fig):
                report.found += 1
                numbers_found += fig.kind == "number"
                continue
            missing.append(fig.text)
            if fig.kind == "number":
                key = key or (Ask.NUMBER in asks and _about(sentence, fig, asked))
            else:
                key = key or bool(asks & {Ask.ENTITY, Ask.PERSON})
        if missing:
            report.unsupported.append(UnsupportedClaim(sentence=sentence.strip(), missing=list(dict.fromkeys(missing))))
    if report.unsupported:
        # The figures asked for, or most of what the answer states, or every number of a number question.
        every_number = Ask.NUMBER in asks and numbers_checked > 0 and numbers_found == 0
        report.key_unsupported = key or every_number or report.found * 2 < report.figures
    return report


def mark(answer: str, report: GroundingReport) -> str:
    """`answer` with each unsupported sentence marked "(not in the sources: 128)" after it."""
    out = answer
    for claim in report.unsupported:
        at = out.find(claim.sentence)
        if at < 0:
            continue
        end = at + len(claim.sentence)
        out = out[:end] + " " + _note(claim) + out[end:]
    return out


def _note(claim: UnsupportedClaim) -> str:
    return f"(not in the sources: {', '.join(claim.missing)})"


def unstreamed(streamed: str, final: str, report: GroundingReport | None) -> str:
    """What a reader of `streamed` (the text as the model wrote it) lacks of the checked `final` answer: the marks
    of unsupported sentences, which could not be streamed inline, one line each quoting its sentence (`(not in the
    sources: 128; in: “A window of 128 tokens.”)`), then any text the check added after it (the sentences the
    sources hold, given beside)."""
    claims = report.unsupported if report is not None else []
    lines = []
    plain = final
    for claim in claims:
        plain = plain.replace(" " + _note(claim), "", 1)
        if _note(claim) in streamed:
            continue
        sentence = claim.sentence if len(claim.sentence) <= 160 else claim.sentence[:159].rstrip() + "…"
        lines.append(f"\n\n{_note(claim)[:-1]}; in: “{sentence}”)")
    head, plain = streamed.strip(), plain.strip()
    added = plain[len(head) :] if head and plain.startswith(head) else ""
    return "".join(lines) + added


def notes(report: GroundingReport) -> list[str]:
    """What the reader is told about figures that are not in the sources."""
    if not report.unsupported:
        return []
    missing = ", ".join(report.missing[:6]) + (" ..." if len(report.missing) > 6 else "")
    n = len(report.unsupported)
    what = f"{n} sentence{'s' if n > 1 else ''} of the model's answer state{'s' if n == 1 else ''}"
    line = f"{what} figures no source read contains ({missing}); marked in the answer."
    if report.key_unsupported:
        line += " The figures asked for are not supported: the sentences the sources hold are given too."
    return [line]
