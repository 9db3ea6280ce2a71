"""Which paper a question is about, located by retrieval over the catalogue, not by regexes alone.

Every paper is scored against the question from three views:
- its aliases (title, short title, names it introduces, author surnames, ids; rag/identity.py) found in the
  question as phrases, each weighed by how many papers share it;
- BM25 over its title, aliases and abstract (the catalogue's `search_text`);
- the embedding of its title and abstract, when the retriever embeds questions anyway (`dense`): with BM25 alone
  the view added nothing on the dev questions, and embedding a question costs loading the model.
One paper is *located* when it stands out from the rest by a margin (calibrated on ../shared/devset). The
question's own wording says whether it refers to one paper ("the X paper", "in 'Title'", "X's", "这篇") or
surveys the field ("which papers ...", "哪些论文"); a question that refers to one paper when none stands out
is about a paper the knowledge base does not hold.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .cues import (
    NAME_IN_QUESTION,
    QUOTED,
    STOPWORDS,
    asks_which_papers,
    content_words,
    fold,
    is_field_wide,
    is_survey,
    refers_to_one_paper,
    refers_to_several_papers,
)
from .store import PaperRecord

if TYPE_CHECKING:
    from .store import PaperStore

# Calibrated on the dev questions (see README, "Finding the paper"): a paper is located when its score
# reaches LOCATE_SCORE and leads the next paper by LOCATE_MARGIN.
LOCATE_SCORE = 0.55
LOCATE_MARGIN = 0.2
W_LEXICAL = 0.45  # BM25 over title + aliases + abstract, relative to the best paper
W_DENSE = 0.35  # cosine of title + abstract, above the catalogue's floor
DENSE_FLOOR = 0.25  # cosine similarity of an unrelated paper
BM25_FLOOR = 8.0  # a paper BM25 score below this is a chance match of common words
SEVERAL_ALIAS = 0.5  # the alias score of a paper named by a phrase of its title ("the temporal stereo matching paper")
_IDS = ("doc_id",)  # what locating reads of a paper search hit: its id (and the score)

_ASCII = "A-Za-z0-9"
# Alias kinds that name the paper itself (its title, name, authors, ids), as opposed to things it mentions.
_NAMING = frozenset({"short", "stem", "subtitle", "name", "acronym", "author", "first_author", "id"})
_OWN_NAMES = frozenset({"short", "subtitle", "name", "acronym", "id"})


@dataclass
class Candidate:
    """One paper's evidence for a question."""

    doc_id: str
    title: str
    alias: float = 0.0
    matched: list[str] = field(default_factory=list)
    lexical: float = 0.0
    bm25: float = 0.0
    dense: float = 0.0
    title_hit: bool = False
    own_name: bool = False  # named by its own name, id or full title (not only by topic words)
    title_words: list[str] = field(default_factory=list)  # words of its title the question uses
    size: int = 0  # its body chunks: of two copies of one paper, the fuller one is the paper

    @property
    def same(self) -> str:
        """Its title, folded: two copies of one paper (a full text and an excerpt) share it."""
        return re.sub(r"[^a-z0-9]+", "", fold(self.title).lower())

    @property
    def score(self) -> float:
        return self.alias + W_LEXICAL * self.lexical + W_DENSE * self.dense


@dataclass
class Location:
    """What the locator decided for a question."""

    candidates: list[Candidate]
    survey: bool
    one_paper: bool
    which_papers: bool = False  # "which papers ...": asks for papers, not about one it names
    missing: list[str] = field(default_factory=list)
    field_wide: bool = False  # "which methods ...": a survey unless a paper is named by its own name
    several: bool = False  # "the X paper and the Y paper": the question names several papers

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def _rival(self, cand: Candidate) -> Candidate | None:
        """The strongest candidate that is not a copy of `cand` (a copy does not compete with it)."""
        return next((c for c in self.candidates if c is not cand and c.same != cand.same), None)

    @property
    def margin(self) -> float:
        if not self.candidates:
            return 0.0
        rival = self._rival(self.candidates[0])
        return self.candidates[0].score - (rival.score if rival else 0.0)

    def _fullest(self, cand: Candidate) -> str:
        """Of the copies of a paper in the catalogue, the one with the most text."""
        return max((c for c in self.candidates if c.same == cand.same), key=lambda c: c.size).doc_id

    @property
    def doc_id(self) -> str | None:
        """The paper the question is about, when one stands out."""
        best = self.best
        if best is None:
            return None
        rival = self._rival(best)
        if best.alias >= 0.8 and (rival is None or rival.alias < 0.6):
            return self._fullest(best)  # named by its title, its own name, its authors or its id
        if best.score >= LOCATE_SCORE and self.margin >= LOCATE_MARGIN:
            return self._fullest(best)
        return None

    @property
    def named(self) -> list[str]:
        """The papers the question names: the located one, or several named as strongly ("compare X with Y")."""
        strong: dict[str, str] = {}  # one doc_id per paper, its copies left out
        # Where the wording names several papers, a paper named by a phrase of its title words counts too, as does
        # one the question's words locate on their own.
        for c in sorted(self.candidates, key=lambda c: -c.alias):
            if c.alias >= 0.8 or (self.several and (c.alias >= SEVERAL_ALIAS or c.score >= LOCATE_SCORE)):
                strong.setdefault(c.same, self._fullest(c))
        if len(strong) >= 2:
            return list(strong.values())[:4]
        located = self.doc_id
        return [located] if located else []

    @property
    def identifying_words(self) -> list[str]:
        """The words of the question that named the located paper (no help in finding a passage in it)."""
        best = self.best
        if best is None or not self.doc_id:
            return []
        # The paper's title words in the question name it too, however few they are ("study of catch trials").
        return list(dict.fromkeys([*best.matched, *best.title_words]))


