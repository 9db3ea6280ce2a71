"""What the CLI and the HTTP service both do over an open store: retrieve, answer, list the papers.

A request's options (`RetrieveRequest`, `AskRequest`: pydantic models, an unknown option refused) become the
request settings layer in one place (`settings_request`), so `paperscope retrieve Q --k 3` and `POST /v1/retrieve
{"query": Q, "k": 3}` build the same Settings (request > knowledge base > user file > environment > defaults) and
`retrieve` / `answer` run them the same way; `paper_rows` is the list `papers --json` prints and `GET
/v1/documents` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .config import KB_PATTERN
from .errors import ConfigError, UnknownPaper

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from .agent.pipeline import Progress, Searcher
    from .agent.searcher import AgenticSearcher
    from .answer.model import Answer, TraceStep
    from .cancellation import Cancellation
    from .config import Settings
    from .rag.retrieval import Retrieval
    from .rag.store import PaperRecord, PaperStore

MIN_PREFIX = 4  # doc_id characters a prefix needs, like a short git hash
MAX_QUERY_CHARS = 4000


def check_doc_id(given: str, option: str = "") -> str:
    """A doc_id or prefix as typed: well formed and at least MIN_PREFIX characters; ConfigError else.

    `option` starts the message ("--paper: "), naming where the value was given.
    """
    from .rag.filters import validate_doc_id

    try:
        validate_doc_id(given)
    except ValueError as exc:
        raise ConfigError(f"{option}{exc}") from None
    if len(given) < MIN_PREFIX:
        raise ConfigError(
            f"{option}doc_id prefix {given!r} is too short: give at least {MIN_PREFIX} characters "
            "(see `paperscope papers`)"
        )
    return given


def matching_doc_ids(doc_ids: Iterable[str], given: str) -> list[str]:
    """The doc_id equal to `given`, else those it is a prefix of (4+ characters, like a short git hash)."""
    doc_ids = list(doc_ids)
    if given in doc_ids:
        return [given]
    return [d for d in doc_ids if len(given) >= MIN_PREFIX and d.startswith(given)]


def resolve_papers(store: PaperStore, given: Sequence[str], kb: str, option: str = "--paper") -> list[str]:
    """Full doc_ids of ready papers for the doc_ids or unambiguous prefixes given; UnknownPaper else."""
    papers = [p.doc_id for p in store.list_papers(brief=True) if p.ready]
    out = []
    for raw in given:
        check_doc_id(raw, f"{option}: ")
        matches = matching_doc_ids(papers, raw)
        if len(matches) != 1:
            problem = "matches several papers" if matches else f"is not a paper in knowledge base {kb!r}"
            raise UnknownPaper(f"{option} {raw} {problem} (see `paperscope papers`)")
        out.append(matches[0])
    return out


def in_collection(collections: Sequence[str], name: str) -> bool:
    """True when an item filed in `collections` (paths "Thesis/Chapter 2") is in collection `name` or one below it."""
    want = name.strip().strip("/").casefold()
    return any(c.casefold() == want or c.casefold().startswith(want + "/") for c in collections)


def scope_doc_ids(
    store: PaperStore, request: QueryOptions, kb: str, options: tuple[str, str] = ("--paper", "--collection")
) -> list[str] | None:
    """The papers a request keeps to: those it names (`paper`), within its collection (`collection`, with the
    collections below it); None when it names neither. A collection that holds no ready paper is an UnknownPaper
    naming the collections there are. `options`: what the paper and collection options are called where they were
    given, to start messages with."""
    doc_ids = resolve_papers(store, request.paper, kb, options[0]) if request.paper else None
    if not request.collection:
        return doc_ids
    papers = [p for p in store.catalogue().ready if in_collection(p.meta.collections, request.collection)]
    held = [p.doc_id for p in papers if doc_ids is None or p.doc_id in doc_ids]
    if not held:
        known = sorted({c for p in store.catalogue().ready for c in p.meta.collections})
        listed = f"collections: {', '.join(known)}" if known else "no paper is filed in a collection"
        within = " among the papers named" if papers else ""
        raise UnknownPaper(
            f"--collection {request.collection!r} holds no paper{within} in knowledge base {kb!r} ({listed})"
        )
    return held


def validation_message(errors: Sequence[Any]) -> str:
    """Pydantic's errors as one line naming each field at fault: `k: Input should be less than or equal to 50`."""
    parts: list[str] = []
    for error in list(errors)[:3]:
        loc = [str(p) for p in error.get("loc", ())]
        # FastAPI puts where it found the value first ("body", "query", ...); a model validated directly does not,
        # and its own field may be called "query".
        if len(loc) > 1 and loc[0] in ("body", "query", "path", "header", "cookie"):
            loc = loc[1:]
        field = ".".join(loc) or "body"
        if error.get("type") == "extra_forbidden":
            parts.append(f"unknown option {field!r}")
            continue
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "missing":
            message = "required"
        parts.append(f"{field}: {message}")
    more = len(errors) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# --- the options of a question -------------------------------------------------------------------------------


