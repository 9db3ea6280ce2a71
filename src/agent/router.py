"""Query router (issue 4): one paper or the whole field, which paper, and which sections.

Two routers give the same `Route`: `RuleRouter` (regexes over the question plus the paper catalogue, no model) and
`LLMRouter` (a chat model through structured output, falling back to the rules whenever its answer is unusable).
Both resolve the papers a question names to catalogue doc_ids with the same rule matcher, so a model never invents
a doc_id.

Paper matching (strongest first; a paper's score is its best piece of evidence):
- an arXiv id (``2401.01234``, version ignored) equal to a paper's `PaperRef.arxiv_id`;
- a quoted title ("..." “...” '...' 《...》) close to a catalogue title (difflib ratio or token overlap);
- the whole title, or the part after its colon, written out unquoted;
- the short name as a whole word, case-insensitively ("FlashRank", "flashrank's", "in Marten-1B");
- the short name's stem when it has a hyphenated/numeric suffix ("Marten" for "Marten-1B"), if the stem has at
  least 4 letters and no other paper shares it ("Marten-2B" is then a paper missing from the catalogue);
- distinctive title words: title words minus stopwords and field-generic words ("retrieval", "model", "dense"...),
  at least 3 of them and at least 60% present. Skipped when the question reads like a survey ("which papers",
  "recent methods", "有哪些") and does not say "the paper": survey questions share a paper's topic words by nature.
A question that names a paper missing from the catalogue (an unmatched quoted title of 3+ words or in 《》, an
unmatched arXiv id, "the ResNet paper") is SPECIFIC_PAPER with those keywords and no doc_ids: the caller falls back
to locating the paper by its keywords.
"""

from __future__ import annotations

import difflib
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from ..parser.models import SectionCategory
from ..prompts import load_prompt

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

__all__ = [
    "Intent",
    "LLMRouter",
    "PaperRef",
    "Route",
    "RuleRouter",
    "make_router",
    "section_cues",
]

logger = logging.getLogger("paperscope.router")

# The catalogue shown to the LLM router is capped: past a few hundred lines it only costs tokens, and the
# keywords the model returns are matched against the whole catalogue anyway.
MAX_PROMPT_PAPERS = 300


class Intent(StrEnum):
    """What a question is about."""

    SPECIFIC_PAPER = "SPECIFIC_PAPER"
    TOPIC_SURVEY = "TOPIC_SURVEY"


def _category_names(values: Iterable[str]) -> list[str]:
    """Canonical category names ("method" -> "METHOD"), duplicates dropped, order kept; unknown names raise."""
    names: list[str] = []
    for value in values:
        name = SectionCategory.from_name(value).name
        if name not in names:
            names.append(name)
    return names


