"""One Settings object, built from nested parts, in layers: request > knowledge base > user file > env > defaults.

The layers are put together by `settings_layers.load_layers` (`load_settings` returns its Settings); the
user file is `$PAPERSCOPE_HOME/config.toml` (settings_layers.py), a knowledge base's own settings live in
the knowledge base (rag/kb_settings.py). This module holds the Settings model and reads the environment.

Environment: PAPERSCOPE_HOME, MILVUS_URI, MILVUS_TOKEN, OPENAI_BASE_URL, OPENAI_API_KEY,
PAPERSCOPE_LLM_MODEL and PAPERSCOPE_API_KEY by their usual names; any other field as
PAPERSCOPE_<PART>__<FIELD> (e.g. PAPERSCOPE_CHUNKING__CHUNK_SIZE=180).

The environment layer turns every way the environment can be wrong into one ConfigError line naming the
variable (malformed JSON, a bad value, an unknown nested field with the closest valid name, a data
directory that cannot be one) and warns about unknown PAPERSCOPE_* variables, which would otherwise be
ignored without a word.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from .backend_logs import LOG_ENV
from .errors import ConfigError

log = logging.getLogger(__name__)
ENV_PREFIX = "PAPERSCOPE_"
# Read by load_settings itself rather than by the Settings model, or before settings exist (backend_logs.py).
# PAPERSCOPE_SERVER is read by the CLI (`--server`), not a setting.
_OWN_ENV = ("PAPERSCOPE_LLM_MODEL", "PAPERSCOPE_API_KEY", "PAPERSCOPE_SERVER", LOG_ENV)


#: A knowledge base's name: it starts Milvus collection names (`{kb}_chunks`, `{kb}_papers`).
KB_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,47}$"


class _Part(BaseModel):
    # Frozen: settings are built once from their layers and never rewritten; a change is a new Settings
    # (`with_overrides`), so what a request ran with is what its layers say.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParsingSettings(_Part):
    use_outline: bool = Field(
        True, description="Use the PDF outline (bookmarks) for headings when it matches the text."
    )
    # The defaults are the parser's own (parser/pdf.py MAX_PAGES, parser/markdown.py MAX_TEXT_BYTES).
    max_pages: int = Field(500, ge=1, description="Most pages a PDF may have; a longer one fails.")
    max_text_bytes: int = Field(
        20_000_000, ge=1, description="Largest Markdown or text file read, in bytes (20 MB); a larger one fails."
    )
    # The limits below bound what one hostile PDF can cost (parser/page_cost.py, parser/bounded.py).
    max_page_glyphs: int = Field(
        400_000,
        ge=1_000,
        description="Most glyphs one PDF page may show (a dense page of a paper shows ~10,000); a page with more "
        "fails its file before it is read.",
    )
    max_page_paths: int = Field(
        200_000,
        ge=0,
        description="Path operators past which a page's drawings are not read (its figures and table rules are not "
        "looked for; its text is).",
    )
    max_memory_mb: int = Field(
        2048, ge=256, description="Memory the process that reads a PDF may use, in MB; a file that needs more fails."
    )
    page_seconds: float = Field(
        60.0, gt=0, description="Seconds reading one PDF page may take; a file with a slower page fails."
    )
    isolate: bool = Field(
        True,
        description="Read PDFs in a worker process, where the memory and time limits hold (off: in-process, for "
        "debugging; a hostile file can then exhaust memory or hang).",
    )


class ChunkingSettings(_Part):
    strategy: str = Field(
        "recursive",
        description="Chunker by name: one of the chunkers `paperscope operators` lists (semantic needs the embedding "
        "model; parent_child serves the parent_document retriever). Checked when a paper is chunked.",
    )
    chunk_size: int = Field(200, ge=16, le=8192, description="Target chunk size in embedding-model tokens.")
    overlap: int = Field(32, ge=0, le=1024, description="Tokens repeated when a paragraph is split across chunks.")
    parent_size: int = Field(2000, ge=64, description="parent_child: parent size in tokens.")
    child_size: int = Field(300, ge=16, description="parent_child: child size in tokens (capped by the model window).")
    breakpoint_percentile: float = Field(
        90.0,
        ge=0.0,
        le=100.0,
        description="semantic: cut where neighbouring sentences are further apart (by embedding) than this "
        "percentile of the paper's neighbours (higher = fewer, larger chunks).",
    )


class EmbeddingSettings(_Part):
    model: str = Field(
        "local:int8",
        description='"local:int8" (all-MiniLM-L6-v2 with its matrix products in int8, offline: 1.8x faster than '
        '"local", 0.993 cosine to its vectors, the same dev-set scores), "local" (the model as published), '
        '"sentence-transformers:<name-or-path>" or "openai:<model>". Kept by each knowledge base from its creation.',
    )
    batch_size: int = Field(64, ge=1, le=4096, description="Texts embedded per batch.")
    runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="How a local sentence-transformers model embeds questions and chunks: onnx (ONNX Runtime, "
        "exported once to ~/.cache/paperscope/onnx; same vectors, starts without torch, chunks 1.5x faster) or torch.",
    )


class StoreSettings(_Part):
    uri: str | None = Field(None, description="Milvus URI; unset = Milvus Lite file under the data directory.")
    token: str | None = Field(None, description="Milvus token (user:password) for a server.")
    kb: str = Field("papers", pattern=KB_PATTERN, description="Knowledge base name.")


class RetrievalSettings(_Part):
    retriever: str = Field(
        "bm25",
        description="Retriever spec, name[:argument]: one of the retrievers `paperscope operators` lists, with its "
        "form there (bm25, the default, is best on real papers); an unknown name is refused naming the known ones.",
    )
    hybrid_fusion: Literal["rrf", "weighted"] = Field(
        "rrf", description="How `hybrid` fuses dense and BM25: reciprocal rank (rrf) or weighted scores."
    )
    dense_weight: float = Field(0.7, ge=0.0, le=1.0, description="Weight of the dense ranking in weighted fusion.")
    sparse_weight: float = Field(0.3, ge=0.0, le=1.0, description="Weight of the BM25 ranking in weighted fusion.")
    rrf_k: int = Field(60, ge=1, le=1000, description="RRF constant: a hit scores 1 / (rrf_k + rank) per ranking.")
    ensemble: str = Field(
        "bm25=0.5,dense=0.5",
        description="Members of the `ensemble` retriever when its spec names none: name=weight,...",
    )
    rerank: str | None = Field(
        None,
        description="Reranker spec: one of the rerankers `paperscope operators` lists, in its form there (a local "
        "cross-encoder, an HTTP rerank endpoint, the chat model); unset = no reranking (no reranker weights ship "
        "offline).",
    )
    rerank_windows: bool = Field(
        False, description="Rerank each candidate with its neighbouring chunks (its context window) as one text."
    )
    k: int = Field(5, ge=1, le=50, description="Evidence passages an answer draws on.")
    candidates: int = Field(20, ge=1, le=200, description="Hits fetched before ranking and MMR pick the final k.")
    mmr_lambda: float = Field(
        0.85, ge=0.0, le=1.0, description="MMR trade-off over the ranked hits: 1 = ranking only, 0 = diversity only."
    )
    window: int = Field(1, ge=0, le=5, description="Neighbouring chunks added on each side of a hit.")
    token_budget: int = Field(1500, ge=64, description="Tokens of evidence text (windows included) per answer.")
    intro_tokens: int = Field(500, ge=0, description="Tokens of a paper's Introduction injected as context (0 = none).")
    survey_papers: int = Field(5, ge=1, le=50, description="Track B: papers that give passages (at least k).")
    raptor_beam: int = Field(
        3, ge=1, le=20, description="raptor:tree retriever: summary nodes kept at each level on the way down."
    )
    per_paper: int = Field(
        2,
        ge=1,
        le=20,
        description="Track B over papers the question names: passages per paper (else 1; 3 to a leader).",
    )
    transforms: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Query transforms with the chat model, comma-separated: transforms `paperscope operators` lists "
        "(none by default: each costs a model call per question; see docs/transforms.md).",
    )
    transform_queries: int = Field(3, ge=1, le=10, description="rewrite, multi-query: most queries the model writes.")
    transform_max_tokens: int = Field(
        256, ge=16, le=4096, description="Most tokens of a transform's reply (the model's llm.max_tokens caps it too)."
    )
    hyde_trigger: Literal["always", "weak"] = Field(
        "always",
        description="hyde: write the passage for every question, or only when the question's own search covers few "
        "of its words (weak).",
    )
    locate_dense: bool = Field(
        True,
        description="Locate the paper a question describes by its embedding too (title and abstract vectors), not "
        "only by names and BM25; off, a BM25-only question never loads the embedding model (a faster start, "
        "weaker on questions that describe a paper without naming it).",
    )
    hyde_retriever: str = Field(
        "dense", description="hyde: the retriever spec that searches the hypothetical passage (as `retriever`)."
    )

    @field_validator("transforms", mode="before")
    @classmethod
    def _transform_names(cls, value: Any) -> Any:
        """ "hyde, multi-query" or ["hyde"]: names, each once, in the order given (rag checks them against the
        registry: rag.operator_settings)."""
        if value is None:
            return []
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError(f"not a JSON list: {value[:60]!r}") from None
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ValueError("give transform names as a list or comma-separated")
        names = [str(n).strip().lower().replace("_", "-") for n in items if str(n).strip()]
        return list(dict.fromkeys(names))


class LLMSettings(_Part):
    model: str | None = Field(None, description="Chat model (PAPERSCOPE_LLM_MODEL); unset = answer without an LLM.")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (OPENAI_BASE_URL), e.g. vLLM or Ollama.")
    api_key: SecretStr | None = Field(None, description="API key (OPENAI_API_KEY); local servers accept any value.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(
        512, ge=16, le=65536, description="Most tokens the model writes in one reply (512: a minute of a slow model)."
    )
    timeout: float = Field(
        60.0, gt=0, description="Seconds one request may take: no byte for this long, or a longer stream, fails it."
    )
    question_budget: float = Field(
        180.0, gt=0, description="Seconds from a question's start within which its model calls must end; then no more."
    )
    retries: int = Field(2, ge=0, le=10, description="Retries of a request after a connection error or an HTTP 5xx.")
    backoff: float = Field(1.0, ge=0.0, le=60.0, description="Seconds before the first retry; doubled for each next.")
    context_length: int | None = Field(
        None, ge=512, description="The endpoint's context window in tokens; unset = what `paperscope doctor` found."
    )
    use_for_routing: bool = Field(True, description="Route questions with the LLM (rule router when False or no LLM).")


class EnrichmentSettings(_Part):
    # NoDecode: the environment gives "contextual,questions" as it is (else read as JSON), split below.
    strategies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Index-time enrichment with the chat model (`ingest --enrich`): enrichers `paperscope operators` "
        "lists, comma-separated or a list; empty = none (the default).",
    )
    concurrency: int = Field(2, ge=1, le=64, description="Model calls in flight at once while enriching a paper.")
    requests_per_second: float | None = Field(
        None, gt=0, description="Most model calls started per second while enriching; unset = no limit."
    )
    questions: int = Field(4, ge=3, le=5, description="questions: how many questions to ask for each chunk (3-5).")
    whole_document_tokens: int = Field(
        3000,
        ge=256,
        description="contextual: a document up to this many tokens is the context of each chunk as it is; a longer "
        "one is summarised first (a document summary and section summaries).",
    )
    max_input_tokens: int = Field(
        2500, ge=256, description="Most tokens of paper text put in one prompt; longer inputs are cut."
    )
    raptor_depth: int = Field(3, ge=1, le=8, description="raptor: most levels of summaries above the chunks.")
    raptor_cluster_size: int = Field(
        6, ge=2, le=50, description="raptor: chunks (or summaries) per cluster aimed at; a level has n/size clusters."
    )
    raptor_clustering: Literal["gmm", "kmeans"] = Field(
        "gmm", description="raptor: Gaussian mixture (as in the RAPTOR paper) or k-means over the vectors."
    )

    @field_validator("strategies", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """ "contextual,questions" (a flag or an environment variable) as a list; "none" or "" as none."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    return json.loads(text)
                except ValueError as exc:
                    raise ValueError(f"not a JSON list ({exc}); give names separated by commas") from None
            value = [] if text.lower() in ("", "none") else text.split(",")
        return value

    @field_validator("strategies")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        """Each name once, in the order given (rag checks them against the registry: rag.operator_settings)."""
        return list(dict.fromkeys(v.strip() for v in value if v.strip()))


