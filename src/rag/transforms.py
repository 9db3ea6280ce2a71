"""Query transforms with a language model: what the engine searches for besides the question as asked.

- `rewrite`: the model writes the question as search queries (abbreviations spelled out, synonyms, a compound
  question split, a question in another language translated into the papers'); each is searched and the
  rankings are fused with the question's (RRF);
- `multi-query` (RAG-Fusion): `retrieval.transform_queries` differently worded queries, searched and fused alike;
- `hyde`: a hypothetical passage that answers the question, searched with `retrieval.hyde_retriever` (dense) and
  fused with the question's ranking; `retrieval.hyde_trigger` "weak" writes it only when the question's own
  search covers few of its words;
- `self-query`: the topic without its filter words, searched in place of the question, and the filters the
  question states: years and papers become limits, sections a preference, each validated first.

Every reply is checked before use: a reply that is not the asked form (junk, an empty list, the question
itself, a query in a language the papers are not written in, a filter the question does not state) is dropped
with a note, and a transform whose call fails or times out is skipped with a note; the question is answered
either way. Model calls go through `Generator` (cached on disk by model, prompt and input; run concurrently).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..config import RetrievalSettings
from ..errors import LLMError
from ..parser.models import SectionCategory
from .cues import fold
from .filters import SearchFilter, parse_category, validate_doc_id
from .generate import Generator
from .locate import PaperLocator
from .registry import RunLog, build, register
from .store import PaperRecord

MAX_QUERY_CHARS = 300  # a "query" longer than this is a model answering or rambling, not a query
MAX_PASSAGE_CHARS = 1500  # of a HyDE passage searched
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
# What a model writes around a list: bullets, numbers, "Query 1:", quotes.
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.):]|query\s*\d*\s*[:.-])\s*", re.I)
_REFUSAL = re.compile(r"^(?:i\s+(?:can(?:no|')t|am\s+(?:not|unable))|sorry|as\s+an\s+ai)\b", re.I)


class TransformFailed(Exception):
    """A transform's reply held nothing usable (the reason, for the note)."""


class Passages(list[str]):
    """What a transform returns to be searched as passages (HyDE: by `retrieval.hyde_retriever`), not as queries.

    A transform returns queries (a list of strings, searched like the question), Passages, or a SelfQuery (the
    topic and filters); what it returns, not its name, says how the engine uses it.
    """


@dataclass(frozen=True)
class TransformContext:
    """What every transform may need besides the question."""

    generator: Generator
    settings: RetrievalSettings
    language: str  # the papers' language, for the prompts ("English")
    script: str  # "latin" or "cjk": what a usable query is written in
    papers: Sequence[PaperRecord] = ()
    locator: PaperLocator | None = None


# --- reading replies ---------------------------------------------------------------------------------------


def json_value(text: str, opener: str) -> Any:
    """The first JSON value starting with `opener` ('[' or '{') in a reply (fences and chatter around it)."""
    closer = "]" if opener == "[" else "}"
    start = text.find(opener)
    while start >= 0:
        end = text.rfind(closer)
        while end > start:
            try:
                return json.loads(text[start : end + 1])
            except ValueError:
                end = text.rfind(closer, start, end)
        start = text.find(opener, start + 1)
    return None


def parse_queries(reply: str) -> list[str]:
    """The queries of a reply: a JSON list of strings, else one query per line (bullets and numbering removed)."""
    value = json_value(reply, "[")
    if isinstance(value, list):
        items = [v if isinstance(v, str) else (v.get("query") if isinstance(v, dict) else None) for v in value]
        return [i.strip() for i in items if isinstance(i, str) and i.strip()]
    lines = [_ITEM_PREFIX.sub("", line).strip().strip("\"'`").strip() for line in reply.splitlines()]
    return [line for line in lines if line and not line.startswith(("```", "[", "]", "{", "}"))]


def same_query(a: str, b: str) -> bool:
    """True when two queries have the same words (case, accents and punctuation aside)."""
    return " ".join(re.findall(r"\w+", fold(a).lower())) == " ".join(re.findall(r"\w+", fold(b).lower()))