class QueryOptions(BaseModel):
    """What a retrieve or a question may say besides the question itself; every field optional."""

    model_config = ConfigDict(extra="forbid")

    kb: str | None = Field(None, pattern=KB_PATTERN, description="Knowledge base (default: the server's --kb).")
    k: int | None = Field(None, ge=1, le=50, description="Passages to return or draw on (default retrieval.k).")
    paper: list[str] | None = Field(
        None, max_length=50, description="Only these papers: doc_ids or prefixes of 4+ characters; several compared."
    )
    section: list[str] | None = Field(
        None, max_length=10, description="Only these section categories, e.g. METHOD, EVALUATION."
    )
    collection: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description='Only the papers filed in this library collection and those below it ("Thesis/Chapter 2").',
    )
    retriever: str | None = Field(
        None,
        max_length=200,
        description="Retriever spec, name[:argument] (`paperscope operators` lists the retrievers and their forms).",
    )
    rerank: str | None = Field(
        None, max_length=500, description="Reranker spec (`paperscope operators` lists the rerankers and their forms)."
    )
    transform: list[str] | None = Field(
        None, max_length=10, description="Query transforms by name (see `paperscope operators`)."
    )

    @field_validator("paper")
    @classmethod
    def _papers(cls, value: list[str] | None) -> list[str] | None:
        for raw in value or []:
            try:
                check_doc_id(raw)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("section")
    @classmethod
    def _sections(cls, value: list[str] | None) -> list[str] | None:
        from .rag.filters import parse_category

        return [parse_category(raw).name for raw in value] if value else value

    @field_validator("retriever", "rerank", "transform")
    @classmethod
    def _operators(cls, value: str | list[str] | None, info: ValidationInfo) -> str | list[str] | None:
        """Each spec checked against the registry (a retriever built, which searches nothing)."""
        from .rag.operator_settings import check_spec, specs

        kind = {"retriever": "retriever", "rerank": "reranker", "transform": "transform"}[str(info.field_name)]
        for spec in specs(value):
            try:
                check_spec(kind, spec)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def scoped(self) -> bool:
        """True when the request fixes papers, a collection, sections or k: hard limits only the single-shot path
        keeps."""
        return bool(self.paper or self.collection or self.section or self.k)


def _question(value: str) -> str:
    from .rag.question import check_question

    return check_question(value)


class RetrieveRequest(QueryOptions):
    """`paperscope retrieve` and POST /v1/retrieve."""

    query: str = Field(max_length=MAX_QUERY_CHARS, description="The question.")

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return _question(value)


class AskRequest(QueryOptions):
    """`paperscope ask` and a question of POST /v1/chat."""

    query: str = Field(max_length=MAX_QUERY_CHARS, description="The question.")
    no_agent: bool = Field(False, description="Single-shot retrieval even when an LLM is configured.")
    reflect: bool | None = Field(
        None, description="Score the answer with the chat model and retry below reflection.min_score."
    )

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return _question(value)

    @property
    def single_shot(self) -> bool:
        """True when the request asks for the single-shot path: `no_agent`, or `scoped`."""
        return self.no_agent or self.scoped