class AgentSettings(_Part):
    enable_agentic_rag: bool = Field(True, description="Use the agent when an LLM is configured; else single-shot.")
    max_iterations: int = Field(5, ge=1, le=50, description="Model turns before the agent must answer.")
    prompt: Literal["auto", "full", "compact"] = Field(
        "auto",
        description="System prompt: full, compact (for small models and short contexts), or auto: compact when "
        "the endpoint's context length is known and under 16k tokens.",
    )


class ReflectionSettings(_Part):
    enabled: bool = Field(
        False, description="Score each answer with the chat model and the grounding check; retry below min_score."
    )
    max_rounds: int = Field(3, ge=1, le=10, description="Answers written at most (the first included).")
    min_score: float = Field(7.0, ge=1.0, le=10.0, description="Overall score (1-10) an answer needs to stand.")
    retry: Literal["expand", "rewrite", "both"] = Field(
        "both",
        description="How a weak answer is retried: expand (more passages, wider windows), rewrite (the model rewrites "
        "the search from what the answer missed) or both.",
    )


class ServiceSettings(_Part):
    host: str = Field(
        "127.0.0.1", description="Address `paperscope serve` listens on; other than loopback it needs service.api_key."
    )
    port: int = Field(8000, ge=0, le=65535, description="Port `paperscope serve` listens on (0: any free port).")
    api_key: SecretStr | None = Field(
        None,
        description="Bearer key every /v1 route of the server asks for (PAPERSCOPE_API_KEY); unset = none (loopback "
        "only). A server on another address needs one of 16 characters or more.",
    )
    # NoDecode: the environment gives "a.example,b.example" as it is (else read as JSON), split below.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names the server answers to besides its own address (on loopback: localhost, 127.0.0.1, "
        "::1), e.g. the name a reverse proxy forwards; comma-separated or a list. Other names are refused (DNS "
        "rebinding).",
    )
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Web origins (scheme://host[:port]) whose pages may call the API from a browser besides the "
        "server's own page; comma-separated or a list. Browser requests from other sites are refused.",
    )
    max_upload_mb: float = Field(50.0, gt=0, le=4096, description="Largest file the server takes in an upload, in MB.")
    max_body_mb: float = Field(
        4.0, gt=0, le=1024, description="Largest request body other than an upload, in MB (refused before it is read)."
    )
    uploads: Path | None = Field(
        None, description="Where the server keeps uploaded files (<sha256>/<name>); unset = $PAPERSCOPE_HOME/uploads."
    )
    workers: int = Field(
        8,
        ge=1,
        le=64,
        description="Questions (chats, and retrieves that call the model) the server answers at once; more wait "
        "their turn.",
    )
    read_workers: int = Field(
        4,
        ge=1,
        le=64,
        description="Reads (the papers list, chunks, retrieves without a model, removals) served at once, apart "
        "from questions: a slow model never holds them up.",
    )
    render_workers: int = Field(
        2, ge=1, le=16, description="Page images drawn at once, each in a worker process of its own."
    )
    render_seconds: float = Field(
        20.0, gt=0, le=600, description="Seconds drawing one page image may take; a slower page is refused (422)."
    )
    render_memory_mb: int = Field(
        1024, ge=256, description="Memory one page-drawing process may use, in MB; a page that needs more is refused."
    )

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value


