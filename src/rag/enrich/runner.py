"""Running the chosen enrichers over a paper: the cost first, then every generated text, then the rows to write.

`Enricher.plan` walks the same code as `enrich` without calling the model (see base.Calls): what is cached is
used, the rest counted. `enrich` makes the calls and returns the paper's rows: body chunks whose index text
carries what the model wrote (the chunker's header, then each strategy's addition in `ORDER`, then the chunk's
own text), the derived rows (summary, question, raptor) and the paper's summary. Nothing is written here: ingest
stores the paper only once all of it is computed, so a failing call leaves nothing of the paper half-indexed,
and the next run finds the replies that came back in the generation cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ...config import Settings
from ...errors import ConfigError
from ...parser.models import Paper
from ..chunking import Chunk
from ..chunking.base import Embed
from ..generate import Generator
from ..registry import get
from .base import Calls, CallStats, Enriched, PaperInput, joined

if TYPE_CHECKING:  # settings validation lists the enrichers: importing them must not load the chat model classes
    from langchain_core.language_models import BaseChatModel

#: The strategies in the order they run and their texts appear in an index text (summaries before contextual,
#: which reuses them).
ORDER = ("summaries", "contextual", "sliding_summary", "headers", "questions", "raptor")
#: The kind of the rows a strategy adds (the engine searches them when a paper has them).
ROW_KINDS = {"summaries": "summary", "questions": "question", "raptor": "raptor"}
GENERATIONS_FILE = "generations.sqlite"


class Cost(BaseModel):
    """What an enrichment will cost: model calls still to make, what the cache answers, and tokens (estimated)."""

    papers: int = 0
    chunks: int = Field(0, description="Body chunks of the papers to enrich.")
    calls: int = Field(0, description="Model calls to make (the cache answers none of them).")
    cached: int = Field(0, description="Calls the generation cache answers: no model call.")
    prompt_tokens: int = Field(0, description="Estimated prompt tokens of the calls to make.")
    reply_tokens: int = Field(0, description="Estimated reply tokens of the calls to make.")

    def add(self, stats: CallStats, chunks: int) -> None:
        self.papers += 1
        self.chunks += chunks
        self.calls += stats.planned
        self.cached += stats.cached
        self.prompt_tokens += stats.prompt_tokens
        self.reply_tokens += stats.reply_tokens

    def line(self, strategies: Sequence[str]) -> str:
        """One line for the user, e.g. "enrich (questions): 3 papers, 120 chunks: 120 model calls (0 cached),
        about 48,000 prompt + 12,000 reply tokens"."""
        return (
            f"enrich ({', '.join(strategies)}): {self.papers} papers, {self.chunks} chunks: {self.calls} model "
            f"calls ({self.cached} cached), about {self.prompt_tokens:,} prompt + {self.reply_tokens:,} reply tokens"
        )


@dataclass
class EnrichedPaper:
    """A paper's rows after enrichment, ready for the store."""

    chunks: list[Chunk]
    summary: str
    enrichments: list[str]
    stats: CallStats = field(default_factory=CallStats)
    seconds: float = 0.0  # time the enrichment took (set by ingest)

    @property
    def warnings(self) -> list[str]:
        n = self.stats.unusable
        if not n:
            return []
        return [f"{n} model repl{'y' if n == 1 else 'ies'} held nothing usable (empty or markup) and were left out"]


def ordered(strategies: Sequence[str]) -> list[str]:
    """The strategies asked for, each once, in the order they run; an unknown one is a ConfigError."""
    for name in strategies:
        get("enricher", name)
    return [name for name in ORDER if name in strategies]


class Enricher:
    """The chosen strategies over one Generator (the bounded chat model, the disk cache, concurrency, rate)."""

    def __init__(self, generator: Generator, settings: Settings, strategies: Sequence[str] | None = None) -> None:
        self.generator = generator
        self.settings = settings.enrichment
        self.strategies = ordered(settings.enrichment.strategies if strategies is None else strategies)

    def _run(self, inp: PaperInput, calls: Calls) -> list[tuple[str, Enriched]]:
        return [(name, get("enricher", name).target(inp, calls)) for name in self.strategies]

    def plan(self, paper: Paper, chunks: list[Chunk], count: Callable[[str], int], embed: Embed | None) -> CallStats:
        """The calls enriching this paper would make (none is made) and their tokens, estimated."""
        calls = Calls(self.generator, count, planning=True)
        self._run(PaperInput(paper, chunks, self.settings, count, embed), calls)
        return calls.stats

    def enrich(
        self,
        paper: Paper,
        chunks: list[Chunk],
        count: Callable[[str], int],
        embed: Embed | None,
        *,
        on_call: Callable[[int, int], None] | None = None,
        total: int = 0,
    ) -> EnrichedPaper:
        """Every generated text of the paper (cached calls cost nothing), then its rows; EnrichmentError when a
        call fails (nothing is returned, nothing is written)."""
        calls = Calls(self.generator, count, on_call=on_call, total=total)
        results = self._run(PaperInput(paper, chunks, self.settings, count, embed), calls)
        rows: list[Chunk] = []
        out: list[Chunk] = []
        body_parts: dict[int, list[str]] = {}
        summary = ""
        for _, enriched in results:
            for index, text in enriched.additions.items():
                body_parts.setdefault(index, []).append(text)
            rows.extend(enriched.rows)
            summary = summary or enriched.summary
        for chunk in chunks:
            parts = body_parts.get(chunk.chunk_index) if chunk.kind == "chunk" else None
            if parts:
                header = PaperInput(paper, [], self.settings, count).header(chunk)
                chunk = chunk.model_copy(update={"index_text": joined([header, *parts, chunk.text])})
            out.append(chunk)
        return EnrichedPaper(out + rows, summary, list(self.strategies), calls.stats)


def make_enricher(chat_model: BaseChatModel | None, settings: Settings) -> Enricher | None:
    """The enricher for `settings.enrichment` (None when no strategy is chosen); a ConfigError in one line when
    strategies are chosen and no chat model is configured."""
    strategies = ordered(settings.enrichment.strategies)
    if not strategies:
        return None
    if chat_model is None:
        raise ConfigError(
            f"enrichment ({', '.join(strategies)}) needs a chat model: set PAPERSCOPE_LLM_MODEL and "
            "OPENAI_BASE_URL (or llm.model and llm.base_url), or leave --enrich out"
        )
    e = settings.enrichment
    cache = Path(settings.home).expanduser() / "cache" / GENERATIONS_FILE
    generator = Generator(chat_model, cache, concurrency=e.concurrency, requests_per_second=e.requests_per_second)
    return Enricher(generator, settings, strategies)


def enricher_for(settings: Settings) -> Enricher | None:
    """The enricher `settings.enrichment` asks for, with the configured chat model (bounded): None when no strategy
    is chosen, a ConfigError in one line when one is and no model is configured (what `ingest --enrich` and an
    upload's `enrich` both run)."""
    if not settings.enrichment.strategies:
        return None
    from ...llm.client import make_chat_model

    return make_enricher(make_chat_model(settings.llm), settings)