def script_of(text: str) -> str:
    """ "cjk" when Chinese, Japanese or Korean carry more of `text` than Latin letters (a CJK character counts as
    three letters: it says about as much as a short word), else "latin"."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return "cjk" if 3 * cjk > latin else "latin"


def papers_language(papers: Sequence[PaperRecord]) -> tuple[str, str]:
    """(language name for prompts, script) of the papers, from their titles: English unless most are CJK."""
    script = script_of(" ".join(p.title for p in papers)) if papers else "latin"
    return ("English", "latin") if script == "latin" else ("the language of the paper titles", "cjk")


def usable_queries(
    replies: Sequence[str], question: str, ctx: TransformContext, limit: int, notes: list[str], name: str
) -> list[str]:
    """The replies worth searching: each once, not the question again, short, in the papers' script."""
    kept: list[str] = []
    dropped: dict[str, int] = {}
    for q in replies:
        q = " ".join(q.split())
        why = None
        if not re.search(r"\w", q) or _REFUSAL.match(q):
            why = "not a query"
        elif len(q) > MAX_QUERY_CHARS:
            why = "too long for a query"
        elif same_query(q, question) or any(same_query(q, k) for k in kept):
            why = "a repeat of the question"
        elif script_of(q) != ctx.script:
            why = f"not in {ctx.language}"
        if why is None:
            kept.append(q)
        else:
            dropped[why] = dropped.get(why, 0) + 1
    for why, n in dropped.items():
        notes.append(f"{name}: dropped {n} generated quer{'ies' if n > 1 else 'y'} ({why}).")
    return kept[:limit]


# --- the transforms ------------------------------------------------------------------------------------------


@register(
    "transform",
    "rewrite",
    needs=("llm",),
    summary="The model rewrites the question as search queries: abbreviations spelled out, synonyms, a compound "
    "question split, another language translated into the papers' (fused with the question's ranking).",
)
def rewrite(question: str, ctx: TransformContext, notes: list[str]) -> list[str]:
    """Search queries for the question, in the papers' language."""
    return _model_queries("rewrite", "rewrite", question, ctx, notes)


@register(
    "transform",
    "multi-query",
    needs=("llm",),
    summary="RAG-Fusion: the model writes differently worded queries; each is searched and the rankings fused "
    "with the question's by reciprocal rank.",
)
def multi_query(question: str, ctx: TransformContext, notes: list[str]) -> list[str]:
    """`retrieval.transform_queries` differently worded queries for the question."""
    return _model_queries("multi_query", "multi-query", question, ctx, notes)


def _model_queries(prompt: str, name: str, question: str, ctx: TransformContext, notes: list[str]) -> list[str]:
    """Up to `retrieval.transform_queries` usable queries the model writes with prompt `prompt` (`name` labels
    the notes); TransformFailed when it wrote none."""
    n = ctx.settings.transform_queries
    reply = ctx.generator.generate(prompt, query=question, language=ctx.language, n=n)
    kept = usable_queries(parse_queries(reply), question, ctx, n, notes, name)
    if not kept:
        raise TransformFailed("the model's reply held no usable query")
    return kept


@register(
    "transform",
    "hyde",
    needs=("llm",),
    summary="HyDE: the model writes a passage that would answer the question; it is searched (dense by default) "
    "in place of the question and fused with the question's ranking.",
)
def hyde(question: str, ctx: TransformContext, notes: list[str]) -> Passages:
    """A hypothetical passage answering the question (searched, never shown as evidence)."""
    reply = ctx.generator.generate("hyde", query=question, language=ctx.language)
    passage = " ".join(re.sub(r"^```\w*|```$", "", reply.strip()).split())[:MAX_PASSAGE_CHARS]
    if len(re.findall(r"\w+", passage)) < 5 or _REFUSAL.match(passage):
        raise TransformFailed("the model wrote no passage")
    if same_query(passage, question):
        raise TransformFailed("the model repeated the question")
    if script_of(passage) != ctx.script:
        raise TransformFailed(f"the passage is not in {ctx.language}")
    return Passages([passage])


@dataclass
class SelfQuery:
    """What `self-query` made of a question: the topic, and the filters that passed validation."""

    query: str
    years: tuple[int | None, int | None] = (None, None)
    doc_ids: list[str] = field(default_factory=list)
    sections: list[SectionCategory] = field(default_factory=list)

    @property
    def parsed(self) -> dict[str, Any]:
        """The validated filters as reported (`parsed_filters`)."""
        out: dict[str, Any] = {}
        if self.years[0] is not None:
            out["year_min"] = self.years[0]
        if self.years[1] is not None:
            out["year_max"] = self.years[1]
        if self.doc_ids:
            out["doc_ids"] = list(self.doc_ids)
        if self.sections:
            out["sections"] = [c.name for c in self.sections]
        return out

    def limits(self) -> SearchFilter | None:
        """The years as a search filter (None when the question gave none)."""
        if self.years == (None, None):
            return None
        return SearchFilter(year_min=self.years[0], year_max=self.years[1])