def settings_request(options: QueryOptions) -> dict[str, Any]:
    """The request settings layer of these options (None = not given), for `load_layers(request=...)`."""
    retrieval: dict[str, Any] = {
        "k": options.k,
        "retriever": options.retriever,
        "rerank": options.rerank,
        "transforms": options.transform,
    }
    layer: dict[str, Any] = {"store": {"kb": options.kb}, "retrieval": retrieval}
    if isinstance(options, AskRequest):
        layer["reflection"] = {"enabled": options.reflect}
        # A single-shot request is single-shot in its settings too, so that everything shown says so.
        layer["agent"] = {"enable_agentic_rag": False if options.single_shot else None}
    return layer


# --- running them --------------------------------------------------------------------------------------------


def needs_model(settings: Settings) -> bool:
    """True when a retrieve with these settings calls the chat model (the llm reranker, query transforms)."""
    return settings.retrieval.rerank == "llm" or bool(settings.retrieval.transforms)


def retrieve(
    store: PaperStore, settings: Settings, request: RetrieveRequest, *, cancel: Cancellation | None = None
) -> Retrieval:
    """The ranked evidence for a question, routed as `ask` routes it (`paperscope retrieve`, POST /v1/retrieve).
    `cancel` stops its model calls once set."""
    from .llm.client import make_chat_model, question_scope
    from .rag.engine import Engine
    from .rag.filters import SearchFilter

    doc_ids = scope_doc_ids(store, request, settings.store.kb)
    chat_model = make_chat_model(settings.llm, cancel) if needs_model(settings) else None
    if needs_model(settings) and chat_model is None:
        wants = "--rerank llm needs" if settings.retrieval.rerank == "llm" else "query transforms need"
        raise ConfigError(f"{wants} a chat model: set PAPERSCOPE_LLM_MODEL and OPENAI_BASE_URL")
    engine = Engine(store, settings, chat_model)
    scope = SearchFilter(doc_ids=doc_ids, categories=request.section or None)
    with question_scope(chat_model):  # the transforms' calls share the question's budget
        return engine.retrieve(request.query, scope, settings.retrieval.k)


def answer(
    store: PaperStore,
    settings: Settings,
    request: AskRequest,
    *,
    history: Sequence[Answer] | None = None,
    on_token: Callable[[str], None] | None = None,
    on_step: Callable[[TraceStep], None] | None = None,
    on_progress: Progress | None = None,
    cancel: Cancellation | None = None,
) -> Answer:
    """Answer a question: the agent when an LLM is configured, unless the request is single-shot (`no_agent`,
    or papers, sections or k fixed: hard limits the agent could not be held to).

    `on_token` receives the answer text as it is written, `on_step` each tool call of the agent as it ends,
    `on_progress` (stage, detail) of the single-shot path; `cancel` stops the model calls once set (a client that
    went away).
    """
    asking = Asking(store, settings, cancel=cancel, on_step=on_step, on_progress=on_progress)
    return asking.ask(request, history=history, on_token=on_token)