def _clean_keywords(values: Iterable[str]) -> list[str]:
    """Stripped, non-empty keywords without case-insensitive duplicates, order kept."""
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        text = " ".join(value.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


class Route(BaseModel):
    """Where a question should be answered from: one paper (Track A) or the field (Track B), and which sections."""

    intent: Intent = Field(
        description="SPECIFIC_PAPER: about one named/identifiable paper; TOPIC_SURVEY: across the field."
    )
    target_paper_keywords: list[str] = Field(
        default_factory=list,
        description="Words identifying the target paper (short name, title words, arXiv id); empty for a survey.",
    )
    target_section_category: list[str] = Field(
        default_factory=list,
        description="SectionCategory names the question asks about, e.g. ['METHOD']; empty means all sections.",
    )
    doc_ids: list[str] = Field(
        default_factory=list,
        description="Catalogue papers the question names, best match first (rule matcher); empty if none is known.",
    )
    source: Literal["rules", "llm"] = Field(default="rules", description="Which router produced this route.")

    @field_validator("target_section_category")
    @classmethod
    def _known_categories(cls, values: list[str]) -> list[str]:
        return _category_names(values)

    @field_validator("target_paper_keywords")
    @classmethod
    def _keywords(cls, values: list[str]) -> list[str]:
        return _clean_keywords(values)

    @property
    def categories(self) -> list[SectionCategory]:
        """`target_section_category` as enum members (for store filters)."""
        return [SectionCategory[name] for name in self.target_section_category]


class _HasDocIdAndTitle(Protocol):
    """Anything describing a catalogued paper, e.g. `paperscope.rag.store.PaperRecord`."""

    @property
    def doc_id(self) -> str: ...

    @property
    def title(self) -> str: ...


_ARXIV = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(v\d+)?(?![\d])")


def _short_name_of(title: str) -> str:
    """The part of a title before ":" when it reads as a name (at most 4 words), else ""."""
    head, colon, _rest = title.partition(":")
    head = head.strip()
    if not colon or not head or len(head.split()) > 4:
        return ""
    return head


class PaperRef(BaseModel):
    """A catalogue entry as the router sees it."""

    doc_id: str = Field(description="Stable paper id in the store.")
    title: str = Field(description="Paper title as catalogued.")
    short_name: str = Field(
        default="",
        description='Name the paper goes by: the title part before ":" when at most 4 words ("FlashRank"), else "".',
    )
    arxiv_id: str | None = Field(default=None, description="arXiv id without version, e.g. 2401.01234, if known.")

    @model_validator(mode="after")
    def _derive(self) -> PaperRef:
        if not self.short_name:
            self.short_name = _short_name_of(self.title)
        if self.arxiv_id:
            match = _ARXIV.search(self.arxiv_id)
            self.arxiv_id = match.group(1) if match else self.arxiv_id.strip()
        return self

    @classmethod
    def from_record(cls, obj: _HasDocIdAndTitle) -> PaperRef:
        """Build from anything with ``.doc_id`` and ``.title``; an arXiv id is read from ``.arxiv_id`` or from an
        arXiv-style file name in ``.source`` (e.g. ``2401.01234v2.pdf``)."""
        arxiv = getattr(obj, "arxiv_id", None)
        if not arxiv:
            source = getattr(obj, "source", "") or ""
            match = _ARXIV.search(re.split(r"[\\/]", str(source))[-1])
            arxiv = match.group(1) if match else None
        return cls(doc_id=obj.doc_id, title=obj.title, arxiv_id=arxiv)


# ---------------------------------------------------------------------------------------------------------------
# Words

_WORD = re.compile(r"[a-z0-9]+")
_ASCII_ALNUM = "A-Za-z0-9"


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _wordset(
    """
    a an the of for in on at by to from with without and or nor but via over under into onto about than as is are
    was were be been being do does did can could should would will may might must shall we our us you your it its
    they them their this that these those what which who whom whose how why when where there here all any some each
    not no only more most less very much many one two using use used towards toward across between through per
    self versus vs i me my he she his her via based new paper papers
    """
)

# Field vocabulary: common in titles of this corpus and in survey questions alike, so never evidence of one paper.
_GENERIC = _wordset(
    """
    retrieval retriever retrieve language model paper work learning learn learned neural network deep large llm
    transformer data dataset training train method approach technique system framework generation generative
    augmented augmentation rag document text question answering answer qa query long context dense sparse
    efficient efficiency fast improve improving novel study analysis evaluation benchmark task multi token
    inference performance accuracy memory scale scaling agentic
    """
)


def _fold(text: str) -> str:
    # NFKC folds full-width letters and digits (frequent in Chinese input, e.g. "ＦｌａｓｈＲａｎｋ") and ligatures.
    return unicodedata.normalize("NFKC", text)


def _stem(word: str) -> str:
    """Strip an English plural, nothing more: enough for "tables"/"table", "losses"/"loss", "indexes"/"index"."""
    if len(word) <= 3:
        return word
    if word.endswith(("sses", "xes")):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    """Lower-case ASCII words (hyphenated words split), plurals stemmed."""
    return [_stem(w) for w in _WORD.findall(_fold(text).lower())]


def _norm(text: str) -> str:
    """Words joined by single spaces: the form titles and quotes are compared in."""
    return " ".join(_WORD.findall(_fold(text).lower()))


def _distinctive(words: Iterable[str]) -> frozenset[str]:
    return frozenset(w for w in words if w not in _STOPWORDS and w not in _GENERIC)


def _name_pattern(name: str, *, stem: bool = False) -> re.Pattern[str]:
    """A whole-word, case-insensitive pattern for a name; spaces and hyphens inside it match either.

    Boundaries are ASCII letters/digits rather than ``\\b`` because Python counts CJK characters as word
    characters: "FlashRank的方法" must still match. A stem must not be followed by another suffix ("Marten" does
    not match "Marten-2B").
    """
    parts = [re.escape(p) for p in re.split(r"[\s\-]+", name.strip()) if p]
    body = r"[\s\-]*".join(parts)
    tail = rf"(?![{_ASCII_ALNUM}]|-[{_ASCII_ALNUM}])" if stem else rf"(?![{_ASCII_ALNUM}])"
    return re.compile(rf"(?<![{_ASCII_ALNUM}]){body}{tail}", re.IGNORECASE)


def _variant_pattern(stem: str) -> re.Pattern[str]:
    """The stem followed by any hyphenated suffix, e.g. "Marten-2B" or "Marten-1B"."""
    return re.compile(
        rf"(?<![{_ASCII_ALNUM}]){re.escape(stem)}-[{_ASCII_ALNUM}][{_ASCII_ALNUM}.]*(?<!\.)(?![{_ASCII_ALNUM}])",
        re.IGNORECASE,
    )


_STEM = re.compile(r"^([A-Za-z][A-Za-z.]*[A-Za-z])(?:[\-_ ].+|\d[\w.]*)$")


def _stem_of(short_name: str) -> str:
    """The stem of a name with a hyphenated or numeric suffix ("Marten-1B" -> "Marten", "ResNet50" -> "ResNet")."""
    match = _STEM.match(short_name.strip())
    return match.group(1) if match else ""


# ---------------------------------------------------------------------------------------------------------------
# Question cues

# (pattern, always a title): text in 《》 is a title by definition; other quotes only from 3 words up.
_QUOTES: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(r'"([^"\n]{2,300})"'), False),
    (re.compile(r"“([^”\n]{2,300})”"), False),
    # A single quote opens only after a non-word character, so "FlashRank's" or "what's" never open a quote.
    (re.compile(r"(?<![\w])'([^'\n]{2,300}?)'(?![\w])"), False),
    (re.compile(r"《([^》\n]{1,300})》"), True),
)