def _year(value: Any, question: str, name: str, notes: list[str]) -> int | None:
    """A year the question states, else None with a note (a model invents "since 2020" readily)."""
    if value in (None, "", "null"):
        return None
    try:
        year = int(str(value).strip())
    except ValueError:
        notes.append(f"self-query: dropped {name} {str(value)[:40]!r} (not a year).")
        return None
    if not 1000 <= year <= 2999:
        notes.append(f"self-query: dropped {name} {year} (not a year).")
        return None
    stated = {int(y) for y in re.findall(r"(?<!\d)(\d{4})(?!\d)", question)}
    # "before 2010" is year_max 2009: a year one off a stated one is the question's.
    if not stated & {year, year - 1, year + 1}:
        notes.append(f"self-query: dropped {name} {year} (the question states no such year).")
        return None
    return year


def _sections(value: Any, notes: list[str]) -> list[SectionCategory]:
    out: list[SectionCategory] = []
    for raw in value if isinstance(value, list) else [value] if value else []:
        try:
            out.append(parse_category(raw))
        except ValueError:
            notes.append(f"self-query: dropped section {str(raw)[:40]!r} (not a section category).")
    return list(dict.fromkeys(out))


def _papers(value: Any, question: str, ctx: TransformContext, notes: list[str]) -> list[str]:
    """Papers the model named that the question names too and the catalogue holds (by doc_id, title or name)."""
    known = {p.doc_id for p in ctx.papers}
    asked = fold(question).lower()
    out: list[str] = []
    for raw in value if isinstance(value, list) else [value] if value else []:
        name = str(raw).strip()[:200]
        if not name:
            continue
        doc_id = None
        try:
            doc_id = validate_doc_id(name) if name in known else None
        except ValueError:
            doc_id = None
        if doc_id is None and ctx.locator is not None and fold(name).lower() in asked:
            located = ctx.locator.locate(name)
            doc_id = located.doc_id if located.doc_id in known else None
        if doc_id is None:
            notes.append(f"self-query: dropped paper {name[:60]!r} (no such paper named in the question).")
        elif doc_id not in out:
            out.append(doc_id)
    return out


@register(
    "transform",
    "self-query",
    needs=("llm",),
    summary="The model turns 'method papers since 2020 about X' into the topic and the filters it states "
    "(years, sections, papers), each validated against the catalogue; bad or invented ones are dropped.",
)
def self_query(question: str, ctx: TransformContext, notes: list[str]) -> SelfQuery:
    """The topic to search and the validated filters of a question."""
    reply = ctx.generator.generate("self_query", query=question)
    value = json_value(reply, "{")
    if not isinstance(value, dict):
        raise TransformFailed("the model's reply is not a JSON object")
    raw_query = value.get("query")
    topic = " ".join(raw_query.split()) if isinstance(raw_query, str) else ""
    if not re.search(r"\w", topic) or len(topic) > MAX_QUERY_CHARS or script_of(topic) != ctx.script:
        if topic:
            notes.append("self-query: kept the question as the query (the model's topic was not usable).")
        topic = question
    years = (
        _year(value.get("year_min"), question, "year_min", notes),
        _year(value.get("year_max"), question, "year_max", notes),
    )
    if years[0] is not None and years[1] is not None and years[0] > years[1]:
        notes.append(f"self-query: dropped the years {years[0]}-{years[1]} (the first is after the last).")
        years = (None, None)
    if years != (None, None) and ctx.papers:
        held = [p.year for p in ctx.papers if p.year is not None]
        if held and not any((years[0] or 0) <= y <= (years[1] or 9999) for y in held):
            notes.append("self-query: no paper of the knowledge base is from those years; the years are not used.")
            years = (None, None)
    return SelfQuery(
        query=topic,
        years=years,
        doc_ids=_papers(value.get("papers"), question, ctx, notes),
        sections=_sections(value.get("sections"), notes),
    )


