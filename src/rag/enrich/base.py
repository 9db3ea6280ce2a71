"""What the enrichers share: the paper they read, the model calls they make, what they hand back.

An enricher (one module per strategy, registered as an `enricher` operator) reads a paper and its chunks and
returns what the chat model wrote for them (`Enriched`):
- `additions`: text added to a chunk's index text (what is embedded and BM25-indexed); the chunk's `text`, what
  answers quote, is never touched;
- `rows`: derived rows (kind question, summary or raptor) with deterministic chunk_index values and metadata
  pointing back to the chunks they stand for;
- `summary`: the paper's summary, for the catalogue.

Every call goes through `Calls`, over a `Generator` (cached on disk by model, prompt version and text;
concurrent; rate-limited). In planning mode `Calls` makes no call at all: a cached reply is used as it is, any
other is counted (calls, prompt and reply tokens) and stood in for by a placeholder of the expected length, so
one code path gives both the cost before any call and the enrichment itself.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ...config import EnrichmentSettings
from ...errors import PaperscopeError
from ...parser.models import Paper, Section
from ...prompts import load_prompt
from ..chunking import Chunk
from ..chunking.base import Embed
from ..generate import Generator

#: Characters per token assumed when paper text is cut to a token budget (English prose runs at ~4-5).
CHARS_PER_TOKEN = 4


class EnrichmentError(PaperscopeError):
    """A model call of an enrichment failed: the paper is not stored (the calls that succeeded are cached)."""


class Cancelled(Exception):
    """A call not made because another call of the same paper had failed."""


@dataclass
class Enriched:
    """What one enricher produced for one paper."""

    additions: dict[int, str] = field(default_factory=dict)  # body chunk_index -> text for its index text
    rows: list[Chunk] = field(default_factory=list)  # derived rows (question, summary, raptor)
    summary: str = ""  # the paper's summary (the catalogue keeps it)


@dataclass
class PaperInput:
    """A paper as the enrichers read it: its chunks, the settings, a token counter and (for raptor) an embedder."""

    paper: Paper
    chunks: list[Chunk]
    settings: EnrichmentSettings
    count: Callable[[str], int]
    embed: Embed | None = None
    memo: dict[str, Any] = field(default_factory=dict)  # results one enricher computes for another (summaries)

    @property
    def body(self) -> list[Chunk]:
        """The body chunks (kind "chunk"), in chunk_index order."""
        return [c for c in self.chunks if c.kind == "chunk"]

    @property
    def title(self) -> str:
        return self.paper.title or "(untitled)"

    def header(self, chunk: Chunk) -> str:
        """The chunk's context header ("Title > Section"), what its index text starts with."""
        suffix = "\n" + chunk.text
        if chunk.index_text.endswith(suffix):
            return chunk.index_text[: -len(suffix)]
        return chunk.index_text.split("\n", 1)[0]

    def section_of(self, chunk: Chunk) -> Section | None:
        """The section the chunk belongs to (None for a chunk without one)."""
        section_id = chunk.metadata.get("section_id")
        if not isinstance(section_id, int) or not 0 <= section_id < len(self.paper.sections):
            return None
        return self.paper.section(section_id)

    def top_section(self, chunk: Chunk) -> Section | None:
        """The top-level section enclosing the chunk's section."""
        section = self.section_of(chunk)
        return None if section is None else self.paper.top_section(section)

    def cut(self, text: str, tokens: int | None = None) -> str:
        """`text` cut to about `tokens` tokens (default: the most one prompt takes), at a word boundary."""
        limit = (tokens or self.settings.max_input_tokens) * CHARS_PER_TOKEN
        if len(text) <= limit:
            return text
        return text[:limit].rsplit(" ", 1)[0] + " ..."