class SourcesSettings(_Part):
    arxiv_url: str = Field(
        "https://arxiv.org", description="Base URL PDFs of arXiv ids are fetched from (<arxiv_url>/pdf/<id>)."
    )
    arxiv_api_url: str = Field(
        "https://export.arxiv.org/api/query",
        description="arXiv's Atom API, asked for an id's title, authors and date (?id_list=<id>).",
    )
    doi_resolver: str = Field(
        "https://doi.org", description="DOI resolver: <doi_resolver>/<doi> leads to the publisher's landing page."
    )
    zotero_dir: Path | None = Field(
        None, description="Zotero data directory for `ingest --zotero` without a path; unset = ~/Zotero."
    )
    downloads: Path | None = Field(
        None, description="Where downloaded PDFs are kept (<sha256>.pdf); unset = $PAPERSCOPE_HOME/downloads."
    )
    timeout_s: float = Field(30.0, gt=0, le=600, description="Seconds one download may take, all redirects included.")
    max_download_mb: float = Field(
        100.0, gt=0, le=4096, description="Largest PDF downloaded, in MB; a larger is refused."
    )


class Settings(BaseSettings):
    """Everything paperscope can be told, in one place."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", populate_by_name=True, frozen=True
    )

    home: Path = Field(Path(".paperscope"), description="Data directory (Milvus Lite file, caches).")
    parsing: ParsingSettings = Field(default_factory=ParsingSettings, description="PDF parsing.")
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings, description="Chunking.")
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings, description="Embeddings.")
    store: StoreSettings = Field(default_factory=StoreSettings, description="Milvus store.")
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description="Retrieval and context.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="Chat model (optional).")
    agent: AgentSettings = Field(default_factory=AgentSettings, description="The agent loop.")
    reflection: ReflectionSettings = Field(
        default_factory=ReflectionSettings, description="Answers scored and retried (optional; needs the chat model)."
    )
    service: ServiceSettings = Field(default_factory=ServiceSettings, description="The HTTP server (paperscope serve).")
    enrichment: EnrichmentSettings = Field(
        default_factory=EnrichmentSettings, description="Index-time enrichment with the chat model (optional)."
    )
    sources: SourcesSettings = Field(
        default_factory=SourcesSettings, description="Libraries and downloads: Zotero, arXiv, DOIs, URLs."
    )

    def with_overrides(self, **parts: dict[str, Any]) -> Settings:
        """A copy with some fields of nested parts replaced, e.g. store={"kb": "x"}; None values are ignored."""
        data = self.model_dump()
        for part, values in parts.items():
            data[part].update({k: v for k, v in values.items() if v is not None})
        return Settings.model_validate(data)


def env_names() -> list[str]:
    """Every PAPERSCOPE_* variable paperscope reads: the home, each part as JSON, each field of each part."""
    names = [*_OWN_ENV]
    for field, info in Settings.model_fields.items():
        names.append(f"{ENV_PREFIX}{field.upper()}")
        part = info.annotation
        if isinstance(part, type) and issubclass(part, BaseModel):
            names.extend(f"{ENV_PREFIX}{field.upper()}__{sub.upper()}" for sub in part.model_fields)
    return names


def closest_env_name(name: str) -> str | None:
    """The valid PAPERSCOPE_* name nearest to `name` (difflib), or None when nothing is close."""
    found = difflib.get_close_matches(name.upper(), env_names(), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_env(environ: Mapping[str, str]) -> list[str]:
    """PAPERSCOPE_* variables in `environ` that no setting reads (names compared case-insensitively).

    An unknown field of a known part (PAPERSCOPE_CHUNKING__CHUNK_SIZ) is not listed: it is an error.
    """
    known = set(env_names())
    parts = tuple(f"{ENV_PREFIX}{field.upper()}__" for field in Settings.model_fields)
    return sorted(
        k
        for k in environ
        if k.upper().startswith(ENV_PREFIX) and k.upper() not in known and not k.upper().startswith(parts)
    )


def hint(name: str) -> str:
    """'; did you mean X?' for an unknown PAPERSCOPE_* variable, or ''."""
    close = closest_env_name(name)
    return f"; did you mean {close}?" if close else ""


def env_error(exc: SettingsError) -> ConfigError:
    """A malformed PAPERSCOPE_<PART> value (pydantic-settings parses it as JSON) as one line."""
    m = re.search(r'field "(\w+)"', str(exc))
    name = f"{ENV_PREFIX}{m.group(1).upper()}" if m else f"a {ENV_PREFIX}* variable"
    cause = exc.__cause__
    why = f"not valid JSON ({cause})" if isinstance(cause, json.JSONDecodeError) else str(cause or exc)
    return ConfigError(f'{name}: {why}; expected a JSON object such as {{"k": 8}}')


def env_validation_error(exc: ValidationError, environ: Mapping[str, str]) -> ConfigError:
    """A bad PAPERSCOPE_* value or an unknown nested field (with the closest valid name) as one line."""
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"]]
    where = ".".join(loc)
    if first["type"] == "extra_forbidden":
        var = ENV_PREFIX + "__".join(p.upper() for p in loc)
        given = next((k for k in environ if k.upper() == var), None)
        if given is not None:
            return ConfigError(f"unknown setting {given}{hint(given)}")
        return ConfigError(f"unknown setting {where}")
    return ConfigError(f"invalid setting {where}: {first['msg']}")


def check_home(home: Path) -> None:
    """The data directory must be a directory or creatable as one (no file in the way)."""
    path = home.expanduser()
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == path else f"cannot be created: {p} is a file"
                raise ConfigError(f"PAPERSCOPE_HOME {home}: {what}, not a directory")
            return