def query_transform(name: str) -> Callable[[str, TransformContext, list[str]], Any]:
    """The transform function `name` names (`question, ctx, notes -> result`); a ConfigError naming the transforms
    a request may choose otherwise."""
    fn: Callable[[str, TransformContext, list[str]], Any] = build("transform", name)
    return fn


# --- one request's transforms ----------------------------------------------------------------------------


class Generated:
    """What the transforms of one request generated, run once (concurrently) and reported.

    `queries` (rewrite, multi-query) and `hyde` passages are searched besides the question; `self_query`
    replaces the searched text with its topic and adds its validated filters. With `hyde_trigger` "weak" the
    HyDE passage is written on demand (`hyde_passages(weak=True)`), when the question's own search was weak.
    """

    def __init__(self, names: Sequence[str], ctx: TransformContext | None) -> None:
        self.names = list(names)
        self.ctx = ctx
        self.queries: list[str] = []
        self.hyde: list[str] = []
        self.self_query: SelfQuery | None = None
        self.notes: list[str] = []
        self._hyde_done = False
        self._lock = threading.Lock()
        self._log: RunLog | None = None
        self._question = ""

    @property
    def active(self) -> bool:
        return bool(self.names) and self.ctx is not None

    def run(self, question: str, log: RunLog, *, names: Sequence[str] | None = None) -> Generated:
        """Run the transforms (`names`, else all but a deferred HyDE) on `question`, concurrently."""
        self._question, self._log = question, log
        if not self.active:
            return self
        todo = list(names) if names is not None else [n for n in self.names if n != "hyde" or self._hyde_now()]
        if not todo:
            return self
        assert self.ctx is not None
        workers = max(1, min(len(todo), self.ctx.generator.concurrency))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(lambda n: self._one(n, question), todo))
        for name, (result, notes, seconds, error) in zip(todo, outcomes, strict=True):
            self._record(name, result, notes, seconds, error, log)
        return self

    def _hyde_now(self) -> bool:
        assert self.ctx is not None
        return self.ctx.settings.hyde_trigger == "always"

    def _one(self, name: str, question: str) -> tuple[Any, list[str], float, str | None]:
        assert self.ctx is not None
        notes: list[str] = []
        started = time.perf_counter()
        try:
            result = query_transform(name)(question, self.ctx, notes)
            return result, notes, time.perf_counter() - started, None
        except TransformFailed as exc:
            return None, notes, time.perf_counter() - started, str(exc)
        except LLMError as exc:
            return None, notes, time.perf_counter() - started, f"the model failed ({exc.reason})"
        except Exception as exc:  # a transform is an extra: whatever breaks it, the question is still answered
            return None, notes, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"

    def _record(self, name: str, result: Any, notes: list[str], seconds: float, error: str | None, log: RunLog) -> None:
        with self._lock:
            self.notes.extend(notes)
            with log.run("transform", name) as info:
                if error is not None:
                    self.notes.append(f"The {name} transform was skipped: {error}.")
                    info["skipped"] = error
                elif isinstance(result, Passages):
                    self.hyde = list(result)
                    info["passages"] = len(self.hyde)
                elif isinstance(result, SelfQuery):
                    self.self_query = result
                    info["parsed_filters"] = result.parsed
                else:
                    new = [q for q in result if q not in self.queries]
                    self.queries.extend(new)
                    info["queries"] = len(new)
                if notes:
                    info["notes"] = list(notes)
            log.runs[-1].seconds = round(seconds, 4)

    def hyde_passages(self, weak: bool = False) -> list[str]:
        """The HyDE passages; with the "weak" trigger, written now when `weak` (the question's search was weak)."""
        if not self.active or "hyde" not in self.names or self._hyde_now() or self._hyde_done or not weak:
            return self.hyde
        self._hyde_done = True
        assert self._log is not None
        self.run(self._question, self._log, names=["hyde"])
        return self.hyde

    def fields(self) -> dict[str, Any]:
        """The monitoring fields of a response: generated_queries, hyde_queries, semantic_query, parsed_filters."""
        sq = self.self_query
        return {
            "generated_queries": list(self.queries),
            "hyde_queries": list(self.hyde),
            "semantic_query": sq.query if sq is not None else None,
            "parsed_filters": sq.parsed if sq is not None else {},
        }