class _Alias:
    """One alias of one paper as the locator matches it; its pattern is compiled on first use (a question only
    ever tries the few aliases that could match it, see `_AliasIndex`)."""

    __slots__ = ("_pattern", "doc_id", "flags", "kind", "source", "text", "weight")

    def __init__(self, doc_id: str, text: str, kind: str, weight: float, source: str, flags: int) -> None:
        self.doc_id, self.text, self.kind, self.weight = doc_id, text, kind, weight
        self.source, self.flags = source, flags
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self.source, self.flags)
        return self._pattern


class _AliasIndex:
    """Aliases filed by the ASCII word (or, for an arXiv id, the digits) a match of theirs must start with.

    Every alias pattern starts where no ASCII letter or digit precedes, with the first word of the alias
    (`_alias_pattern`), so a question can only match the aliases filed under a prefix of one of its words: those
    are tried, not the tens of thousands a large catalogue holds. Aliases that start otherwise are always tried.
    """

    def __init__(self, aliases: Sequence[_Alias]) -> None:
        self.words: dict[str, list[_Alias]] = {}
        self.digits: dict[str, list[_Alias]] = {}
        self.always: list[_Alias] = []
        for a in aliases:
            if a.kind == "id" and fold(a.text).strip().lower().startswith("arxiv:"):
                lead = re.match(r"\d+", fold(a.text).strip()[len("arxiv:") :].strip())
                (self.digits.setdefault(lead.group(0), []) if lead else self.always).append(a)
                continue
            lead = re.match(rf"[{_ASCII}]+", fold(a.text).strip())
            (self.words.setdefault(lead.group(0).lower(), []) if lead else self.always).append(a)

    def candidates(self, text: str) -> list[_Alias]:
        """The aliases that may match somewhere in `text` (a superset of those that do), in a stable order."""
        found: dict[int, _Alias] = {id(a): a for a in self.always}
        for run in set(re.findall(rf"[{_ASCII}]+", text)):
            run = run.lower()
            for end in range(1, len(run) + 1):
                for a in self.words.get(run[:end], ()):
                    found.setdefault(id(a), a)
        for digits in set(re.findall(r"\d+", text)):
            for a in self.digits.get(digits, ()):
                found.setdefault(id(a), a)
        return list(found.values())


