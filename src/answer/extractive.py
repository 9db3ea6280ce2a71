"""The answer without a language model: the evidence's sentences that state the asked fact, each cited.

Every sentence (or table row) of the evidence is scored with BM25 against the question's words (Chinese
questions with their English glossary terms, see `rag.query.expand`), then weighed by what the question asks
for (`question_type`): a number question prefers a quantity next to what it counts or near the question's
words, a "which dataset" question a named thing, a "why" question a stated reason. A sentence also takes a
share of its neighbours' relevance: papers often state the topic in one sentence and the figure in the next.
Words that name the paper (its title) and the paper's own citations ("(Lehr et al., 2012)") count less:
they say which paper, not where in it the answer is. A question that asks several things gets the best
sentence for each of its parts. The answering sentences come first, then a few supporting ones.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from ..rag.context import Evidence
from ..rag.cues import caption_labels, named_labels
from ..rag.query import expand, has_chinese, translate
from ..rag.store import StoredChunk
from .claims import Claim, Role, placed, quoted
from .grounding import EvidenceIndex, numbers
from .quantities import NUMBER_WORDS, dimension, quantities
from .question_type import QUOTED_TITLE, Ask, QuestionType, question_type
from .sentences import Unit, units_at
from .words import WORD as _WORD
from .words import stem as _stem
from .words import terms

HEADER = "Extracted from the retrieved papers (no language model configured; quoted sentences, best first):"
# The same, when a model is configured but failed (or was set aside) for this answer.
HEADER_WITHOUT_MODEL = "Extracted from the retrieved papers (without the language model; quoted sentences, best first):"
# Between the lines that answer and the supporting ones.
SUPPORT = "Also in the sources:"

_CAPTION = re.compile(r"^(Table|Figure|Fig\.)\s*[\dIVX]+[:.]")
# The paper's own numbered references ("[1]", "[2, 5]", "[12–14]", "[3; 7-9]"): next to our "[n]" they
# would read as citations of our sources. Decimals ("[0.5, 1]") and zero ("[0, 1]") are intervals, kept.
_REFERENCE = re.compile(r"\s?\[(?:[1-9]\d{0,2})(?:\s*(?:[,;]|[-–—])\s*(?:[1-9]\d{0,2}))*\]")
# A citation in author-year style, "(Lehr et al., 2012; Roark, 2011)": its names are not the sentence's topic.
_AUTHOR_YEAR = re.compile(r"\((?:[^()]*?\b(?:19|20)\d\d[a-z]?)+[^()]*\)")
# A named thing: a capitalised word not opening the sentence, an acronym, a CamelCase or alphanumeric name.
_NAME = re.compile(
    r"(?<=[\s(,;:/\"“])(?:[A-Z][a-z]+(?:[A-Z][A-Za-z]*)+|[A-Z]{2,}[A-Za-z0-9\-]*|[A-Z][a-z]{2,}|[a-z]+[A-Z][A-Za-z0-9]*)\b"
)
# A term the sentence coins or names in quotes: “hard negatives”, ‘gists’.
_COINED = re.compile(r"[“\"‘][A-Za-z][\w\- ]{2,40}[”\"’]")
# A passive without its agent ("were analysed qualitatively", no "by ..."): it cannot answer "who".
_AGENTLESS = re.compile(r"^(?!.*\bby\b).*\b(?:is|are|was|were|been|being)\s+(?:\w+ly\s+)?\w+(?:ed|en)\b", re.I)
_DEFINITION = re.compile(
    r"\b(?:is|are)\s+(?:a|an|the|defined|called|known)\b|\brefers? to\b|\bdenotes?\b|\bwe define\b|\bstands for\b"
    r"|\bconsists? of\b|\bi\.e\.|\bnamely\b",
    re.I,
)
_COMPARISON = re.compile(
    r"\bthan\b|\boutperform|\bbetter\b|\bworse\b|\bhigher\b|\blower\b|\bcompared\b|\bcomparison\b|\bimprov"
    r"|\bversus\b|\bvs\.?|\bwhereas\b|\brelative to\b|\breduc|\bincreas|\bdecreas|\bsimilar\b|\bsuperior\b"
    r"|\binferior\b|\bexceed|\bgain|\bbest\b",
    re.I,
)
_REASON = re.compile(
    r"\bbecause\b|\bsince\b|\bdue to\b|\bas a result\b|\btherefore\b|\bthus\b|\bhence\b|\bso that\b"
    r"|\bin order to\b|\bto (?:ensure|avoid|keep|make|allow|reduce|prevent)\b|\breasons?\b|\bmotivat|\bcaus"
    r"|\bfor (?:reasons of |the sake of )?\w+(?:ability|ness|ity|ency)\b|\bowing to\b|\bleads? to\b",
    re.I,
)
_PROCEDURE = re.compile(
    r"\bby\s+\w+ing\b|\busing\b|\bwe (?:use|used|train|trained|apply|applied|compute|computed|first|then|"
    r"obtain|obtained|collect|collected|measure|measured|derive|derived|describe|model)\b|\bfirst\b|\bthen\b"
    r"|\bfollowed by\b|\bsteps?\b|\bprocedure\b|\bwith\b",
    re.I,
)
_YESNO = re.compile(
    r"\bnot\b|\bno\b|\bnegligible\b|\bsignificant(?:ly)?\b|\bindeed\b|\bonly\b|\bwithout\b|\bcannot\b"
    r"|\bmarginal(?:ly)?\b|\bslight(?:ly)?\b|\bsubstantial(?:ly)?\b",
    re.I,
)
_LIMITATION = re.compile(
    r"\bcannot\b|\bcan ?not\b|\bunable\b|\blimit(?:ed|ation|ations|s)?\b|\bdrawbacks?\b|\bweakness|\bshortcoming"
    r"|\bnot (?:be )?(?:ideal|able|suitable|applicable|possible|clear|directly)\b|\bfails?\b|\bonly\b|\bhowever\b"
    r"|\brestrict|\bdoes not\b|\bdo not\b|\bfuture work\b|\bexpensive\b|\bcostly\b|\boverhead\b|\bcaveat"
    r"|\bmay (?:not|be)\b|\bmight\b|\bgenerali[sz]",
    re.I,
)
# What a method gains: it allows, enables or saves something, needs less, does better.
_ADVANTAGE = re.compile(
    r"\b(?:allow|enabl|permit|sav|avoid|reduc|improv|outperform|advantage|benefit|efficien|simplif|speed)\w*"
    r"|\b(?:less|fewer|lower|faster|cheaper|smaller|better|without (?:the )?need)\b",
    re.I,
)
_PATTERNS = {
    Ask.DEFINITION: (_DEFINITION, 1.4),
    Ask.COMPARISON: (_COMPARISON, 1.3),
    Ask.REASON: (_REASON, 1.5),
    Ask.PROCEDURE: (_PROCEDURE, 1.15),
    Ask.YESNO: (_YESNO, 1.15),
    Ask.LIMITATION: (_LIMITATION, 1.4),
    Ask.ADVANTAGE: (_ADVANTAGE, 1.4),
}
_PREFIX = 5  # stems sharing this many leading letters are taken for relatives ("satisfied", "satisfaction")
# The share of a neighbour's relevance a unit holding the asked kind of fact takes (half that from two away).
_NEIGHBOUR = 0.4
_ANSWERS = 3  # lines that answer (the best unit and one per further part of the question); the rest support
# An opening that points back at the sentence before: that sentence is quoted with it.
_ANAPHORA = re.compile(
    r"(?:Thus|Therefore|Hence|Consequently|Accordingly|As a result|In this case|In contrast|However|Nevertheless|"
    r"This|These|That|Those|Such|It|They|Both|Neither|Here)\b"
    # "This work was motivated by ...", "This paper shows ...": the paper itself, not the sentence before
    r"(?!\s+(?:work|paper|study|article|letter|thesis|report|section|chapter|appendix)\b)"
)
# A unit opening in lower case or with a citation's year ("(2006) we did not find ..."): a sentence cut before it.
_FRAGMENT = re.compile(r"[a-z]|\(\d{4}[a-z]?\)")
# A sentence in the paper's own voice: what it did, even where it cites others beside it.
_OWN = re.compile(r"\b(?:we|our|us)\b", re.I)
_CITED = 0.8  # how much a sentence reporting cited work (a citation, no "we") counts
_RESPECTIVELY = re.compile(r"\brespectively\b", re.I)
_LONG = 60  # words: a longer "sentence" is usually two columns run together by the text layer


@dataclass
class _Candidate:
    unit: Unit
    n: int  # the citation number of its evidence
    in_hit: bool  # from a retrieved chunk, not from the window around it
    terms: Counter[str]
    title_terms: frozenset[str]
    words: tuple[tuple[int, str], ...] = ()  # (offset, stem) of every word, for distances
    section_terms: frozenset[str] = frozenset()  # the words of its section's heading ("5.7 Limitations of ...")
    chunk: StoredChunk | None = None  # the chunk it is in, and where in its text: what a claim cites
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class Pick:
    """One line of an extracted answer: its text (one unit, or a unit with the one it points back at), its source
    number, the spans it quotes (chunk, start, end), and whether it answers or supports."""

    text: str
    n: int
    spans: tuple[tuple[StoredChunk, int, int, str], ...]  # (chunk, start, end, the unit's text)
    answering: bool


@lru_cache(maxsize=2048)  # ~10 KB a chunk of a real paper: ~20 MB at most
def _read(text: str) -> tuple[tuple[Unit, Counter[str], tuple[tuple[int, str], ...], int, int], ...]:
    """A passage's units with their counted terms, stemmed words and spans: the same passages (a paper's
    Introduction, the chunks around a hit) come back question after question, and splitting and stemming them is
    most of what an extracted answer costs. Read-only: callers share what is cached."""
    out = []
    for unit, start, end in units_at(text):
        if unit.row is None and len(unit.text) <= 20:
            continue
        counted = Counter(terms(_AUTHOR_YEAR.sub(" ", unit.text)))
        words = tuple((m.start(), _stem(m.group(0).lower())) for m in _WORD.finditer(unit.text))
        out.append((unit, counted, words, start, end))
    return tuple(out)


def _candidates(evidence: list[Evidence]) -> list[_Candidate]:
    """The evidence's units in reading order (so a unit's neighbours are the ones around it)."""
    out: list[_Candidate] = []
    for n, ev in enumerate(evidence, start=1):
        title = frozenset(terms(ev.title))
        for chunk in ev.chunks:
            section = frozenset(terms(chunk.section_title))
            for unit, counted, words, start, end in _read(chunk.text):
                hit = chunk.chunk_index in ev.hits and not ev.read
                out.append(_Candidate(unit, n, hit, counted, title, words, section, chunk, start, end))
    return out


class _Scorer:
    """BM25 over the evidence's own units, weighed by the kind of fact asked for."""

    def __init__(self, candidates: list[_Candidate], query: str, weighed: list[_Candidate] | None = None) -> None:
        """`weighed`: the units whose word statistics weigh the question's words (all `candidates` by default);
        evidence read whole (an Abstract) adds units to score without changing how the others are weighed."""
        self.candidates = candidates
        weighed = weighed or candidates
        self.n_weighed = len(weighed)
        self.df = Counter(t for c in weighed for t in c.terms)
        self.avg_len = sum(sum(c.terms.values()) for c in weighed) / len(weighed) or 1.0
        self.query_numbers = {q for _, q in quantities(query)}
        self.given = EvidenceIndex.of([query])  # the figures the question states itself: given, not answers
        self.codes = _codes(query, weighed)
        # "What X ...?" names the measure it asks for; "how large / how good / how many" may be answered by a count.
        self.measure_named = bool(_WHAT.search(query)) and not _HOW.search(query)
        self.tables = _named_tables(query)
        self.named = named_labels(query)  # the tables and figures it names: ("TABLE", "2"), ("FIGURE", "3")
        # Each table's caption (by source and label): every row of the table shares its relevance, wherever the
        # table was cut between chunks, not only the rows printed next to it.
        self.captions = {
            (c.n, _label(m.group(0))): i
            for i, c in enumerate(candidates)
            if c.unit.row is None and (m := _CAPTION.match(c.unit.text)) and _label(m.group(0))
        }
        self._relatives_of: dict[str, tuple[str, ...]] = {}

    def _relatives(self, t: str) -> tuple[str, ...]:
        """Evidence stems that share a long prefix with `t` but are not `t` ("satisfi" -> "satisfact")."""
        if t not in self._relatives_of:
            self._relatives_of[t] = (
                tuple(v for v in self.df if v != t and len(v) >= _PREFIX and v[:_PREFIX] == t[:_PREFIX])
                if len(t) >= _PREFIX
                else ()
            )
        return self._relatives_of[t]

    def lexical(self, c: _Candidate, q: list[str], covered: frozenset[str] = frozenset()) -> float:
        """BM25 of `c` for the question words `q`, each counted once however often the unit says it; title words
        and words already `covered` count less, and a word met only as a relative ("satisfaction" for
        "satisfied") counts half."""
        d = c.terms
        norm = 1.2 * (0.25 + 0.75 * sum(d.values()) / self.avg_len)
        total = 0.0
        for t in set(q):
            match, weight = t, 1.0
            if t not in d:
                match = next((r for r in self._relatives(t) if r in d), "")
                weight = 0.5
                if not match:
                    continue
            # Present or not: in one sentence a word said twice is wording, not twice the relevance (a sentence
            # that repeats the question's noun outranked the one stating the asked figure once).
            w = weight * math.log(1 + self.n_weighed / max(1, self.df[match])) * 2.2 / (1 + norm)
            if t in c.title_terms:
                w *= 0.35  # it names the paper, not the answer
            if t in covered:
                w *= 0.4
            total += w
        # The heading of the unit's section counts too, at half weight: a question on limitations finds the
        # sentences of a "Limitations" section even where they do not repeat the word.
        for t in set(q) & c.section_terms - c.title_terms - covered:
            total += 0.5 * math.log(1 + self.n_weighed / max(1, self.df[t]))
        return total

    def fit(self, c: _Candidate, qt: QuestionType, q: list[str]) -> float:
        """How well the shape of `c` fits what is asked (1.0: neutral)."""
        if not qt.asks:
            # No kind of fact read from the wording ("what matrix dimension and sparsity were used"): a unit that
            # gives one of the question's terms its value ("dimension d = 100") states what is asked.
            return _BOUND ** _binds(c, q)
        fits = [self._fit_one(ask, c, qt, q) for ask in qt.asks]
        # A unit that fits several of the asked kinds ("10 catchments from Australia ...") beats one that fits
        # one of them; one that fits none takes the mildest penalty.
        good = [m for m in fits if m > 1.0]
        return math.prod(good) if good else min(fits, default=1.0)

    def _fit_one(self, ask: Ask, c: _Candidate, qt: QuestionType, q: list[str]) -> float:
        text = c.unit.text
        if ask is Ask.NUMBER:
            # A quantity the question states ("on 100,000 sentences", "a 512 x 512 image") sets the scene; the
            # answer is a quantity it does not state.
            found = [(i, v) for i, v in quantities(text) if v not in self.query_numbers and not self._given(v)]
            if self.measure_named:
                # "What kappa did the human experts reach?" asks for a measure: "we asked 6 human experts" counts
                # what the question names, it does not measure it.
                found = [(i, v) for i, v in found if not _counts_asked(c, i, v, q)]
            if not found:
                return 0.6
            offsets = [i for i, _ in found]
            heads = _heads(qt.counted)
            counts = _counts(c, found, heads)
            if not counts and all(NUMBER_WORDS.match(v) for _, v in found):
                # "two simple constraints", "two runs, one for English": a number word says little unless it
                # counts what is asked; a measure ("what f-measures") is a figure
                return 1.1
            unit = 0.1 if any(not re.fullmatch(r"[-+±]?[\d,.]+", v) for _, v in found) else 0.0
            return 1.3 + 0.5 * _proximity(c, offsets, q) + unit + 0.6 * counts + _measures(qt, found)
        if ask in (Ask.ENTITY, Ask.PERSON):
            # The names of a citation ("(Osborne & Rubinstein, 1994)") say whom the paper cites, not what it names.
            text = _AUTHOR_YEAR.sub(" ", text)
        if ask is Ask.ENTITY:
            names = [m.group(0) for m in _NAME.finditer(text) if _stem(m.group(0).lower()) not in q]
            return 1.3 if names or _COINED.search(text) else 0.85
        if ask is Ask.PERSON:
            if [m for m in _NAME.finditer(text) if _stem(m.group(0).lower()) not in q]:
                return 1.3
            return 0.7 if _AGENTLESS.search(text) else 1.0  # "transcripts were analysed" does not say who did it
        pattern, gain = _PATTERNS[ask]
        return gain if pattern.search(text) else 0.9

    def _given(self, quantity: str) -> bool:
        """True when every number of `quantity` is one the question states (in any form: "100, 000", "2.16Ghz")."""
        figures = numbers(quantity)
        return bool(figures) and all(self.given.holds(f) for f in figures)

    def qualified(self, c: _Candidate) -> float:
        """The share of the question's codes (`_codes`) the unit holds: "WOEparse", "CN1", "8TiO2", "T08"."""
        if not self.codes:
            return 0.0
        held = _held(c.unit.text)
        return sum(1 for code in self.codes if code in held) / len(self.codes)

    def score(self, c: _Candidate, qt: QuestionType, q: list[str], lexical: float, near: float = 0.0) -> float:
        """The candidate's score given its own `lexical` relevance and its best neighbour's (`near`), which
        counts unless the unit lacks what is asked: the figure often follows the sentence naming the topic. A unit
        holding the question's codes (the run, the specimen, the row it asks about) counts more."""
        fit = self.fit(c, qt, q)
        if fit >= 1.0:
            lexical += _NEIGHBOUR * near
        if lexical == 0.0:
            return 0.0
        text = c.unit.text
        s = lexical * fit * (1.0 + _QUALIFIED * self.qualified(c))
        if c.unit.row is None and (caption := _CAPTION.match(text)):
            # A caption names what a table shows, rarely the answer itself; that of the figure or table the
            # question names ("the spectra of Figure 1", "(Fig. 3a)") states its setting: "N = 500, K = 2".
            s *= _NAMED_TABLE if caption_labels(caption.group(0)) & self.named else 0.6
        elif c.unit.row is not None and _label(c.unit.row.caption) in self.tables:
            s *= _NAMED_TABLE  # a row of the table the question names ("listed in Table 1")
        if text.rstrip().endswith("?"):
            s *= 0.5  # a question the paper asks, not an answer
        if (n_words := len(c.words)) > _LONG:
            s *= math.sqrt(_LONG / n_words)
        if (_AUTHOR_YEAR.search(text) or _REFERENCE.search(text)) and not _OWN.search(text):
            s *= _CITED  # what a cited paper found ("the UC Irvine team [7] used 1000 computers"), not this one
        if _FRAGMENT.match(text):
            s *= 0.8  # the tail of a sentence the chunk boundary cut ("on a teacher with M = 2 in Fig. 3a.")
        return s * (1.25 if c.in_hit else 1.0)

    def scores(
        self, qt: QuestionType, q: list[str], covered: frozenset[str] = frozenset(), skip: frozenset[int] = frozenset()
    ) -> dict[int, float]:
        """Every candidate's score (except `skip`)."""
        lex = [self.lexical(c, q, covered) for c in self.candidates]
        out: dict[int, float] = {}
        for i, c in enumerate(self.candidates):
            if i in skip:
                continue
            # A row shares nothing with the rows around it (each states its own run): it shares its caption's
            # relevance, as every other row of the table does, or without one that of the prose next to it.
            caption = self.captions.get((c.n, _label(c.unit.row.caption)), -1) if c.unit.row is not None else -1
            near = (
                [lex[caption] / 2]
                if caption >= 0
                else [
                    lex[j] / abs(j - i)
                    for j in (i - 2, i - 1, i + 1, i + 2)
                    if 0 <= j < len(lex)
                    and self.candidates[j].n == c.n
                    and not (c.unit.row and self.candidates[j].unit.row)
                ]
            )
            if i > 0 and _leans_back(c, self.candidates[i - 1]):
                # "They have achieved f-measures of 0.64 and 0.61": what "they" are is the sentence before it
                near.append(lex[i - 1] / _NEIGHBOUR)
            out[i] = self.score(c, qt, q, lex[i], max(near, default=0.0))
        return out


