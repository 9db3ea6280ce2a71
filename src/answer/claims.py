"""Claims: an answer as sentences, each tied to the exact span of the chunk it rests on, with a verdict.

A claim is one sentence of the answer (or one table row it quotes). Where it rests on what was read, it names
the chunk (`citation`, `<doc_id>:<chunk_index>` of the chunk the span is in, never the centre of a window), the
span of that chunk's text (`chunk.text[span[0]:span[1]]` is `quote`), and the boxes of the lines the span covers
on the page (from the chunk's `box_starts`; a chunk stored before they were kept shows its whole box list).

- An extracted answer quotes its claims: each is a span, `text` is exactly `quote`, and the verdict is
  `supported`. Its first claim (one per part of a question that asks several things) has role `answer`, the rest
  `support`.
- A model's answer is split into sentences (`sentence_spans`); each is matched to the unit of the passages read
  that best holds its figures and words: among the sources it cites, else among all. Its verdict: `supported`
  when the span holds every figure it states (numbers, quoted names, author citations) or, without figures, most
  of its words; `partial` when it holds some; `unsupported` when nothing read holds what it states. A figure the
  grounding check found nowhere (grounding.py) makes a claim `unsupported`, never `supported`.

`at` is where the claim's sentence stands in the answer's text, so a reader (the terminal, the web page) can show
the verdict beside the sentence and open its span from its [n].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from ..rag.chunking import lines_in
from ..rag.store import StoredChunk
from .citation_forms import NUMBERED
from .grounding import EvidenceIndex, Figure, GroundingReport, names, numbers
from .sentences import Unit, sentence_spans, units_at
from .words import terms

Verdict = Literal["supported", "partial", "unsupported"]
Role = Literal["answer", "support"]

#: Shares of a sentence's words a span must hold, without figures to check: most of them, or some.
SUPPORTED_WORDS, PARTIAL_WORDS = 0.6, 0.3


class Claim(BaseModel):
    """One sentence of an answer, the span of the chunk it rests on, and whether that span supports it."""

    text: str = Field(description="The claim as the answer states it; for an extracted claim, exactly `quote`.")
    n: int | None = Field(None, description="The number [n] of the source it cites in the answer text.")
    citation: str | None = Field(
        None, description="`<doc_id>:<chunk_index>` of the chunk the span is in; None when nothing read holds it."
    )
    span: tuple[int, int] | None = Field(None, description="[start, end) of the span in that chunk's text.")
    quote: str | None = Field(None, description="The chunk's text at `span`.")
    page: int | None = Field(None, description="The page the span starts on (1-based).")
    boxes: list[dict[str, Any]] = Field(
        default_factory=list, description="`{page, rect}` of the lines the span covers (PDF points)."
    )
    verdict: Verdict = Field(description="supported, partial or unsupported: what the span holds of the claim.")
    role: Role = Field(description="answer: it answers the question; support: it backs or widens the answer.")
    at: tuple[int, int] | None = Field(None, description="[start, end) of the claim's sentence in the answer text.")
    missing: list[str] = Field(default_factory=list, description="Figures of the claim nothing read holds.")

    #: How the answer's text shows the claim (an extracted claim reads cleaned up): what `placed` looks for.
    _shown: str = PrivateAttr("")

    def shown_as(self, text: str) -> Claim:
        """This claim, shown in the answer as `text`."""
        self._shown = text
        return self


def placed(claims: Sequence[Claim], text: str) -> list[Claim]:
    """`claims` with `at` set to where each stands in the answer `text` (in order; None when it is not there)."""
    out = []
    cursor = 0
    for claim in claims:
        shown = claim._shown or claim.text
        at = text.find(shown, cursor) if shown else -1
        if at < 0 and shown:
            at = text.find(shown)  # a claim the answer shows out of order
        located = (at, at + len(shown)) if at >= 0 else None
        if at >= 0:
            cursor = at
        out.append(claim.model_copy(update={"at": located}))
    return out


def renumbered(claims: Sequence[Claim], number: Callable[[int], int | None]) -> list[Claim]:
    """`claims` with their source numbers as `number` maps them (as the answer's citations were renumbered)."""
    return [c.model_copy(update={"n": number(c.n) if c.n is not None else None}) for c in claims]


def span_boxes(chunk: StoredChunk, start: int, end: int) -> list[dict[str, Any]]:
    """The boxes of `chunk`'s lines that hold its text from `start` to `end` (all of its boxes when it does not
    say where its lines start)."""
    boxes = list(chunk.metadata.get("boxes") or [])
    starts = chunk.metadata.get("box_starts")
    if not boxes or not isinstance(starts, list) or len(starts) != len(boxes):
        return boxes
    return [boxes[k] for k in lines_in(starts, len(chunk.text) + 1, start, end)]


def quoted(chunk: StoredChunk, start: int, end: int, *, n: int, role: Role, shown: str) -> Claim:
    """A claim that quotes `chunk` from `start` to `end`, shown in the answer as `shown`: supported by what it is."""
    claim = _located(chunk, start, end, text=chunk.text[start:end], n=n, verdict="supported", role=role)
    return claim.shown_as(shown)


def _located(chunk: StoredChunk, start: int, end: int, **fields: Any) -> Claim:
    boxes = span_boxes(chunk, start, end)
    page = min((int(b["page"]) for b in boxes), default=chunk.page_number)
    return Claim(
        citation=chunk.citation, span=(start, end), quote=chunk.text[start:end], page=page, boxes=boxes, **fields
    )


@lru_cache(maxsize=2048)
def _units(text: str) -> tuple[tuple[Unit, int, int, frozenset[str]], ...]:
    """A chunk's units with their spans and stemmed words (the same chunks come back question after question)."""
    return tuple((u, a, b, frozenset(terms(u.text))) for u, a, b in units_at(text))


class Reading:
    """The passages an answer was written from, ready to find the span a sentence rests on: the sources it lists,
    by number, and what else was read (a sentence whose cited passage lacks it may rest on another)."""

    def __init__(
        self,
        sources: Sequence[tuple[int, Sequence[StoredChunk]]],
        question: str = "",
        others: Sequence[StoredChunk] = (),
    ) -> None:
        self.sources: list[tuple[int | None, list[StoredChunk]]] = [(n, list(chunks)) for n, chunks in sources]
        listed = {c.citation for _, chunks in self.sources for c in chunks}
        self.others = [c for c in others if c.citation not in listed]
        read = [c.text for _, chunks in self.sources for c in chunks] + [c.text for c in self.others]
        self.index = EvidenceIndex.of([*read, question])
        self.question = question

    def claims(self, text: str, report: GroundingReport | None = None, *, role: Role = "answer") -> list[Claim]:
        """The claims of a model's `text`: one per sentence."""
        missing = {c.sentence.strip(): c.missing for c in report.unsupported} if report is not None else {}
        out = []
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            words = frozenset(terms(NUMBERED.sub(" ", sentence)))
            figures = [f for f in [*numbers(sentence), *names(sentence)] if not _given(f, self.question)]
            if not words and not figures:
                continue  # a bare "[1]" or a lone marker: nothing to support
            absent = [f.text for f in figures if not self.index.holds(f)]
            for key, gone in missing.items():  # the grounding check's word for the sentence stands
                if key and (key in sentence or sentence.strip() in key):
                    absent = list(dict.fromkeys([*absent, *gone]))
            refs = [int(m.group(1)) for m in NUMBERED.finditer(sentence)]
            out.append(self._claim(sentence.strip(), words, figures, absent, refs, role))
        return out

    def _claim(
        self,
        sentence: str,
        words: frozenset[str],
        figures: list[Figure],
        absent: list[str],
        refs: list[int],
        role: Role,
    ) -> Claim:
        best = self._best(words, figures, refs)
        if best is None:
            return Claim(text=sentence, verdict="unsupported", role=role, missing=absent)
        n, chunk, start, end, held, share = best
        if figures:
            verdict: Verdict = "supported" if held == len(figures) else "partial" if held else "unsupported"
            if absent and verdict == "supported":
                verdict = "partial"
            if len(absent) == len(figures):
                verdict = "unsupported"
        else:
            verdict = (
                "supported" if share >= SUPPORTED_WORDS else "partial" if share >= PARTIAL_WORDS else "unsupported"
            )
        return _located(chunk, start, end, text=sentence, n=n, verdict=verdict, role=role, missing=absent)

    def _best(
        self, words: frozenset[str], figures: list[Figure], refs: list[int]
    ) -> tuple[int | None, StoredChunk, int, int, int, float] | None:
        """The unit that best holds the sentence: (n, chunk, start, end, figures held, share of words held); it is
        looked for in the sources the sentence cites, then in all sources, then in what else was read."""
        # Each pool is looked through once: the cited sources, the other sources, then the rest of what was read.
        Pool = list[tuple[int | None, list[StoredChunk]]]
        cited: Pool = [(n, chunks) for n, chunks in self.sources if n in refs]
        uncited: Pool = [(n, chunks) for n, chunks in self.sources if n not in refs]
        rest: Pool = [(None, self.others)] if self.others else []
        pools = [pool for pool in (cited, uncited, rest) if pool]
        best: tuple[float, tuple[int | None, StoredChunk, int, int, int, float]] | None = None
        for pool in pools:
            for n, chunks in pool:
                for chunk in chunks:
                    for unit, start, end, held_words in _units(chunk.text):
                        held = sum(1 for f in figures if _index(unit.text).holds(f)) if figures else 0
                        share = len(words & held_words) / len(words) if words else 0.0
                        score = 2.0 * held + share
                        if best is None or score > best[0]:
                            best = (score, (n, chunk, start, end, held, share))
            enough = 2.0 * len(figures) + SUPPORTED_WORDS
            if best is not None and best[0] >= enough:
                break  # these sources hold it: no need to look further
        return best[1] if best is not None and best[0] > 0 else None


@lru_cache(maxsize=8192)
def _index(text: str) -> EvidenceIndex:
    return EvidenceIndex.of([text])


def _given(fig: Figure, question: str) -> bool:
    """A figure the question itself states ("in 2019", "GPT-3"): given, not claimed."""
    return bool(question) and _index(question).holds(fig)
