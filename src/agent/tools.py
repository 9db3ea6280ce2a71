"""The agent's tools (the contract in DESIGN.md): typed, validated, observations the model can cite from.

Every chunk a tool shows is written with its short citation id `P<n>:<chunk_index>` (see labels.py) and
remembered in the run's `RunState` under its full id `<doc_id>:<chunk_index>`, so `finish` can check that
each cited source was really read in this run. Papers are named P1, P2, ... to the model; a full doc_id is
accepted too. A bad argument goes back to the model as a one-line error (`BadToolCall`); anything else raises.

As LangGraph tools, they take the run's `RunState` from the graph's context (`ToolRuntime.context`, injected by
the ToolNode and never declared to the model) and answer `(text for the model, citation ids it showed)`: the
second part is the ToolMessage's artifact, which the graph's `wrap_tool_call` wrapper turns into the call's
TraceStep (`call_step`).
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import ToolInvocationError, ToolRuntime
from pydantic import BaseModel, Field, ValidationError

from ..answer.citations import Resolver
from ..answer.model import TraceStep
from ..parser.models import SectionCategory
from ..rag.engine import Engine
from ..rag.filters import SearchFilter, parse_category, validate_doc_id
from ..rag.store import PaperRecord, StoredChunk
from .labels import PaperLabels

MAX_K = 10
MAX_WINDOW = 3
SNIPPET_CHARS = 300
OBSERVATION_CHARS = 160  # of an observation kept in the trace
CATEGORY_NAMES = ", ".join(c.name for c in SectionCategory)


class BadToolCall(Exception):
    """A tool argument the model can fix; its message goes back to the model."""


@dataclass(eq=False)
class RunState:
    """What one agent run has seen and done: the graph's context, shared by the tools it runs concurrently.

    `on_record` hears of every step as it is recorded (a server streams the tool calls as they end)."""

    labels: PaperLabels = field(default_factory=PaperLabels)
    on_record: Callable[[TraceStep], None] | None = None
    seen: dict[str, StoredChunk] = field(default_factory=dict, init=False)
    # Appended by the graph's nodes and the searcher, which run one at a time; concurrent tools only report.
    trace: list[TraceStep] = field(default_factory=list, init=False)
    # What the query transforms generated for the run's searches (the answer's monitoring fields).
    generated: dict[str, list[str]] = field(
        default_factory=lambda: {"generated_queries": [], "hyde_queries": []}, init=False
    )
    notes: list[str] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        # What the model's citations point at: the chunks it was shown, by label or full id.
        self.resolve = Resolver.of_seen(self.seen, self.labels.doc_id)

    def remember(self, chunks: list[StoredChunk]) -> list[str]:
        """Chunks a tool showed the model, citable from now on; their citation ids in order, each once."""
        with self._lock:
            for c in chunks:
                self.seen.setdefault(c.citation, c)
        return list(dict.fromkeys(c.citation for c in chunks))

    def add_generated(self, fields: dict[str, Any], notes: Sequence[str] = ()) -> None:
        """Keep what a search's query transforms generated (each query once) and their notes."""
        with self._lock:
            for key, kept in self.generated.items():
                kept.extend(q for q in fields.get(key) or [] if q not in kept)
            self.notes.extend(n for n in notes if n not in self.notes)

    def record(self, step: TraceStep) -> None:
        """Add `step` to the trace and report it."""
        self.trace.append(step)
        self.report(step)

    def report(self, step: TraceStep) -> None:
        """Tell `on_record` of `step` (a tool call as it ends: it joins the trace once its turn's calls are done)."""
        if self.on_record is not None:
            self.on_record(step)

    def shown_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Tool arguments as the trace shows them: paper labels and short citation ids mapped to doc_ids."""
        out = dict(args)
        if isinstance(out.get("doc_id"), str):
            out["doc_id"] = self.labels.doc_id(out["doc_id"]) or out["doc_id"]
        if isinstance(out.get("sources"), list):
            out["sources"] = [self.labels.resolve(s) or s if isinstance(s, str) else s for s in out["sources"]]
        return out


# --- argument schemas: what the model fills in ----------------------------------------------------------


class SearchAbstractsArgs(BaseModel):
    query: str = Field(description="What the papers should be about, in a few words.", min_length=1, max_length=500)
    k: int = Field(5, ge=1, le=MAX_K, description="How many papers to return (1-10).")


class SearchBySectionArgs(BaseModel):
    query: str = Field(description="What the passage should say, in a few words.", min_length=1, max_length=500)
    doc_id: str | None = Field(None, description="Search only this paper: its id as shown (P1, P2, ...).")
    category: str | None = Field(None, description=f"Search only this section category: one of {CATEGORY_NAMES}.")
    k: int = Field(5, ge=1, le=MAX_K, description="How many passages to return (1-10).")


PAPER_ID = "The paper's id as shown (P1, P2, ...)."


class ContextWindowArgs(BaseModel):
    doc_id: str = Field(description=PAPER_ID)
    chunk_index: int = Field(ge=0, description="The passage's chunk_index (the number after ':' in its citation id).")
    window: int = Field(1, ge=0, le=MAX_WINDOW, description="Passages to read on each side (0-3).")


class IntroductionArgs(BaseModel):
    doc_id: str = Field(description=PAPER_ID)


class FinishArgs(BaseModel):
    answer: str = Field(description="The final answer, citing passages inline by their ids, e.g. [P1:12].")
    sources: list[str] = Field(description="The citation ids the answer relies on, e.g. P1:12.")


# --- observations ------------------------------------------------------------------------------------------


def format_chunk(c: StoredChunk, cid: str, *, with_score: bool = True) -> str:
    """A passage as the model sees it: citation id `cid`, paper, section, page (and score), then the text."""
    score = f", score {c.score:.3f}" if with_score and c.score is not None else ""
    head = f"[{cid}] {c.title} | {c.section_title} ({c.section_category.name}), p. {c.page_number}{score}"
    return f"{head}\n{c.text.strip()}"


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class AgentTools:
    """The five tools bound to the engine: thin views of its results for the run whose state they are given.

    Each returns `(text for the model, citation ids of the chunks it showed)`."""

    def __init__(self, engine: Engine, papers: Sequence[PaperRecord] | None = None) -> None:
        """`papers`: the ready catalogue if the caller has just read it (it is re-read on an unknown doc_id)."""
        self.engine = engine
        self.store = engine.store
        self._papers: dict[str, PaperRecord] | None = None if papers is None else {p.doc_id: p for p in papers}

    def _paper(self, run: RunState, ref: str) -> PaperRecord:
        """The ready paper a model's reference (P3, or a full doc_id) names, or a BadToolCall the model can act on."""
        doc_id = run.labels.doc_id(ref)
        if doc_id is None:
            raise BadToolCall(f"unknown paper {ref.strip()!r}; use a paper id (P1, P2, ...) from the list or a search")
        try:
            validate_doc_id(doc_id)
        except ValueError as exc:
            raise BadToolCall(f"{exc}; use a paper id (P1, P2, ...) from the list or a search") from None
        if self._papers is None or doc_id not in self._papers:
            self._papers = {p.doc_id: p for p in self.engine.papers()}
        paper = self._papers.get(doc_id)
        if paper is None:
            # Small models pass a paper's name for its id: point at the paper instead of only refusing.
            name = ref.strip().casefold()
            named = [p for p in self._papers.values() if len(name) >= 3 and name in p.title.casefold()]
            hint = (
                f"; did you mean {run.labels.label(named[0].doc_id)} ({named[0].title})?"
                if len(named) == 1
                else "; call search_abstracts to find papers"
            )
            raise BadToolCall(f"unknown doc_id {doc_id!r}{hint}")
        return paper

    # The docstrings below are exactly what the model reads.

    def search_abstracts(self, run: RunState, query: str, k: int = 5) -> tuple[str, list[str]]:
        """Find the papers about a topic by searching their titles and abstracts.

        Returns for each paper, best match first, its id (P1, P2, ...), title, year, score, and the citation
        id and start of its abstract. Start here to learn which papers matter, then search inside them with
        search_by_section.
        """
        generated = self.engine.transform(query, self_query=False)
        run.add_generated(generated.fields(), generated.notes)
        found = self.engine.find_papers(query, k, generated=generated)
        if not found:
            return "No paper matches. Try other words.", []
        shown = run.remember([c for c, _ in found])
        lines = []
        labels = run.labels
        for h, score in found:
            year = f" ({h.year})" if h.year else ""
            lines.append(
                f"{labels.label(h.doc_id)} | {h.title}{year} | score {score:.3f} | "
                f"abstract [{labels.short(h.citation)}]: {shorten(h.text, SNIPPET_CHARS)}"
            )
        return "\n".join(lines), shown

    def search_by_section(
        self, run: RunState, query: str, doc_id: str | None = None, category: str | None = None, k: int = 5
    ) -> tuple[str, list[str]]:
        """Search passages of the papers, optionally only in one paper (doc_id: P1, P2, ...) and one section category.

        Categories: METHOD (how it works, setup, data), EVALUATION (results, numbers, ablations),
        INTRODUCTION (problem, motivation), CONCLUSION (limitations, future work), RELATED_WORK (what
        OTHER papers did), ABSTRACT, OTHER (references, appendix). Returns passages with their citation id
        (e.g. [P1:12]: paper P1, passage 12), paper title, section, page, score and text.
        """
        cats: list[SectionCategory] | None = None
        if category is not None and category.strip():
            try:
                cats = [parse_category(category)]
            except ValueError:
                raise BadToolCall(f"unknown category {category!r}; use one of {CATEGORY_NAMES}") from None
        doc_ids = [self._paper(run, doc_id).doc_id] if doc_id else None
        result = self.engine.search(query, SearchFilter(doc_ids=doc_ids, categories=cats), k)
        run.add_generated(result.generated, result.notes)
        hits = result.chunks
        if not hits:
            scope = " in that paper" if doc_id else ""
            under = " under " + cats[0].name if cats else ""
            return f"No passage found{scope}{under}. Try other words or no category.", []
        shown = run.remember(hits)
        return "\n\n".join(_show(run, h) for h in hits), shown

    def get_context_window(
        self, run: RunState, doc_id: str, chunk_index: int, window: int = 1
    ) -> tuple[str, list[str]]:
        """Read the passages around one passage of a paper, in order: chunk_index-window .. chunk_index+window.

        Use it when a passage is cut off or you need what comes just before or after it.
        """
        paper = self._paper(run, doc_id)
        if chunk_index >= paper.n_chunks:
            raise BadToolCall(
                f"chunk_index {chunk_index} is past the end: this paper has chunks 0..{paper.n_chunks - 1}"
            )
        chunks = self.engine.window(paper.doc_id, chunk_index, window)
        shown = run.remember(chunks)
        return "\n\n".join(_show(run, c, with_score=False) for c in chunks), shown

    def get_paper_introduction(self, run: RunState, doc_id: str) -> tuple[str, list[str]]:
        """Read the beginning of a paper's Introduction (about 500 tokens): its problem, motivation, contributions.

        Use it for background on one paper.
        """
        paper = self._paper(run, doc_id)
        chunks = self.engine.introduction(paper.doc_id)
        # A summary written at ingest (`--enrich summaries`) comes first; it is no passage, so it is not citable.
        summary = self.engine.summary(paper.doc_id) if "summaries" in paper.enrichments else ""
        head = f"Summary of {paper.title} (written at ingest by a language model; cite the passages below, not this):"
        lead = [f"{head}\n{summary}"] if summary else []
        if not chunks:
            return "\n\n".join([*lead, f"{paper.title} has no Introduction or Abstract in the store."]), []
        shown = run.remember(chunks)
        return "\n\n".join([*lead, *(_show(run, c, with_score=False) for c in chunks)]), shown

    def finish(self, run: RunState, answer: str, sources: list[str]) -> tuple[str, list[str]]:
        """Give the final answer and stop.

        `answer` cites the passages it uses inline by their ids, e.g. [P1:12]; `sources` lists those ids.
        Cite only ids shown in tool results of this conversation. If the papers do not answer the
        question, say so in `answer` and give the closest sources you found (or none).
        """
        return "Answer recorded.", []

    # --- binding -----------------------------------------------------------------------------------------

    def tools(self) -> list[BaseTool]:
        """The tools as LangChain tools for a ToolNode, which injects the run's state (see `_bound`)."""
        specs: list[tuple[Callable[..., tuple[str, list[str]]], type[BaseModel]]] = [
            (self.search_abstracts, SearchAbstractsArgs),
            (self.search_by_section, SearchBySectionArgs),
            (self.get_context_window, ContextWindowArgs),
            (self.get_paper_introduction, IntroductionArgs),
            (self.finish, FinishArgs),
        ]
        return [
            StructuredTool.from_function(
                func=_bound(fn),
                name=fn.__name__,
                description=inspect.cleandoc(fn.__doc__ or ""),
                args_schema=schema,
                infer_schema=False,
                response_format="content_and_artifact",
            )
            for fn, schema in specs
        ]