_WHAT = re.compile(r"\b(?:what|which)\b", re.I)
_HOW = re.compile(r"\bhow\b|\bnumber of\b", re.I)
_QUALIFIED = 0.6  # how much more a unit holding all of the question's codes counts
# Chinese characters and full-width punctuation divide tokens too: "论文中，Y369F" holds the code "Y369F".
_TOKEN = re.compile(r"[^\s/–—(),;:\[\]\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
_CODE = re.compile(r"(?=.*\d)(?=.*[A-Za-z])|[a-z]+[A-Z]|[A-Z]{2,}")  # a digit and a letter, CamelCase, acronym
_CODE_SHARE = 0.25  # a code held by more of the evidence's units than this names the topic, not the one asked


def _tokens(text: str) -> frozenset[str]:
    """The tokens of a text as printed, stripped of closing punctuation: "Al–4Cu/8TiO2" -> Al, 4Cu, 8TiO2."""
    return frozenset(t.strip(".,;:!?'\"’”") for t in _TOKEN.findall(text))


def _held(text: str) -> frozenset[str]:
    """`_tokens` case-folded, what codes are looked up in: a name the question capitalises ("the Shaping action
    term") may be written in lower case where it is answered ("– shaping | Score: 0.59")."""
    return frozenset(t.casefold() for t in _tokens(text))


def _codes(query: str, candidates: list[_Candidate]) -> frozenset[str]:
    """The question's codes: tokens that name one run, specimen, model or row among several ("WOEparse", "CN1",
    "8TiO2", "T08", "Y369F") by their shape (digits with letters, inner capitals, acronyms), and that only a few of
    the evidence's units hold (a code every unit holds, the paper's own name, says which paper, not which row)."""
    # A title quoted in the question ('Combating Web Spam with TrustRank') says which paper, not which row.
    asked = QUOTED_TITLE.sub(" ", query)
    codes = {t for t in _tokens(asked) if len(t) >= 2 and _CODE.match(t) and not _YEAR.fullmatch(t)}
    # A capitalised word inside the question ("Stewarts Creek", "Add Driver") names a site, a run, a condition.
    codes |= {m.group(0) for m in re.finditer(r"(?<=[a-z,] )[A-Z][a-z]{2,}\b", asked)}
    # A Chinese question spells in Latin letters only what it names: "日语（Japanese）测试集".
    if has_chinese(asked):
        codes |= {m.group(0) for m in re.finditer(r"(?<=[\u4e00-\u9fff（(“])[A-Z][a-z]{2,}\b", asked)}
    # So does a word of the paper's own title ("Bigtable", "Analytics" of "Google Analytics" is kept: not in it).
    titles = frozenset().union(*(c.title_terms for c in candidates)) if candidates else frozenset()
    codes = {code for code in codes if _stem(code.lower()) not in titles}
    if not codes or not candidates:
        return frozenset()
    held = [_held(c.unit.text) for c in candidates]
    folded = {code.casefold() for code in codes}
    return frozenset(code for code in folded if 0 < sum(code in h for h in held) <= _CODE_SHARE * len(held))


_YEAR = re.compile(r"(?:19|20)\d\d[a-z]?")
_NAMED_TABLE = 1.5  # how much more a row of the table the question names counts
_TABLE_NAMED = re.compile(r"\b(?:Table|Tab\.)\s*([\dIVX]+[a-z]?)\b", re.I)


def _label(caption: str) -> str:
    """The label of a caption or row's table cell, normalised: "Table 3: Denotation ..." and "Table 3" -> "3"."""
    m = _TABLE_NAMED.match(caption.strip())
    return m.group(1).upper() if m else ""


def _named_tables(query: str) -> frozenset[str]:
    """The tables the question names ("in Table 4", "(Tab. 2)"), as labels."""
    return frozenset(m.group(1).upper() for m in _TABLE_NAMED.finditer(query))


def _measures(qt: QuestionType, found: list[tuple[int, str]]) -> float:
    """0.4 when a quantity measures what the question asks ("15 hours" for "how long"), -0.3 when the unit of
    every quantity is of another kind ("200 million" users, "10 iterations" for "how long"), else 0."""
    if not qt.dimensions:
        return 0.0
    kinds = {dimension(v) for _, v in found}
    if kinds & qt.dimensions:
        return 0.4
    return -0.3 if None not in kinds else 0.0


def _proximity(c: _Candidate, offsets: list[int], q: list[str]) -> float:
    """1.0 when a quantity stands right by a question word, falling off over about six words."""
    near = [k for k, (_, w) in enumerate(c.words) if w in q]
    if not near:
        return 0.0
    best = 0.0
    for off in offsets:
        k = _word_at(c, off)
        best = max(best, math.exp(-min(abs(k - i) for i in near) / 6))
    return best


def _word_at(c: _Candidate, offset: int) -> int:
    """Index of the first word at or after character `offset`."""
    return next((k for k, (start, _) in enumerate(c.words) if start >= offset), len(c.words) - 1)


@lru_cache(maxsize=256)
def _heads(counted: tuple[str, ...]) -> frozenset[str]:
    """The words a number question counts: "subjects" for "how many subjects" (English in the question's own
    form: "parameters" is not "parameter settings"); for Chinese, the stem of the glossary's English word."""
    heads: set[str] = set()
    for phrase in counted:
        if re.search(r"[\u4e00-\u9fff]", phrase):
            heads |= {_stem(w) for w in terms(expand(phrase).replace(phrase, " "))[-1:]}
        elif words := _WORD.findall(phrase):
            heads.add(words[-1].lower())
    return frozenset(heads)


def _counts(c: _Candidate, found: list[tuple[int, str]], heads: frozenset[str]) -> float:
    """1.0 when a quantity counts what the question counts: "46 subjects" for "how many subjects", the thing
    named within four words after the quantity ("1.7 million distinct normalized relation phrases"; or, written as
    a tally, three before it: "subjects (n = 46)"); not "each of the drivers chooses from four routes"."""
    if not heads:
        return 0.0
    # Where every number of the unit stands, those the question gives too: what a number counts follows it, up to
    # the next number ("several billion pages into 31,003,946 sites": "billion" counts pages, not sites).
    numbers_at = sorted(_word_at(c, off) for off, _ in quantities(c.unit.text))
    for off, quantity in sorted(found):
        # From the quantity's last word: "million" in "1.7 million" is part of the number, not what it counts.
        k = max(_word_at(c, off), _word_at(c, off + len(quantity) - 1) - 1)
        stop = min((j for j in numbers_at if j > k), default=len(c.words))
        around = c.words[k + 1 : min(k + 5, stop)]
        if _TALLY.search(c.unit.text[:off]):
            around += c.words[max(0, k - 3) : k]  # "subjects (n = 46)", "participants: 46": the noun before
        if heads & {w for _, w in around} or heads & {_surface(c.unit.text, start).lower() for start, _ in around}:
            return 1.0
    return 0.0


def _counts_asked(c: _Candidate, offset: int, quantity: str, q: list[str]) -> bool:
    """Whether a bare count ("6", "five") stands right before a word of the question: "6 human experts"."""
    if dimension(quantity) is not None or not re.fullmatch(r"\d[\d,]*|[A-Za-z]+", quantity):
        return False  # a figure with a unit measures something ("6 ms", "40%")
    k = _word_at(c, offset)
    after = c.words[k + 1 : k + 2]
    return bool(after) and after[0][1] in q


# What stands between a counted noun and its count written after it: "subjects (n = 46)", "sites: 135".
_TALLY = re.compile(r"(?:[(\[]\s*[nN]\s*=|[:=(])\s*$")


_BOUND = 1.3
# A term given its value: "dimension d = 100", "sparsity s = 2171", "learning rate η = 0.05", "k=5".
_BINDING = re.compile(r"([A-Za-z][\w-]*)(?:\s+[A-Za-zα-ωΑ-Ω][\w∗*]{0,2})?\s*[=≈]\s*[-+]?\$?\d")


def _binds(c: _Candidate, q: list[str]) -> int:
    """How many of the question's terms (up to two) the unit sets to a value ("For dimension d = 100 and sparsity
    s = 2171": two)."""
    return min(2, len({t for m in _BINDING.finditer(c.unit.text) if (t := _stem(m.group(1).lower())) in q}))


def _surface(text: str, start: int) -> str:
    m = _WORD.match(text, start)
    return m.group(0) if m else ""


# Chinese question words: the question type reads them; their glossary words ("how many number") are no topic.
_ZH_ASKING = re.compile(r"多少|多大|多长|哪些|哪个|什么|为什么|如何|怎么|是否")


def _query_terms(text: str) -> list[str]:
    """The question's stemmed content words, with English for the Chinese research vocabulary it uses."""
    return terms(translate(_ZH_ASKING.sub(" ", text)))


PER_SOURCE = 3  # lines of an answer one source may give, where the answer should reach several


def extract(query: str, evidence: list[Evidence], max_sentences: int = 6, per_source: int = PER_SOURCE) -> list[Pick]:
    """The lines that answer, then those that support; source numbers count from 1 in `evidence` order."""
    candidates = _candidates(evidence)
    if not candidates:
        return []
    qt = question_type(query)
    q = _query_terms(query)
    # Evidence read whole (the paper's Abstract) supports: the answer is led by what the search found for the question.
    supporting = frozenset(i for i, c in enumerate(candidates) if evidence[c.n - 1].read)
    found = [c for i, c in enumerate(candidates) if i not in supporting]
    scorer = _Scorer(candidates, query, weighed=found)
    scores = scorer.scores(qt, q)
    ranked = sorted(scores, key=lambda i: (-scores[i], candidates[i].n, i))
    if scores[ranked[0]] == 0:
        # Nothing shares a word with the query: the hits' own sentences, in order.
        ranked = [i for i in range(len(candidates)) if candidates[i].in_hit] or list(range(len(candidates)))

    lead = next((i for i in ranked if i not in supporting), ranked[0])
    picked: list[tuple[list[int], bool]] = []  # each line quotes a run of consecutive units; does it answer?
    used: Counter[int] = Counter()
    seen: set[int] = set()

    def take(i: int, answering: bool = False) -> None:
        c = candidates[i]
        if i in seen or used[c.n] >= per_source or len(picked) >= max_sentences:
            return
        run = [i]
        if answering and (j := i - 1) >= 0 and j not in seen and _leans_back(c, candidates[j]):
            run = [j, i]  # "Thus, the external validity ... is limited" needs the sentence it follows from
        picked.append((run, answering))
        seen.update(run)
        used[c.n] += 1

    # Each part of the question read alone (its kind of fact, its words, every unit's score for it), once: for the
    # passage that answers several parts and for each part's own best unit.
    parts = _parts_alone(qt, scorer) if scores[ranked[0]] > 0 else []
    run = _covering_run(parts, candidates, lead, supporting)
    if run:
        picked.append((run, True))  # a passage that answers several parts of the question leads
        seen.update(run)
        used[candidates[run[0]].n] += 1
    else:
        take(lead, answering=True)
    # Each part of the question gets its own best unit (the best overall often answers one of them).
    for pt, pq, alone in parts:
        if len(picked) >= _ANSWERS:
            break
        if max(alone, key=lambda i: (alone[i], -i)) in seen:
            continue  # the unit that best answers the part alone is already quoted
        # Otherwise its best unit among the rest, the words the quoted lines hold counting less.
        covered = frozenset(t for run, _ in picked for i in run for t in candidates[i].terms)
        best = _best(scorer.scores(pt, pq, covered, frozenset(seen)), scores)
        if best >= 0:
            take(best, answering=True)
    picked[:] = _join_answers(picked, candidates)
    seen.update(i for run, _ in picked for i in run)
    for i in ranked:
        take(i)
    # The same sentence may stand in two sources (overlapping windows): it is quoted once.
    out: list[Pick] = []
    quoted: set[str] = set()
    for run, answering in picked:
        text = " ".join(candidates[i].unit.text for i in run)
        if text.casefold() not in quoted:
            quoted.add(text.casefold())
            out.append(Pick(text, candidates[run[-1]].n, _spans([candidates[i] for i in run]), answering))
    return out


_COVER_GAIN = 0.4  # how much more of the question's parts each further sentence of a leading passage must answer


def _parts_alone(qt: QuestionType, scorer: _Scorer) -> list[tuple[QuestionType, list[str], dict[int, float]]]:
    """For a question of several parts, each part with words of its own: (its type, its words, every unit's score
    for it alone); [] for a question of one part."""
    if len(qt.parts) < 2:
        return []
    out = []
    for part in qt.parts:
        if pq := _query_terms(part):
            pt = question_type(part)
            out.append((pt, pq, scorer.scores(pt, pq)))
    return out


def _covering_run(
    parts: list[tuple[QuestionType, list[str], dict[int, float]]],
    candidates: list[_Candidate],
    best: int,
    supporting: frozenset[int] = frozenset(),
) -> list[int]:
    """The run of two or three consecutive sentences of one chunk that answers more of the question's `parts`
    than the best unit alone (each part's best score within the run, relative to that part's best anywhere, summed
    over the parts), by `_COVER_GAIN` per added sentence; [] when no run does."""
    shares: list[dict[int, float]] = []
    for _, _, alone in parts:
        top = max(alone.values(), default=0.0)
        if top > 0:
            shares.append({i: v / top for i, v in alone.items()})
    if len(shares) < 2:
        return []

    def answered(run: list[int]) -> float:
        return sum(max(share.get(i, 0.0) for i in run) for share in shares)

    found, most = [], answered([best])
    for i in range(len(candidates)):
        for size in (2, 3):
            run = list(range(i, i + size))
            if run[-1] >= len(candidates) or any(candidates[j].unit.row is not None for j in run):
                continue  # a table row stands alone
            if supporting.intersection(run):
                continue  # evidence read whole supports, never leads
            if len({id(candidates[j].chunk) for j in run}) > 1:
                continue  # one span of one chunk
            if (covered := answered(run)) > most + _COVER_GAIN * (size - 1):
                found, most = run, covered
    return found


_JOIN_GAP = 2  # sentences between two answering ones of one chunk that are quoted with them as one passage


def _join_answers(picked: list[tuple[list[int], bool]], candidates: list[_Candidate]) -> list[tuple[list[int], bool]]:
    """The lines that answer parts of the question and stand close together in one chunk (the number of
    documents in one sentence, the datasets' names in the next) become the first line: the passage from the
    first to the last, quoted whole, so the answer leads with one span that answers every part it can."""
    if not picked:
        return picked
    lead, rest = picked[0][0], []
    for run, answering in picked[1:]:
        joined = list(range(min(*lead, *run), max(*lead, *run) + 1))
        gap = len(joined) - len(set(lead) | set(run))
        if answering and gap <= _JOIN_GAP and len({id(candidates[i].chunk) for i in joined}) == 1:
            lead = joined
        else:
            rest.append((run, answering))
    return [(lead, picked[0][1]), *rest]


def _spans(run: list[_Candidate]) -> tuple[tuple[StoredChunk, int, int, str], ...]:
    """The spans a line quotes: one per chunk its units are in, from the first unit's start to the last's end."""
    out: list[tuple[StoredChunk, int, int, str]] = []
    for c in run:
        if c.chunk is None:
            continue
        if out and out[-1][0] is c.chunk:
            chunk, start, _, shown = out[-1]
            out[-1] = (chunk, start, c.end, f"{shown} {c.unit.text}")
        else:
            out.append((c.chunk, c.start, c.end, c.unit.text))
    return tuple(out)


def _best(part_scores: dict[int, float], scores: dict[int, float]) -> int:
    """The unit that best answers a part of the question (its score plus 0.3 of the whole question's), or -1."""
    best, top = -1, 0.0
    for i, s in part_scores.items():
        total = s + 0.3 * scores[i]
        if s > 0 and total > top:
            best, top = i, total
    return best


def _leans_back(c: _Candidate, before: _Candidate) -> bool:
    """Whether prose unit `c` points back at the unit `before` it in the same passage: it opens so ("Thus, ...",
    "This ...", "However, ...") or its values follow a list named before ("0.95, 0.99 and 0.99, respectively")."""
    text = c.unit.text
    points = bool(_ANAPHORA.match(text) or _RESPECTIVELY.search(text))
    return c.unit.row is None and before.unit.row is None and before.n == c.n and points


def strip_references(sentence: str) -> str:
    """`sentence` without the paper's own bracketed reference numbers."""
    return _REFERENCE.sub("", sentence).strip()


@dataclass(frozen=True)
class Extracted:
    """An extracted answer: its text (a header, then one cited line each) and its claims, one per quoted span."""

    text: str
    claims: list[Claim]


def extracted(
    query: str, evidence: list[Evidence], max_sentences: int = 6, header: str = HEADER, *, spread: bool = True
) -> Extracted:
    """The cited sentences as a short list under a header that says they are extracted; the paper's own
    reference numbers are stripped, so every [n] is one of our sources. Each line's spans are its claims.

    `spread`: at most `PER_SOURCE` lines from one source, so that a survey's answer reaches several papers; a
    question about one paper (Track A) is answered from that paper's passages, as many of its lines as fit."""
    picks = extract(query, evidence, max_sentences, PER_SOURCE if spread else max_sentences)
    if not picks:
        return Extracted("No passage in the knowledge base answers this question.", [])
    lines = [header]
    claims: list[Claim] = []
    for pick in picks:
        role: Role = "answer" if pick.answering else "support"
        if role == "support" and SUPPORT not in lines and len(lines) > 1:
            lines.append(SUPPORT)  # the lines that answer first, then those that back them, marked as such
        claims += [
            quoted(chunk, a, b, n=pick.n, role=role, shown=strip_references(unit)) for chunk, a, b, unit in pick.spans
        ]
        lines.append(f"- {strip_references(pick.text)} [{pick.n}]")
    return Extracted("\n".join(lines), placed(claims, "\n".join(lines)))


def extractive_answer(query: str, evidence: list[Evidence], max_sentences: int = 6, header: str = HEADER) -> str:
    """The text of `extracted`."""
    return extracted(query, evidence, max_sentences, header).text
