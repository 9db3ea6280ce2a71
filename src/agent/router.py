"""Query router: one paper or the whole field, which paper, and which sections.

Two routers give the same `Route`. `RuleRouter` reads the question's wording (survey or one paper, section cues)
and asks the `PaperLocator` (agent/locate.py) which paper it is about: location is retrieval over the catalogue
(aliases as phrases, BM25 and embeddings over title + aliases + abstract), not a list of regexes. `LLMRouter`
asks a chat model (structured output) for the intent, keywords and sections, resolves the keywords with the same
locator (a model never invents a doc_id), and falls back to the rules whenever its answer is unusable.

A question that refers to one paper (by a name, a title, authors or a description) when no paper of the
catalogue stands out is SPECIFIC_PAPER with no doc_ids: the paper is not in the knowledge base.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from ..parser.models import SectionCategory
from ..prompts import load_prompt
from ..rag.store import PaperRecord
from .locate import Location, PaperLocator, fold

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

__all__ = ["Intent", "LLMRouter", "Route", "RuleRouter", "catalogue_lines", "make_router", "section_cues"]

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
    not_found: list[str] = Field(
        default_factory=list,
        description="Names or descriptions of the paper the question is about that no paper in the catalogue matches.",
    )

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


# ---------------------------------------------------------------------------------------------------------------
# Question cues

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
    text = fold(query)
    found = {category for category, en, zh in _SECTION_CUES if en.search(text) or zh.search(text)}
    return [category.name for category in SectionCategory if category in found]


def _is_follow_up(query: str, survey: bool) -> bool:
    text = fold(query)
    return bool(_BACK_REFERENCE_EN.search(text) or _BACK_REFERENCE_ZH.search(text)) and not survey


def _inherit(route: Route, query: str, previous: Route | None, survey: bool) -> Route:
    """A follow-up that names no paper ("What are its limitations?") stays on the previous question's paper."""
    if (
        previous is None
        or previous.intent is not Intent.SPECIFIC_PAPER
        or route.doc_ids
        or route.target_paper_keywords
        or route.not_found
        or not _is_follow_up(query, survey)
    ):
        return route
    return route.model_copy(
        update={
            "intent": Intent.SPECIFIC_PAPER,
            "target_paper_keywords": list(previous.target_paper_keywords),
            "doc_ids": list(previous.doc_ids),
        }
    )


def route_from(location: Location, query: str, source: Literal["rules", "llm"] = "rules") -> Route:
    """The route a paper location gives: the paper(s) it names, or a paper that is not there, or the field."""
    named = location.named
    best = location.best
    if location.missing and not any(c.matched for c in location.candidates if c.doc_id in named):
        # "the BERT paper": a paper that merely uses BERT is not the one named.
        named = []
    doc_ids: list[str]
    keywords: list[str]
    if location.missing and not named:
        intent, doc_ids, keywords = Intent.SPECIFIC_PAPER, [], list(location.missing)
    elif (location.survey and len(named) < 2) or (location.field_wide and not (best and best.own_name)):
        intent, doc_ids, keywords = Intent.TOPIC_SURVEY, [], []
    elif named:
        intent, doc_ids, keywords = Intent.SPECIFIC_PAPER, named, location.identifying_words
    elif location.one_paper:
        intent, doc_ids, keywords = Intent.SPECIFIC_PAPER, [], []
    else:
        intent, doc_ids, keywords = Intent.TOPIC_SURVEY, [], []
    return Route(
        intent=intent,
        target_paper_keywords=keywords,
        target_section_category=section_cues(query),
        doc_ids=doc_ids,
        source=source,
        not_found=list(location.missing) if intent is Intent.SPECIFIC_PAPER and not doc_ids else [],
    )


class RuleRouter:
    """Routes with the question's wording and the paper locator; no model."""

    def __init__(self, locator: PaperLocator) -> None:
        self.locator = locator

    def route(self, query: str, previous: Route | None = None) -> Route:
        """Route a question; `previous` (the last route of a conversation) lets a follow-up keep its paper."""
        location = self.locator.locate(query)
        return _inherit(route_from(location, query), query, previous, location.survey)


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


def catalogue_lines(papers: Sequence[PaperRecord], limit: int = MAX_PROMPT_PAPERS) -> str:
    """The catalogue as a prompt shows it: "- <title> (<year>; also called: <names>)" per paper."""
    lines = []
    for paper in papers[:limit]:
        title = " ".join(paper.title.split())
        names = [a.text for a in paper.aliases if a.kind in ("short", "name", "acronym", "first_author", "id")]
        names = [n for n in dict.fromkeys(names) if n.casefold() not in title.casefold()][:6]
        extra = "; ".join(x for x in (str(paper.year or ""), ", ".join(names)) if x)
        lines.append(f"- {title} ({extra})" if extra else f"- {title}")
    if len(papers) > limit:
        lines.append(f"- ... and {len(papers) - limit} more papers not listed")
    return "\n".join(lines) if lines else "(the catalogue is empty)"


class LLMRouter:
    """Routes with a chat model (structured output through tool calling); the rules are its fallback."""

    def __init__(self, chat_model: BaseChatModel, locator: PaperLocator, fallback: RuleRouter | None = None) -> None:
        self.locator = locator
        self.fallback = fallback if fallback is not None else RuleRouter(locator)
        self._prompt = load_prompt("router")
        self._catalogue_text = catalogue_lines(list(locator.papers.values()))
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
        # The model's keywords join the question for the locator: it never picks a doc_id itself.
        probe = " ".join([query, *parsed.target_paper_keywords])
        location = self.locator.locate(probe)
        route = route_from(location, query, source="llm")
        if parsed.intent is Intent.TOPIC_SURVEY and not location.missing and len(route.doc_ids) < 2:
            route = route.model_copy(update={"intent": Intent.TOPIC_SURVEY, "doc_ids": [], "not_found": []})
        elif parsed.intent is Intent.SPECIFIC_PAPER and route.intent is Intent.TOPIC_SURVEY:
            keywords = parsed.target_paper_keywords
            route = route.model_copy(update={"intent": Intent.SPECIFIC_PAPER, "not_found": keywords})
        route = route.model_copy(
            update={
                "target_paper_keywords": route.target_paper_keywords or parsed.target_paper_keywords,
                "target_section_category": parsed.target_section_category,
            }
        )
        return _inherit(route, query, previous, location.survey)

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


def make_router(locator: PaperLocator, chat_model: BaseChatModel | None = None) -> RuleRouter | LLMRouter:
    """The LLM router when a chat model is configured, else the rule router."""
    rules = RuleRouter(locator)
    return rules if chat_model is None else LLMRouter(chat_model, locator, fallback=rules)