class PaperLocator:
    """Scores the papers of a catalogue against questions (build once per catalogue)."""

    def __init__(self, store: PaperStore, papers: Sequence[PaperRecord], *, dense: bool = True) -> None:
        """`dense`: score papers by the embedding of the question too (see the module docstring)."""
        self.store = store
        self.dense = dense
        self.papers = {p.doc_id: p for p in papers}
        share = Counter(a.text.casefold() for p in papers for a in {x.text: x for x in p.aliases}.values())
        self.aliases: list[_Alias] = []
        for p in papers:
            for a in p.aliases:
                if a.kind in ("year", "title") or a.weight <= 0 or len(a.text) < 2:
                    continue
                # A name several papers carry ("IEEE", "CNN", a common surname) says less about each of them.
                weight = a.weight if a.kind in ("id", "subtitle") else a.weight / share[a.text.casefold()]
                source = _alias_pattern(a.text, a.kind)
                if source is not None:
                    self.aliases.append(_Alias(p.doc_id, a.text, a.kind, weight, *source))
        self.index = _AliasIndex(self.aliases)
        self.titles = {p.doc_id: set(content_words(p.title)) for p in papers}
        self.folded_titles = {p.doc_id: fold(p.title).lower() for p in papers}
        # Title word -> papers whose title has it: the papers a question's words can point at by title.
        self.title_index: dict[str, set[str]] = {}
        for doc_id, title_words in self.titles.items():
            for word in title_words:
                self.title_index.setdefault(word, set()).add(doc_id)

    def locate(self, query: str, k: int = 10) -> Location:
        """Evidence for every paper that has some, strongest first."""
        text = fold(query)
        cands: dict[str, Candidate] = {}

        def cand(doc_id: str) -> Candidate:
            if doc_id not in cands:
                cands[doc_id] = Candidate(doc_id, self.papers[doc_id].title, size=self.papers[doc_id].n_chunks)
            return cands[doc_id]

        self._alias_evidence(text, cand)
        self._title_evidence(text, cand)
        if self.papers and (content_words(query) or re.search(r"[\u4e00-\u9fff]", query)):
            for p in self.store.search_papers_bm25(query, k=k, fields=_IDS):
                if p.doc_id in self.papers and p.score:
                    c = cand(p.doc_id)
                    c.bm25 = p.score
            best = max((c.bm25 for c in cands.values()), default=0.0)
            for c in cands.values():
                # Relative to the best paper, and shrunk when even the best is a chance match.
                c.lexical = (c.bm25 / best) * min(1.0, best / BM25_FLOOR) if best else 0.0
            for p in self.store.search_papers(query, k=k, fields=_IDS) if self.dense else []:
                if p.doc_id in self.papers and p.score is not None:
                    cand(p.doc_id).dense = max(0.0, (p.score - DENSE_FLOOR) / (1 - DENSE_FLOOR))
        words = set(content_words(text))
        for c in cands.values():
            c.title_words = sorted(self.titles.get(c.doc_id, set()) & words)
        ranked = sorted(cands.values(), key=lambda c: -c.score)
        return Location(
            candidates=ranked,
            survey=is_survey(text),
            which_papers=asks_which_papers(text),
            one_paper=refers_to_one_paper(text),
            missing=self._missing_names(text),
            field_wide=is_field_wide(text),
            several=refers_to_several_papers(text),
        )

    def _alias_evidence(self, text: str, cand: Callable[[str], Candidate]) -> None:
        spans: list[tuple[str, float, str, str, int, int]] = []
        for a in self.index.candidates(text):
            m = a.pattern.search(text)
            if m:
                spans.append((a.doc_id, a.weight, a.kind, m.group(0), m.start(), m.end()))
        # Where in the question each paper's names matched: many aliases match at the same places (a common word, a
        # surname several papers share), so containment is checked per place, not per pair of matches.
        places: dict[tuple[int, int], set[str]] = {}
        for doc_id, _, _, _, start, end in spans:
            places.setdefault((start, end), set()).add(doc_id)

        def inside_another(doc_id: str, start: int, end: int) -> bool:
            return any(
                s <= start and end <= e and e - s > end - start and (len(docs) > 1 or doc_id not in docs)
                for (s, e), docs in places.items()
            )

        found: dict[str, list[tuple[float, str, str]]] = {}
        for doc_id, weight, kind, matched, start, end in spans:
            # A phrase inside a longer one that names another paper is part of that name: "Information
            # Extraction" in 'Sparse Information Extraction: ...' does not name "... Open Information Extraction".
            if not inside_another(doc_id, start, end):
                found.setdefault(doc_id, []).append((weight, kind, matched))
        for doc_id, hits in found.items():
            hits.sort(reverse=True)
            authors = {t for _, kind, t in hits if kind in ("author", "first_author") and " " not in t}
            best = hits[0][0]
            if len(authors) >= 2:
                best = max(best, 0.9)  # two authors of the same paper: "Agarwal, Negahban and Wainwright"
            elif authors and re.search(rf"{re.escape(next(iter(authors)))}(?:['’]s|\s+et\s+al|\s+and\s+[A-Z])", text):
                best = max(best, 0.7)  # "Bohnet's system", "Focke et al.", "Jain and Seung"
            # A second kind of evidence (a name and an author) makes the first surer.
            kinds = {kind for _, kind, _ in hits}
            second = next((w for w, kind, _ in hits[1:] if kind != hits[0][1]), 0.0)
            c = cand(doc_id)
            c.alias = min(1.0, best + 0.3 * second if len(kinds) > 1 else best)
            # Only what names the paper itself; a mentioned dataset or baseline ("GSM8K", "BM25") also says
            # where in the paper the answer is.
            c.matched = list(dict.fromkeys(t for _, kind, t in hits if kind in _NAMING))
            c.own_name = any(kind in _OWN_NAMES or kind == "stem" for _, kind, _ in hits)

    def _title_evidence(self, text: str, cand: Callable[[str], Candidate]) -> None:
        """A title quoted, written out, or most of its words present ("the paper on automated narrative ...")."""
        quoted = [q for q in QUOTED.findall(text)]
        words = set(content_words(text))
        lowered = text.lower()
        # Only papers whose title shares a word with the question (or a quote in it) can score here.
        for doc_id in sorted(self._titled(words | {w for q in quoted for w in content_words(q)})):
            title_words = self.titles[doc_id]
            if len(title_words) < 2:
                continue
            share = len(title_words & words) / len(title_words)
            best_quote = max((_overlap(q, title_words) for q in quoted), default=0.0)
            score = 0.0
            if best_quote >= 0.8 or self.folded_titles[doc_id] in lowered:
                score = 1.0
                cand(doc_id).own_name = True
            elif share >= 0.75 and len(title_words & words) >= 3:
                score = 0.85
            elif share >= 0.5 and len(title_words & words) >= 3:
                score = 0.5
            if score:
                c = cand(doc_id)
                if score > c.alias:
                    c.alias = max(c.alias, score) if not c.matched else min(1.0, max(c.alias, score) + 0.1)
                c.matched = list(dict.fromkeys([*c.matched, *sorted(title_words & words)]))
                c.title_hit = True

    def _titled(self, words: set[str]) -> set[str]:
        """Papers whose title holds one of `words`."""
        return {doc_id for w in words for doc_id in self.title_index.get(w, ())}

    def _missing_names(self, text: str) -> list[str]:
        """Names the question gives a paper ("the ResNet paper", 《...》) that no paper of the catalogue carries."""
        missing = []
        for m in NAME_IN_QUESTION.finditer(text):
            name = next(g for g in m.groups() if g).strip()
            if name.lower() in STOPWORDS or not re.search(r"[A-Z]", name):
                continue
            # Only a paper's own names count: "the BERT paper" is not a paper that merely uses BERT.
            own = (a for a in self.index.candidates(name) if a.kind in _OWN_NAMES)
            if not any(a.pattern.search(name) for a in own) and not any(
                name.lower() in p.title.lower() for p in self.papers.values()
            ):
                missing.append(name)
        # "Marten-2B" when the catalogue holds Marten-1B: a sibling of a stored paper, not the paper itself.
        for a in self.index.candidates(text):
            if a.kind == "stem":
                for m in re.finditer(rf"(?<![{_ASCII}]){re.escape(a.text)}[-_][\w.]*\w", text, re.IGNORECASE):
                    shorts = (b for b in self.index.candidates(m.group(0)) if b.kind == "short")
                    if not any(b.pattern.fullmatch(m.group(0)) for b in shorts):
                        missing.append(m.group(0))
        for q in QUOTED.findall(text):
            near = self._titled(set(content_words(q)))
            if len(q.split()) >= 3 and max((_overlap(q, self.titles[d]) for d in near), default=0) < 0.5:
                missing.append(q)
        return missing