# "the ResNet paper", "The Attention Is All You Need paper": capitalized words between "the" and "paper".
_NAMED_PAPER_EN = re.compile(
    r"(?i:\bthe)\s+((?:[A-Z][A-Za-z0-9.+\-]*\s+){0,5}?[A-Z][A-Za-z0-9.+\-]*)\s+(?i:paper)(?![A-Za-z])"
)
# "这篇ResNet论文" / "ResNet这篇论文": the demonstrative makes it one paper ("哪些RAG论文" stays a survey).
_NAMED_PAPER_ZH = re.compile(
    r"(?:这篇|那篇)\s*([A-Za-z][A-Za-z0-9.+\-]*)\s*论文|([A-Za-z][A-Za-z0-9.+\-]*)\s*(?:这篇|那篇)\s*论文"
)
_NOT_A_NAME = frozenset({"first", "second", "third", "last", "same", "original", "above", "previous", "next"})

# Survey wording: the question asks across papers. Only used to switch off the (fuzzy) title-words rule.
_SURVEY_EN = re.compile(
    r"\b(?:which|what|recent|existing|other|prior|previous|common|different|various|popular|current)\s+"
    r"(?:\w+\s+)?(?:papers|methods|approaches|techniques|works|studies|systems|models|ways|strategies)\b"
    r"|\bpapers\b|\bin the (?:field|literature)\b|\bstate[\s-]of[\s-]the[\s-]art\b|\bsurvey\b|\bacross\b",
    re.IGNORECASE,
)
_SURVEY_ZH = re.compile(r"哪些|有什么方法|近期|最近的研究|现有|各种|综述|研究现状")
_SPECIFIC_EN = re.compile(r"\b(?:the|this|that)\s+paper\b(?!s)", re.IGNORECASE)
_SPECIFIC_ZH = re.compile(r"这篇|那篇|该论文|该文")