def _bound(fn: Callable[..., tuple[str, list[str]]]) -> Callable[..., tuple[str, list[str]]]:
    # `runtime` is no field of the tool's args_schema, so the model is never told of it; the ToolNode finds it
    # by its name and type in this signature and passes the ToolRuntime, whose context is the run's state.
    def run(runtime: ToolRuntime[RunState, Any], **kwargs: Any) -> tuple[str, list[str]]:
        return fn(runtime.context, **kwargs)

    run.__name__ = fn.__name__
    return run


def _show(run: RunState, c: StoredChunk, *, with_score: bool = True) -> str:
    return format_chunk(c, run.labels.short(c.citation), with_score=with_score)


def tool_error(e: Exception) -> str:
    """ToolNode's error handler: one line for the model on bad arguments; anything else is re-raised."""
    if isinstance(e, BadToolCall):
        return f"error: {e}"
    if isinstance(e, ToolInvocationError):
        cause = e.source
        detail = "invalid arguments"
        if isinstance(cause, ValidationError) and cause.errors():
            first = cause.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "arguments"
            detail = f"{where}: {first['msg']}"
        return f"error: {e.tool_name}: {detail}"
    raise e


def call_args(run: RunState, tool: BaseTool, args: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as the trace shows them: as the tool receives them (validated, defaults filled in),
    or as the model wrote them when they do not validate."""
    schema = tool.args_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return run.shown_args(schema.model_validate(dict(args)).model_dump())
        except ValidationError:
            pass
    return run.shown_args(args)


def call_step(run: RunState, name: str, args: dict[str, Any], message: ToolMessage, seconds: float) -> TraceStep:
    """The trace step of a call to a known tool, from the ToolMessage the ToolNode made of it."""
    if message.status == "error":
        return TraceStep(tool=name, args=args, observation=str(message.content), seconds=seconds, error=True)
    # The trace leaves the run: it shows doc_ids, not this run's labels.
    observation = shorten(run.labels.expand(str(message.content)), OBSERVATION_CHARS)
    results = [str(c) for c in message.artifact or []]
    return TraceStep(tool=name, args=args, observation=observation, seconds=seconds, results=results)


def brief_declarations(tools: Sequence[BaseTool]) -> list[dict[str, Any]]:
    """The tools as OpenAI tool declarations for a small model: each described by its first sentence, its
    arguments by type, default and description only (no length or range limits: the tools still check them).

    The full declarations are most of a small model's prompt (about 1,100 of 1,900 tokens with 12 papers).
    """
    out = []
    for t in tools:
        schema = convert_to_openai_tool(t)["function"]
        params = schema.get("parameters", {})
        props = {name: _brief_property(p) for name, p in params.get("properties", {}).items()}
        brief = {"type": "object", "properties": props, "required": params.get("required", [])}
        function = {"name": t.name, "description": _first_sentence(t.description), "parameters": brief}
        out.append({"type": "function", "function": function})
    return out


def _brief_property(prop: dict[str, Any]) -> dict[str, Any]:
    kinds = [p.get("type") for p in prop.get("anyOf", [])] if "anyOf" in prop else [prop.get("type")]
    kept: dict[str, Any] = {"type": next((k for k in kinds if k and k != "null"), "string")}
    if "items" in prop:
        kept["items"] = {"type": prop["items"].get("type", "string")}
    if prop.get("default") is not None:
        kept["default"] = prop["default"]
    if "description" in prop:
        kept["description"] = prop["description"]
    return kept


def _first_sentence(doc: str) -> str:
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return re.split(r"(?<=[^.])\.\s+(?=[A-Z])", first, maxsplit=1)[0].rstrip(".") + "."
