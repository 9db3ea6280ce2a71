"""The reflection loop: an answer scored, and below the bar searched again, the best answer kept.

Each answer (the agent's or the single-shot one first, single-shot retries after) is scored 1-10:
- by the chat model (prompts/reflect.md) for accuracy, completeness, relevance and support against the
  sources it cites; a reply without usable scores gives none (junk, prose, numbers out of range are dropped);
- by the grounding check (grounding.py): the share of the answer's figures found in the evidence read.
The round's score is the mean of what there is. Below `reflection.min_score` the question is searched again
(`reflection.retry`): `expand` draws on twice the passages with wider windows, `rewrite` has the model write a
new search query from what the answer lacked (prompts/reflect_rewrite.md), `both` does both; at most
`reflection.max_rounds` answers are written, all within the question's budget, and the best scoring one is
given, with every round in `Answer.reflection`. A model call that fails ends the loop with the best answer so far.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..answer.model import Answer, Reflection, ReflectionRound
from ..errors import LLMError
from ..llm.client import question_scope
from ..rag.engine import Engine
from ..rag.transforms import json_value, papers_language, parse_queries, same_query, script_of

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..config import Settings
    from ..rag.retrieval import Retrieval
    from .writer import AnswerWriter


class Answering(Protocol):
    """What the loop needs of the single-shot searcher it runs over (pipeline.Searcher, which imports this module:
    the loop names what it uses instead of importing it back)."""

    settings: Settings
    engine: Engine
    writer: AnswerWriter

    @property
    def chat_model(self) -> BaseChatModel | None: ...

    def plan(
        self,
        query: str,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        k: int | None = None,
        history: Sequence[Answer] | None = None,
    ) -> Retrieval: ...

    def widened(self, settings: Settings) -> Answering:
        """The same searcher with other settings (wider windows for an `expand` retry)."""
        ...


SCORES = ("accuracy", "completeness", "relevance", "support")
CONTEXT_CHARS = 4000  # of the sources shown to the scoring model: a small model's context is short
MAX_K = 50

First = Callable[[Callable[[str], None] | None], Answer]


@dataclass(frozen=True)
class Scored:
    """The model's scores of an answer and what it said the answer lacks."""

    scores: dict[str, float]
    missing: str
    note: str = ""


def parse_scores(reply: str) -> Scored:
    """The scores (1-10) of a reply: a JSON object with numbers, else "name: n" pairs; out-of-range values dropped."""
    value = json_value(reply, "{")
    scores: dict[str, float] = {}
    missing = ""
    if isinstance(value, dict):
        for key in SCORES:
            raw = value.get(key)
            try:
                number = float(raw) if isinstance(raw, int | float | str) and not isinstance(raw, bool) else None
            except ValueError:
                number = None
            if number is not None and 1 <= number <= 10:
                scores[key] = number
        if isinstance(value.get("missing"), str):
            missing = " ".join(value["missing"].split())[:300]
    else:
        for key in SCORES:
            m = re.search(rf"\b{key}\b\W{{0,5}}(\d+(?:\.\d+)?)", reply, re.I)
            if m and 1 <= float(m.group(1)) <= 10:
                scores[key] = float(m.group(1))
    return Scored(scores, missing, "" if scores else "the model wrote no usable scores")


def grounding_score(answer: Answer) -> float:
    """1-10 from the grounding check: the share of figures found; an extracted answer is grounded by making."""
    score = answer.grounding.score if answer.grounding is not None else 10.0
    return score if answer.supported or not answer.sources else min(score, 3.0)