# A follow-up points back at the previous question's paper.
_BACK_REFERENCE_EN = re.compile(
    r"\b(?:it|its|it's|they|them|their|the paper|this paper|that paper|the authors?|this work|the model)\b"
    r"|^\s*(?:and|also|what about|how about|then)\b",
    re.IGNORECASE,
)
_BACK_REFERENCE_ZH = re.compile(r"它|这篇|那篇|该论文|该文|该方法|这个方法|这个模型|作者|呢\s*[？?]?\s*$")


def _en(*words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


# Section cues. Several categories may apply; they are reported in enum order. Number questions ("how much",
# "how many") are both METHOD and EVALUATION: setup numbers (parameters, training data, GPUs) live in the method,
# results in the evaluation. Anything about training or its data is METHOD.
# Chinese has no word boundaries: plain substrings, except 如何/怎么 which mean "how is it" (an evaluation
# question) at the end of a clause ("效果如何？") and "how to" (a method question) before a verb ("如何实现").
_SECTION_CUES: tuple[tuple[SectionCategory, re.Pattern[str], re.Pattern[str]], ...] = (
    (SectionCategory.ABSTRACT, _en(r"abstract"), re.compile(r"摘要")),
    (
        SectionCategory.INTRODUCTION,
        _en(r"why", r"motivat\w*", r"problems?", r"background"),
        re.compile(r"为什么|为何|动机|背景"),
    ),
    (
        SectionCategory.METHOD,
        _en(
            r"how (?:does|do|did)",
            r"methods?",
            r"methodology",
            r"approach(?:es)?",
            r"architectur\w*",
            r"algorithm\w*",
            r"implement\w*",
            r"train(?:s|ed|ing)?",
            r"datasets?",
            r"techniques?",
            r"mechanisms?",
            r"how (?:much|many)",
            r"(?:hyper)?parameters?",
        ),
        re.compile(
            r"方法|怎么(?!样)(?![？?。!！，,]|$)|如何(?![？?。!！，,]|$)|架构|模型结构|算法|训练|数据集|原理|多少|参数"
        ),
    ),
    (
        SectionCategory.EVALUATION,
        _en(
            r"results?",
            r"accura\w*",
            r"performance",
            r"perform(?:s|ed)?",
            r"how (?:much|many|well)",
            r"scor(?:e|es|ed)",
            r"benchmark\w*",
            r"ablat\w*",
            r"compar\w*",
            r"outperform\w*",
            r"evaluat\w*",
            r"experiment\w*",
            r"metrics?",
            r"baselines?",
            r"speed-?ups?",
            r"latency",
            r"throughput",
        ),
        re.compile(r"实验|准确率|精度|结果|性能|效果|消融|对比|比较|评估|评测|指标|多少|基准"),
    ),
    (
        SectionCategory.CONCLUSION,
        _en(
            r"limitations?",
            r"future (?:work|directions?|research)",
            r"drawbacks?",
            r"weakness(?:es)?",
            r"shortcomings?",
            r"downsides?",
            r"conclu\w*",
        ),
        re.compile(r"局限|未来工作|未来方向|不足|缺点|缺陷|结论"),
    ),
    (
        SectionCategory.RELATED_WORK,
        _en(r"related work", r"prior work", r"previous work"),
        re.compile(r"相关工作|已有工作|前人工作"),
    ),
)


def section_cues(query: str) -> list[str]:
    """Section category names a question asks about, in enum order; [] (all sections) when it has no cue."""
    text = _fold(query)
    found = {category for category, en, zh in _SECTION_CUES if en.search(text) or zh.search(text)}
    return [category.name for category in SectionCategory if category in found]


def _reads_as_survey(query: str) -> bool:
    text = _fold(query)
    survey = bool(_SURVEY_EN.search(text) or _SURVEY_ZH.search(text))
    return survey and not (_SPECIFIC_EN.search(text) or _SPECIFIC_ZH.search(text))


# ---------------------------------------------------------------------------------------------------------------
# Catalogue matching

# Evidence strengths; a paper's score is its best one, ties keep catalogue order.
_SCORE_ARXIV = 100.0
_SCORE_TITLE = 90.0  # + similarity in [0, 1]: quoted title, or a keyword that is a title
_SCORE_PHRASE = 88.0
_SCORE_SHORT_NAME = 80.0
_SCORE_STEM = 70.0
_SCORE_WORDS = 40.0  # + 20 x fraction of distinctive words present

_TITLE_SIMILARITY = 0.8
_WORDS_FRACTION = 0.6
_WORDS_MIN = 3


def _similarity(a: str, b: str) -> float:
    """difflib ratio, or 0 when the cheap upper bounds already rule a close match out (big catalogues)."""
    if not a or not b:
        return 0.0
    matcher = difflib.SequenceMatcher(None, a, b)
    if matcher.real_quick_ratio() < _TITLE_SIMILARITY or matcher.quick_ratio() < _TITLE_SIMILARITY:
        return 0.0
    return matcher.ratio()


@dataclass(frozen=True)
class _Hit:
    index: int
    score: float
    keyword: str


@dataclass(frozen=True)
class _Entry:
    """A paper with everything matching needs, computed once."""

    paper: PaperRef
    title: str  # normalized full title
    subtitle: str  # normalized part after the short name's colon ("" without a short name)
    title_words: frozenset[str]
    distinctive: frozenset[str]
    name: re.Pattern[str] | None
    stem: re.Pattern[str] | None
    variant: re.Pattern[str] | None  # the stem with another suffix ("Marten-2B"): a sibling paper, not this one


class _Catalogue:
    """The papers a router can resolve names to."""

    def __init__(self, papers: Sequence[PaperRef]) -> None:
        self.papers = list(papers)
        short_names = [p.short_name.casefold() for p in self.papers if p.short_name]
        stems = [_stem_of(p.short_name).casefold() for p in self.papers if p.short_name]
        entries: list[_Entry] = []
        for paper in self.papers:
            short = paper.short_name.strip()
            # A short name that is an ordinary word ("Attention: ...") would match every question using the word.
            usable = bool(short) and _norm(short) not in _STOPWORDS | _GENERIC and len(_norm(short)) >= 2
            stem = _stem_of(short) if usable else ""
            stem_ok = (
                len(stem) >= 4
                and stem.casefold() not in _STOPWORDS | _GENERIC
                and stems.count(stem.casefold()) == 1
                and stem.casefold() not in short_names
            )
            rest = paper.title.partition(":")[2] if short else paper.title
            words = _words(rest)
            entries.append(
                _Entry(
                    paper=paper,
                    title=_norm(paper.title),
                    subtitle=_norm(rest) if short else "",
                    title_words=frozenset(w for w in words if w not in _STOPWORDS),
                    distinctive=_distinctive(words),
                    name=_name_pattern(short) if usable else None,
                    stem=_name_pattern(stem, stem=True) if stem_ok else None,
                    variant=_variant_pattern(stem) if stem_ok else None,
                )
            )
        self.entries = entries

    # -- evidence --------------------------------------------------------------------------------------------

    def _arxiv_hits(self, text: str) -> tuple[list[_Hit], list[str]]:
        hits: list[_Hit] = []
        unknown: list[str] = []
        for match in _ARXIV.finditer(text):
            found = [i for i, e in enumerate(self.entries) if e.paper.arxiv_id == match.group(1)]
            hits.extend(_Hit(i, _SCORE_ARXIV, match.group(0)) for i in found)
            if not found:
                unknown.append(match.group(0))
        return hits, unknown

    def _title_hits(self, candidate: str) -> list[_Hit]:
        """Papers whose title (or subtitle) is close to `candidate`, a quoted string or a keyword."""
        norm = _norm(candidate)
        if not norm:
            return []
        cand_words = frozenset(w for w in _words(candidate) if w not in _STOPWORDS)
        hits = []
        for i, entry in enumerate(self.entries):
            ratio = max(_similarity(norm, entry.title), _similarity(norm, entry.subtitle))
            overlap = 0.0
            if entry.title_words and len(cand_words) >= _WORDS_MIN:
                shared = len(cand_words & entry.title_words)
                overlap = shared / max(len(cand_words), len(entry.title_words))
            similarity = max(ratio, overlap)
            if similarity >= _TITLE_SIMILARITY:
                hits.append(_Hit(i, _SCORE_TITLE + similarity, candidate.strip()))
        return hits

    def _name_hits(self, text: str) -> list[_Hit]:
        hits = []
        for i, entry in enumerate(self.entries):
            if entry.name and (m := entry.name.search(text)):
                hits.append(_Hit(i, _SCORE_SHORT_NAME, m.group(0)))
            elif entry.stem and (m := entry.stem.search(text)):
                hits.append(_Hit(i, _SCORE_STEM, m.group(0)))
        return hits

    def _phrase_hits(self, text: str) -> list[_Hit]:
        padded = f" {_norm(text)} "
        hits = []
        for i, entry in enumerate(self.entries):
            for phrase in (entry.title, entry.subtitle):
                if len(phrase.split()) >= _WORDS_MIN and f" {phrase} " in padded:
                    hits.append(_Hit(i, _SCORE_PHRASE, phrase))
                    break
        return hits

    def _word_hits(self, text: str) -> list[_Hit]:
        present_words = frozenset(_words(text))
        hits = []
        for i, entry in enumerate(self.entries):
            if len(entry.distinctive) < _WORDS_MIN:
                continue
            present = entry.distinctive & present_words
            fraction = len(present) / len(entry.distinctive)
            if len(present) >= _WORDS_MIN and fraction >= _WORDS_FRACTION:
                ordered = [w for w in _words(text) if w in present]
                hits.append(_Hit(i, _SCORE_WORDS + 20 * fraction, " ".join(dict.fromkeys(ordered))))
        return hits

    # -- entry points ----------------------------------------------------------------------------------------

    def in_query(self, query: str) -> tuple[list[_Hit], list[str]]:
        """Evidence for catalogue papers in a question, and names of papers it gives that the catalogue lacks."""
        text = _fold(query)
        hits, unknown = self._arxiv_hits(text)
        for pattern, always_title in _QUOTES:
            for match in pattern.finditer(text):
                quoted = match.group(1).strip()
                found = self._title_hits(quoted)
                hits.extend(found)
                is_title = always_title or len(quoted.split()) >= _WORDS_MIN
                # A short quoted name ("FlashRank") is found by the name rule below; a long one is a title.
                if not found and is_title and not self._name_hits(quoted):
                    unknown.append(quoted)
        hits += self._phrase_hits(text) + self._name_hits(text)
        for entry in self.entries:
            for match in entry.variant.finditer(text) if entry.variant else ():
                if not (entry.name and entry.name.fullmatch(match.group(0))):
                    unknown.append(match.group(0))  # "Marten-2B" when the catalogue holds Marten-1B only
        if not _reads_as_survey(text):
            hits += self._word_hits(text)
        for match in [*_NAMED_PAPER_EN.finditer(text), *_NAMED_PAPER_ZH.finditer(text)]:
            name = next(g for g in match.groups() if g)
            if name.casefold() in _NOT_A_NAME or _norm(name) in _STOPWORDS:
                continue
            if not (self._name_hits(name) or self._title_hits(name) or self._word_hits(name)):
                unknown.append(name)
        return hits, _clean_keywords(unknown)

    def for_keywords(self, keywords: Sequence[str]) -> list[_Hit]:
        """Evidence for catalogue papers in keywords (e.g. an LLM router's): ids, titles, names, title words."""
        hits: list[_Hit] = []
        for keyword in keywords:
            text = _fold(keyword)
            hits += self._arxiv_hits(text)[0] + self._title_hits(text) + self._name_hits(text)
            hits += self._subset_hits(text)
        hits += self._word_hits(" ".join(keywords))
        return hits

    def _subset_hits(self, keyword: str) -> list[_Hit]:
        """A keyword of 2+ distinctive words that all occur in exactly one title ("listwise reranking").

        Only for keywords: a model picked them to name a paper, whereas a question's words describe a topic.
        """
        wanted = _distinctive(_words(keyword))
        if len(wanted) < 2:
            return []
        found = [i for i, e in enumerate(self.entries) if wanted <= e.distinctive]
        if len(found) != 1:
            return []
        entry = self.entries[found[0]]
        return [_Hit(found[0], _SCORE_WORDS + 20 * len(wanted) / len(entry.distinctive), keyword.strip())]

    def rank(self, hits: Iterable[_Hit]) -> list[_Hit]:
        """Best hit per paper, strongest first (catalogue order among equals)."""
        best: dict[int, _Hit] = {}
        for hit in hits:
            if hit.index not in best or hit.score > best[hit.index].score:
                best[hit.index] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.index))

    def doc_ids(self, hits: Iterable[_Hit]) -> list[str]:
        return list(dict.fromkeys(self.entries[h.index].paper.doc_id for h in self.rank(hits)))


