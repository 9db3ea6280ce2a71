"""The LLM router: a chat model reads the question; the rule router (rag/route.py) is its fallback.

`LLMRouter` asks a chat model (structured output) for the intent, keywords and sections, resolves the keywords
with the engine's paper locator (a model never invents a doc_id), and falls back to the rules whenever its answer
is unusable. Both give the same `Route`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from ..prompts import load_prompt
from ..rag.locate import PaperLocator
from ..rag.registry import register
from ..rag.route import Intent, Route, RuleRouter, category_names, inherit, route_from
from ..rag.store import PaperRecord

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import Runnable

__all__ = ["LLMRouter", "catalogue_lines", "make_router"]

logger = logging.getLogger("paperscope.router")

# The catalogue shown to the LLM router is capped: past a few hundred lines it only costs tokens, and the
# keywords the model returns are matched against the whole catalogue anyway.
MAX_PROMPT_PAPERS = 300


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
        return category_names(values)


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


@register("router", "llm", needs=("llm",))
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
        return inherit(route, query, previous, location.survey)

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