def _overlap(quote: str, title_words: set[str]) -> float:
    words = set(content_words(quote))
    return len(words & title_words) / max(len(words | title_words), 1) if words else 0.0


def _alias_pattern(text: str, kind: str) -> tuple[str, int] | None:
    """A whole-word pattern (source, flags) for an alias; short all-capital acronyms must match in capitals ("ACE",
    not "ace"). Every pattern starts with the alias' first word where no ASCII letter or digit precedes (an arXiv
    id: with its digits, where no digit or dot precedes), which `_AliasIndex` relies on."""
    text = fold(text).strip()
    if kind == "id" and text.lower().startswith("arxiv:"):
        number = re.escape(text[len("arxiv:") :].strip())
        return rf"(?<![\d.]){number}(?:v\d+)?(?![\d])", 0  # "arXiv:2309.04417", "2309.04417v2"
    if kind == "first_author" and text.endswith("et al"):
        text = text[: -len("et al")].strip()
        body = re.escape(text) + r"(?:\s+et\s+al\b|['’]s\b)"
        return rf"(?<![{_ASCII}]){body}", 0
    parts = [re.escape(p) for p in re.split(r"[\s\-]+", text) if p]
    if not parts:
        return None
    body = r"[\s\-]*".join(parts)
    case_sensitive = (text.isupper() and len(text) <= 5) or kind in ("author", "first_author")
    flags = 0 if case_sensitive else re.IGNORECASE
    # A stem ("Marten" of "Marten-1B") must not carry another suffix: "Marten-2B" is a sibling paper.
    tail = rf"(?![{_ASCII}]|[-_][{_ASCII}])" if kind == "stem" else rf"(?![{_ASCII}])"
    return rf"(?<![{_ASCII}]){body}{tail}", flags