def _is_follow_up(query: str) -> bool:
    text = _fold(query)
    return bool(_BACK_REFERENCE_EN.search(text) or _BACK_REFERENCE_ZH.search(text)) and not _reads_as_survey(text)


def _inherit(route: Route, query: str, previous: Route | None) -> Route:
    """A follow-up that names no paper ("What are its limitations?") stays on the previous question's paper."""
    if (
        previous is None
        or previous.intent is not Intent.SPECIFIC_PAPER
        or route.doc_ids
        or route.target_paper_keywords
        or not _is_follow_up(query)
    ):
        return route
    return route.model_copy(
        update={
            "intent": Intent.SPECIFIC_PAPER,
            "target_paper_keywords": list(previous.target_paper_keywords),
            "doc_ids": list(previous.doc_ids),
        }
    )


class RuleRouter:
    """Routes with regexes and the paper catalogue; no model."""

    def __init__(self, papers: Sequence[PaperRef]) -> None:
        self._catalogue = _Catalogue(papers)

    @property
    def papers(self) -> list[PaperRef]:
        """The catalogue this router resolves names against."""
        return list(self._catalogue.papers)

    def route(self, query: str, previous: Route | None = None) -> Route:
        """Route a question; `previous` (the last route of a conversation) lets a follow-up keep its paper."""
        hits, unknown = self._catalogue.in_query(query)
        ranked = self._catalogue.rank(hits)
        keywords = [h.keyword for h in ranked] + unknown
        route = Route(
            intent=Intent.SPECIFIC_PAPER if keywords else Intent.TOPIC_SURVEY,
            target_paper_keywords=keywords,
            target_section_category=section_cues(query),
            doc_ids=self._catalogue.doc_ids(ranked),
            source="rules",
        )
        return _inherit(route, query, previous)

    def resolve(self, query: str, keywords: Sequence[str] = ()) -> list[str]:
        """doc_ids of the catalogue papers a question and/or keywords name, best first."""
        hits = self._catalogue.in_query(query)[0] + self._catalogue.for_keywords(keywords)
        return self._catalogue.doc_ids(hits)