@dataclass
class CallStats:
    """Model calls of an enrichment: made, answered from the cache, and (planning) the calls still to make."""

    made: int = 0
    cached: int = 0
    planned: int = 0  # planning: calls no cached reply answers
    prompt_tokens: int = 0  # planning: estimated tokens of those calls' prompts
    reply_tokens: int = 0  # planning: estimated tokens of their replies
    unusable: int = 0  # replies that were empty or held nothing usable

    def add(self, other: CallStats) -> None:
        for name in ("made", "cached", "planned", "prompt_tokens", "reply_tokens", "unusable"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Calls:
    """The model calls of one paper's enrichment (see the module docstring).

    `on_call(done, total)` is told after each call made; `total` is what the plan counted for the paper. The
    first failing call stops the paper: calls not yet started are not made (a dead endpoint costs one failure,
    not one per chunk) and `EnrichmentError` names the model and the reason.
    """

    def __init__(
        self,
        generator: Generator,
        count: Callable[[str], int],
        *,
        planning: bool = False,
        on_call: Callable[[int, int], None] | None = None,
        total: int = 0,
    ) -> None:
        self.generator = generator
        self.count = count
        self.planning = planning
        self.on_call = on_call
        self.total = total
        self.stats = CallStats()
        self._lock = threading.Lock()
        self._failed = threading.Event()

    def one(self, prompt: str, fields: Mapping[str, Any], expect: int) -> str:
        """The model's reply (stripped) to `prompt` filled with `fields`; `expect`: reply tokens it should take."""
        if self._failed.is_set():
            raise Cancelled
        gen = self.generator
        if self.planning:
            cached = gen.cached_only(prompt, **fields)
            with self._lock:
                if cached is not None:
                    self.stats.cached += 1
                    return cached
                self.stats.planned += 1
                self.stats.prompt_tokens += self.count(load_prompt(prompt).format(**fields))
                self.stats.reply_tokens += expect
            return placeholder(expect)
        cached = gen.cached_only(prompt, **fields)
        if cached is not None:
            with self._lock:
                self.stats.cached += 1
            return cached
        try:
            text = gen.generate(prompt, **fields)
        except Exception as exc:  # every way a call fails stops the paper, named once
            self._failed.set()
            raise EnrichmentError(f"enrichment call ({prompt}) failed: {exc}") from exc
        with self._lock:
            self.stats.made += 1
            done = self.stats.made
        if self.on_call is not None:
            self.on_call(done, max(self.total, done))
        return text

    def many(self, prompt: str, items: Sequence[Mapping[str, Any]], expect: int) -> list[str]:
        """`one` for each item, `generator.concurrency` at a time, in order; the first failure is raised."""
        workers = 1 if self.planning else min(self.generator.concurrency, len(items))
        if workers <= 1:
            return [self.one(prompt, f, expect) for f in items]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.one, prompt, f, expect) for f in items]
            results: list[str] = []
            first: BaseException | None = None
            for future in futures:
                try:
                    results.append(future.result())
                except Cancelled:
                    continue
                except BaseException as exc:  # wait for the calls in flight, then raise the first failure
                    first = first or exc
            if first is not None:
                raise first
            return results

    def unusable(self, n: int = 1) -> None:
        """Count replies that held nothing usable (empty, markup, no question)."""
        with self._lock:
            self.stats.unusable += n


def placeholder(tokens: int) -> str:
    """A stand-in reply of about `tokens` tokens (planning: what a later prompt that quotes it will weigh)."""
    return " ".join(["placeholder"] * max(1, tokens // 2))


# --- reading what a model wrote ------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LEAD = re.compile(
    r"^\s*(?:(?:sure|certainly|okay|ok)[,!.]?\s*)?(?:here(?:'s| is| are)\b[^:\n]{0,80}:|"
    r"(?:summary|context|header|title|heading|answer)\s*:)\s*",
    re.I,
)
_MARKUP = re.compile(r"<\s*/?\s*(?:tool_call|function|tools|\|)", re.I)


def clean(reply: str, max_chars: int) -> str:
    """A reply as index text: reasoning, fences, lead-ins ("Here is the summary:") and control characters out,
    whitespace collapsed, cut to `max_chars` at a word boundary; "" when nothing usable is left (no words, or
    tool-call and JSON markup)."""
    text = _THINK.sub(" ", reply)
    text = text.replace("```", " ")
    text = _CONTROL.sub(" ", text)
    text = " ".join(text.split())
    text = _LEAD.sub("", text).strip().strip('"').strip()
    if not usable(text):
        return ""
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0]
    return text


def usable(text: str) -> bool:
    """True when `text` reads as words: at least two of them with letters, no tool-call or JSON markup."""
    if not text or text[0] in "{[<" or _MARKUP.search(text):
        return False
    return sum(1 for w in text.split() if any(ch.isalpha() for ch in w)) >= 2


def joined(parts: Sequence[str]) -> str:
    """Non-empty parts on their own lines."""
    return "\n".join(p for p in parts if p)
