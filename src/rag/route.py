"""The route of a question: one paper (Track A), the field (Track B), or a paper the knowledge base lacks.

`RuleRouter` reads the question's wording (cues.py: survey or one paper, section cues, follow-ups) and asks the
`PaperLocator` (locate.py) which paper it is about: location is retrieval over the catalogue (aliases as phrases,
BM25 and embeddings over title + aliases + abstract), not a list of regexes. The agent's LLM router
(agent/router.py) returns the same `Route`, its keywords resolved by the same locator.

A question that refers to one paper (by a name, a title, authors or a description) when no paper of the
catalogue stands out is SPECIFIC_PAPER with no doc_ids: the paper is not in the knowledge base.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from ..parser.models import SectionCategory
from .cues import points_back, section_cues
from .locate import Location, PaperLocator
from .registry import register

__all__ = ["Intent", "Route", "RuleRouter", "route_from"]


class Intent(StrEnum):
    """What a question is about."""

    SPECIFIC_PAPER = "SPECIFIC_PAPER"
    TOPIC_SURVEY = "TOPIC_SURVEY"


def category_names(values: Iterable[str]) -> list[str]:
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
    source: Literal["rules", "llm", "agent"] = Field(
        default="rules", description="Who decided: the rule router, the LLM router, or the agent by what it cited."
    )
    not_found: list[str] = Field(
        default_factory=list,
        description="Names or descriptions of the paper the question is about that no paper in the catalogue matches.",
    )

    @field_validator("target_section_category")
    @classmethod
    def _known_categories(cls, values: list[str]) -> list[str]:
        return category_names(values)

    @field_validator("target_paper_keywords")
    @classmethod
    def _keywords(cls, values: list[str]) -> list[str]:
        return _clean_keywords(values)

    @property
    def categories(self) -> list[SectionCategory]:
        """`target_section_category` as enum members (for store filters)."""
        return [SectionCategory[name] for name in self.target_section_category]


def inherit(route: Route, query: str, previous: Route | None, survey: bool) -> Route:
    """A follow-up that names no paper ("What are its limitations?") stays on the previous question's paper."""
    if (
        previous is None
        or previous.intent is not Intent.SPECIFIC_PAPER
        or route.doc_ids
        or route.target_paper_keywords
        or route.not_found
        or not (points_back(query) and not survey)
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
    elif (location.survey and len(named) < 2 and not _names_its_paper(location)) or (
        # "Which tools were used ... in the temporal stereo matching paper": the paper it refers to, once found
        location.field_wide and not (best and best.own_name) and not (location.one_paper and named)
    ):
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


def _names_its_paper(location: Location) -> bool:
    """A question set in the collection ("in the papers of the corpus") that names one paper by its own name or
    title is about that paper; "which papers ..." asks for papers whatever it names."""
    best = location.best
    return bool(not location.which_papers and best and best.own_name and location.named)


@register("router", "rules")
class RuleRouter:
    """Routes with the question's wording and the paper locator; no model."""

    def __init__(self, locator: PaperLocator) -> None:
        self.locator = locator

    def route(self, query: str, previous: Route | None = None) -> Route:
        """Route a question; `previous` (the last route of a conversation) lets a follow-up keep its paper."""
        return self.route_located(query, self.locator.locate(query), previous)

    def route_located(self, query: str, location: Location, previous: Route | None = None) -> Route:
        """`route` for a question already located (`PaperLocator.locate`)."""
        return inherit(route_from(location, query), query, previous, location.survey)