# ---------------------------------------------------------------------------------------------------------------
# LLM router


class _RouteOut(BaseModel):
    """Route a researcher's question: is it about one paper or the field, which paper, which sections.

    intent: SPECIFIC_PAPER when the question is about one named or identifiable paper (short name, quoted title,
    arXiv id, or a description that picks one paper); TOPIC_SURVEY when it asks across the field.
    target_paper_keywords: words identifying the paper (short name, title words, arXiv id); [] for TOPIC_SURVEY.
    target_section_category: section categories the question asks about; [] means all sections.
    """

    model_config = ConfigDict(title="route_query")

    intent: Intent = Field(description="SPECIFIC_PAPER (one named/identifiable paper) or TOPIC_SURVEY (the field).")
    target_paper_keywords: list[str] = Field(
        default_factory=list,
        description="Short name, title words or arXiv id of the target paper, as written; [] for TOPIC_SURVEY.",
    )
    target_section_category: list[str] = Field(
        default_factory=list,
        description="Any of ABSTRACT, INTRODUCTION, METHOD, EVALUATION, CONCLUSION, RELATED_WORK, OTHER; "
        "[] means all sections.",
    )

    @field_validator("intent", mode="before")
    @classmethod
    def _intent_case(cls, value: Any) -> Any:
        # Models sometimes answer "specific_paper"; the meaning is unambiguous, the case is not worth a fallback.
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("target_section_category")
    @classmethod
    def _known_categories(cls, values: list[str]) -> list[str]:
        return _category_names(values)