class Asking:
    """Questions over one open knowledge base with settings built once, the chat model made once: what `ask`, the
    service, the chat loop and `eval` all answer through (`run` is the chat loop's and eval's entry point)."""

    def __init__(
        self,
        store: PaperStore,
        settings: Settings,
        *,
        chat_model: BaseChatModel | None = None,
        cancel: Cancellation | None = None,
        on_step: Callable[[TraceStep], None] | None = None,
        on_progress: Progress | None = None,
        collection: str | None = None,
    ) -> None:
        """`chat_model`: the configured one (`llm`) unless given; `cancel` stops its calls once set; `collection`:
        every question `run` answers keeps to that library collection (single-shot, as every fixed scope)."""
        from .llm.client import make_chat_model

        self.collection = collection
        self.store = store
        self.settings = settings
        self.chat_model = chat_model if chat_model is not None else make_chat_model(settings.llm, cancel)
        self.on_step = on_step
        self.on_progress = on_progress
        # Made on first use and kept: their caches (the paper locator, the LLM router) serve the next question.
        self._single: Searcher | None = None
        self._agent: AgenticSearcher | None = None

    @property
    def mode(self) -> str:
        """How questions are answered, in words (the chat loop's header, eval's report)."""
        from .agent.mode import mode_of

        return mode_of(self.settings)

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        """Answer `query` with nothing fixed but the settings (the chat loop's and eval's questions)."""
        # Not validated as a request body: the searcher checks the question itself, as it does for Python callers.
        request = AskRequest.model_construct(query=query, collection=self.collection)
        return self.ask(request, history=history, on_token=on_token)

    def ask(
        self,
        request: AskRequest,
        *,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        """Answer a request: by the agent or the single-shot path, as `agent.mode.uses_agent` decides."""
        from .agent.mode import uses_agent

        if uses_agent(self.settings, self.chat_model is not None, single_shot=request.single_shot):
            if self._agent is None:
                from .agent.searcher import AgenticSearcher  # the agent's graph (langgraph) only when it runs

                self._agent = AgenticSearcher(self.store, self.chat_model, settings=self.settings, on_step=self.on_step)
            if self.on_progress is not None:
                self.on_progress("searching", f"the agent searches with {self.settings.llm.model}")
            return self._agent.run(request.query, history=history, on_token=on_token)
        if self._single is None:
            from .agent.pipeline import Searcher

            self._single = Searcher(self.store, self.settings, self.chat_model)
        doc_ids = scope_doc_ids(self.store, request, self.settings.store.kb)
        return self._single.answer(
            request.query,
            doc_ids=doc_ids,
            categories=request.section,
            k=request.k,
            history=history,
            on_token=on_token,
            on_progress=self.on_progress,
        )


# --- the papers list -----------------------------------------------------------------------------------------


def paper_rows(records: Iterable[PaperRecord], damaged: Mapping[str, int]) -> list[dict[str, Any]]:
    """The papers as `paperscope papers --json` lists them; `damaged`: {doc_id: chunks stored} of papers listed as
    ready whose chunks are not all stored (their status says "damaged").

    `n_chunks` is the body chunks stored. Of a paper not whole (damaged, or not ready: an interrupted ingest),
    `planned_chunks` is what its catalogue row lists; it is None for the others, and for a paper not ready whose
    chunks were not counted (`list_papers(brief=True)`), whose n_chunks is then the listed count.
    """
    rows = []
    for r in records:
        stored = damaged.get(r.doc_id) if r.ready else r.stored_chunks
        rows.append(
            {
                "doc_id": r.doc_id,
                "title": r.title,
                "year": r.year,
                "pages": r.pages,
                "n_chunks": r.n_chunks if stored is None else stored,
                "planned_chunks": None if stored is None else r.n_chunks,
                # A paper listed as ready whose chunks are not all stored is "damaged" (see `check --repair`).
                "status": "damaged" if r.doc_id in damaged else r.status,
                "source": r.source,
                "authors": r.authors,
                # What its library (Zotero, a .bib file, arXiv, a DOI) and the PDF say of it.
                "venue": r.meta.venue,
                "doi": r.meta.doi,
                "arxiv_id": r.meta.arxiv_id,
                "citation_key": r.meta.citation_key,
                "collections": r.meta.collections,
                "tags": r.meta.tags,
                "library": r.meta.origin,
                # What people call it (short title, names it introduces, authors, ids): what paper location matches.
                "aliases": [a.text for a in r.aliases if a.kind not in ("title", "year", "body", "mention")],
                # What the chat model added to its index at ingest (`ingest --enrich`), in the order they ran.
                "enrichments": r.enrichments,
            }
        )
    return rows