class Reflector:
    """Runs the reflection loop over a single-shot searcher (which also writes the retries)."""

    def __init__(self, searcher: Answering) -> None:
        self.searcher = searcher
        self.settings = searcher.settings.reflection

    def run(
        self,
        query: str,
        first: First,
        *,
        doc_ids: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        k: int | None = None,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        """The best of up to max_rounds answers to `query`; `first(on_token)` writes the first one."""
        with question_scope(self.searcher.chat_model):
            answer = first(on_token)
            report = Reflection(min_score=self.settings.min_score)
            if answer.llm_error or answer.extractive or self.searcher.chat_model is None:
                report.stopped = "the first answer was written without the model: nothing to reflect on"
                return answer.model_copy(update={"reflection": report})
            k0 = k or self.searcher.settings.retrieval.k
            best, best_score = answer, self._score(query, answer, 1, "initial", query, 0, report)
            searched, size = query, k0
            while best_score < self.settings.min_score:
                if len(report.rounds) >= self.settings.max_rounds:
                    report.stopped = f"max_rounds ({self.settings.max_rounds}) reached"
                    break
                retry, searched, size = self._retry(query, searched, size, report)
                try:
                    answer = self._again(query, searched, size, retry, best, doc_ids, categories, history)
                except LLMError as exc:
                    report.stopped = f"the model failed ({exc.reason})"
                    break
                if answer.llm_error:
                    report.stopped = "the model failed; the best answer so far is kept"
                    break
                score = self._score(query, answer, len(report.rounds) + 1, retry, searched, size, report)
                if score > best_score:
                    best, best_score, report.kept = answer, score, len(report.rounds)
            else:
                report.stopped = report.stopped or f"the score reached {self.settings.min_score:g}"
            if report.kept > 1 and on_token is not None:
                on_token(
                    f"\n\n(Reflection: the answer of round {report.kept} scored higher and replaces the one above.)"
                    f"\n\n{best.answer}"
                )
            notes = list(best.notes)
            if len(report.rounds) > 1:
                notes.append(
                    f"Reflection: {len(report.rounds)} rounds, scores "
                    + ", ".join(f"{r.score:g}" for r in report.rounds)
                    + f"; the answer of round {report.kept} is given."
                )
            return best.model_copy(update={"reflection": report, "notes": notes})

    # --- scoring ---------------------------------------------------------------------------------------------

    def _score(
        self, query: str, answer: Answer, n: int, retry: str, searched: str, k: int, report: Reflection
    ) -> float:
        """Score one answer (the model's scores and the grounding check) and add it to the report."""
        scores: dict[str, float] = {}
        missing, note = "", ""
        generator = self._engine.generator()
        try:
            if generator is not None:
                reply = generator.generate("reflect", question=query, context=_context(answer), answer=answer.answer)
                scored = parse_scores(reply)
                scores, missing, note = dict(scored.scores), scored.missing, scored.note
        except LLMError as exc:
            note = f"the model failed ({exc.reason})"
        scores["grounding"] = grounding_score(answer)
        overall = round(sum(scores.values()) / len(scores), 2)
        report.rounds.append(
            ReflectionRound(
                round=n, retry=retry, query=searched, k=k, scores=scores, score=overall, missing=missing, note=note
            )
        )
        return overall

    # --- retrying ------------------------------------------------------------------------------------------------

    @property
    def _engine(self) -> Engine:
        return self.searcher.engine

    def _retry(self, query: str, searched: str, k: int, report: Reflection) -> tuple[str, str, int]:
        """How the next round searches: (what was retried, the query, k)."""
        how = self.settings.retry
        parts: list[str] = []
        if how in ("expand", "both"):
            k, parts = min(MAX_K, 2 * k), ["expand"]
        if how in ("rewrite", "both"):
            missing = report.rounds[-1].missing if report.rounds else ""
            rewritten = self._rewrite(query, missing or "a direct answer to the question")
            if rewritten is not None and not same_query(rewritten, searched):
                searched = rewritten
                parts.append("rewrite")
            elif not parts:
                k, parts = min(MAX_K, 2 * k), ["expand"]  # nothing new to search for: search wider instead
        return "+".join(parts), searched, k

    def _rewrite(self, query: str, missing: str) -> str | None:
        """A new search query for what the answer lacked, or None (no usable one, or the model failed)."""
        generator = self._engine.generator()
        if generator is None:
            return None
        language, script = papers_language(self._engine.papers())
        try:
            reply = generator.generate("reflect_rewrite", question=query, missing=missing, language=language)
        except LLMError:
            return None
        for candidate in parse_queries(reply):
            if len(candidate) <= 300 and script_of(candidate) == script and not same_query(candidate, query):
                return candidate
        return None

    def _again(
        self,
        query: str,
        searched: str,
        k: int,
        retry: str,
        best: Answer,
        doc_ids: Sequence[str] | None,
        categories: Sequence[str] | None,
        history: Sequence[Answer] | None,
    ) -> Answer:
        """A single-shot answer to `query` from a search for `searched` (k passages; wider windows on expand),
        kept on the paper of a one-paper answer."""
        papers = list(doc_ids or []) or ([best.sources[0].doc_id] if best.track == "A" and best.sources else [])
        s = self.searcher
        r = s.settings.retrieval
        if "expand" in retry:
            wider = s.settings.with_overrides(
                retrieval={"window": min(5, r.window + 1), "token_budget": 2 * r.token_budget}
            )
            s = s.widened(wider)
        retrieval = s.plan(searched, doc_ids=papers or None, categories=categories, k=k, history=history)
        return s.writer.from_retrieval(query, retrieval)


def _context(answer: Answer) -> str:
    """The sources of an answer, numbered as it cites them, cut to what a small model's context holds."""
    parts: list[str] = []
    left = CONTEXT_CHARS
    for s in answer.sources:
        text = " ".join(s.text.split())[: max(0, left)]
        if not text:
            break
        parts.append(f"[{s.n}] {s.title}: {text}")
        left -= len(text)
    return "\n\n".join(parts) or "(no excerpts)"