def _catalogue_lines(papers: Sequence[PaperRef]) -> str:
    """The catalogue as the prompt shows it: "- <short name>: <title>" per paper."""
    lines = []
    for paper in papers[:MAX_PROMPT_PAPERS]:
        title = " ".join(paper.title.split())
        # A derived short name is already the title's prefix; repeating it would only add noise.
        name = paper.short_name if paper.short_name and not title.startswith(paper.short_name) else ""
        line = f"- {name}: {title}" if name else f"- {title}"
        if paper.arxiv_id:
            line += f" (arXiv {paper.arxiv_id})"
        lines.append(line)
    if len(papers) > MAX_PROMPT_PAPERS:
        lines.append(f"- ... and {len(papers) - MAX_PROMPT_PAPERS} more papers not listed")
    return "\n".join(lines) if lines else "(the catalogue is empty)"


class LLMRouter:
    """Routes with a chat model (structured output through tool calling); the rules are its fallback."""

    def __init__(
        self, chat_model: BaseChatModel, papers: Sequence[PaperRef], fallback: RuleRouter | None = None
    ) -> None:
        self.papers = list(papers)
        self.fallback = fallback if fallback is not None else RuleRouter(self.papers)
        self._prompt = load_prompt("router")
        self._catalogue_text = _catalogue_lines(self.papers)
        try:
            self._structured: Runnable[Any, Any] = chat_model.with_structured_output(
                _RouteOut, method="function_calling", include_raw=True
            )
        except NotImplementedError as exc:
            name = type(chat_model).__name__
            raise ConfigError(f"chat model {name} does not support tool calling, which the router needs") from exc

    def _messages(self, query: str) -> list[BaseMessage]:
        from langchain_core.messages import HumanMessage

        return [HumanMessage(content=self._prompt.format(papers=self._catalogue_text, query=query))]

    def _finish(self, query: str, previous: Route | None, result: Any) -> Route:
        """Turn the structured-output result into a Route, or fall back to the rules with a warning."""
        problem = _problem(result)
        if problem is not None:
            logger.warning("LLM router answer unusable (%s); using the rule router for %r", problem, query)
            return self.fallback.route(query, previous)
        parsed: _RouteOut = result["parsed"]
        route = Route(
            intent=parsed.intent,
            target_paper_keywords=parsed.target_paper_keywords,
            target_section_category=parsed.target_section_category,
            doc_ids=self.fallback.resolve(query, parsed.target_paper_keywords),
            source="llm",
        )
        return _inherit(route, query, previous)

    def route(self, query: str, previous: Route | None = None) -> Route:
        """Route a question with the model; any failure falls back to the rule router."""
        try:
            result = self._structured.invoke(self._messages(query))
        except Exception as exc:  # a router must never take the question down: any model failure -> rules
            logger.warning("LLM router call failed (%s: %s); using the rule router", type(exc).__name__, exc)
            return self.fallback.route(query, previous)
        return self._finish(query, previous, result)

    async def aroute(self, query: str, previous: Route | None = None) -> Route:
        """Async `route`."""
        try:
            result = await self._structured.ainvoke(self._messages(query))
        except Exception as exc:  # same policy as `route`
            logger.warning("LLM router call failed (%s: %s); using the rule router", type(exc).__name__, exc)
            return self.fallback.route(query, previous)
        return self._finish(query, previous, result)


def _problem(result: Any) -> str | None:
    """Why an ``include_raw=True`` structured-output result cannot be used, or None when it can."""
    if not isinstance(result, dict):
        return f"unexpected result type {type(result).__name__}"
    error = result.get("parsing_error")
    if error is not None:
        if isinstance(error, ValidationError):
            return f"invalid arguments: {error.error_count()} validation error(s): {error.errors()[0]['msg']}"
        return f"parsing error: {error}"
    parsed = result.get("parsed")
    if parsed is None:
        return "no routing tool call in the reply"
    if not isinstance(parsed, _RouteOut):
        return f"unexpected parsed type {type(parsed).__name__}"
    return None


def make_router(papers: Sequence[PaperRef], chat_model: BaseChatModel | None = None) -> RuleRouter | LLMRouter:
    """The LLM router when a chat model is configured, else the rule router."""
    rules = RuleRouter(papers)
    return rules if chat_model is None else LLMRouter(chat_model, papers, fallback=rules)
