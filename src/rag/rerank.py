"""Rerank passages for a query: a cross-encoder, an HTTP rerank endpoint or the chat model, behind one interface.

Specs understood by `parse_rerank_spec` (each form a `reranker` of the operator registry, built by its factory):

- ``cross-encoder:<name-or-path>``: a sentence-transformers `CrossEncoder` from a local folder, or a model name
  already in the local Hugging Face cache; nothing is downloaded. Loaded on the first `score` call and shared by
  every reranker of the same model in the process.
- ``http(s)://host[:port]/.../rerank[#model]``: an endpoint in the shape llama.cpp's server, vLLM, TEI gateways,
  Jina and Cohere serve: POST ``{"model", "query", "documents": [str], "top_n"}``, reply
  ``{"results": [{"index", "relevance_score"}]}``. The URL fragment, if any, is sent as ``model`` (servers that
  host one model ignore it): ``http://localhost:8080/v1/rerank#bge-reranker-v2-m3``.
- ``llm``: the chat model rates each passage 0-10 (prompt ``prompts/rerank.md``); a reply without a readable
  score leaves that passage at the neutral `NEUTRAL_SCORE` and adds a line to `notes`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, Field, ValidationError

from ..errors import ConfigError, PaperscopeError, RerankError
from ..prompts import load_prompt
from .registry import build, get, no_argument, operators, register
from .torch_model import load_cross_encoder

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

NEUTRAL_SCORE = 5.0  # the middle of the llm reranker's 0-10 scale
MAX_MODEL_NAME = 200  # a rerank reply's "model" longer than this is not a name, and not reported
MAX_PASSAGE_CHARS = 4000  # what the llm reranker shows of a passage: enough to judge it, small for small models

T = TypeVar("T")


class Reranker(Protocol):
    """Scores passages for a query; higher is more relevant. Scores compare within one call only."""

    name: str  # what the user configured, e.g. "cross-encoder:/models/bge-reranker-base"
    provider: str  # "cross-encoder", "http" or "llm"
    model: str | None  # the model's name or path, when known
    notes: list[str]  # what the last `score` call could not do well (e.g. replies without a score)

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One finite score per text, in the order of `texts`."""
        ...


@register(
    "postprocessor",
    "rerank",
    summary="Candidates scored again by a cross-encoder (cross-encoder:<path>), a rerank endpoint "
    "(http(s)://.../rerank) or the chat model (llm); set retrieval.rerank or --rerank.",
    needs=("reranker",),
)
def rerank(
    reranker: Reranker, query: str, items: Sequence[T], text_of: Callable[[T], str], top_n: int | None = None
) -> list[tuple[T, float]]:
    """`items` with their scores, best first (ties keep the input order), cut to `top_n` when given."""
    if not items or top_n == 0:
        return []
    scores = reranker.score(query, [text_of(item) for item in items])
    if len(scores) != len(items):
        raise RerankError(f"reranker {reranker.name}: {len(scores)} scores for {len(items)} passages")
    if not all(math.isfinite(s) for s in scores):
        raise RerankError(f"reranker {reranker.name}: a score is not a finite number ({scores})")
    ranked = sorted(zip(items, scores, strict=True), key=lambda pair: -pair[1])
    return ranked if top_n is None else ranked[:top_n]


def parse_rerank_spec(
    spec: str, chat_model: BaseChatModel | None = None, *, timeout: float = 30.0, api_key: str | None = None
) -> Reranker:
    """The reranker named by `spec` (see the module docstring); `chat_model` serves ``llm``, `timeout` and
    `api_key` (sent as a Bearer token) an HTTP endpoint. A bad spec is a ConfigError listing the accepted forms."""
    head, _, arg = spec.strip().partition(":")
    check_rerank_spec(spec)
    reranker: Reranker = build(
        "reranker", f"{head.lower()}:{arg}", chat_model=chat_model, timeout=timeout, api_key=api_key
    )
    return reranker


def check_rerank_spec(spec: str) -> None:
    """A ConfigError listing the accepted forms when no registered reranker takes `spec` (by its name: nothing is
    loaded or opened)."""
    try:
        get("reranker", spec.strip().partition(":")[0].lower())
    except ConfigError:
        raise ConfigError(unknown_reranker(spec)) from None


def unknown_reranker(spec: str) -> str:
    """The message of a spec no reranker takes, with the registered forms: "...; use 'a', 'b' or 'c'"."""
    found = [f"'{f}'" for f in dict.fromkeys(op.form for op in operators("reranker"))]
    accepted = f"{', '.join(found[:-1])} or {found[-1]}" if len(found) > 1 else "".join(found)
    return f"unknown reranker {spec!r}; use {accepted}"


def _flat(text: str, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters: error messages quote what a server said."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- cross-encoder -------------------------------------------------------------------------


def _cross_encoder_ref(arg: str) -> str:
    """A folder (resolved) or a cached model name; a path that does not exist is an error naming it."""
    path = Path(arg).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"cross-encoder model {arg!r}: {path} is a file; give the model's folder")
        return str(path.resolve())
    # "org/name" is a Hub name; anything else with a separator, or starting like a path, is a path.
    if arg.startswith(("/", ".", "~")) or arg.count("/") > 1 or (os.sep != "/" and os.sep in arg):
        raise ConfigError(f"cross-encoder model folder {path} does not exist")
    return arg


@register("reranker", "cross-encoder", usage="cross-encoder:<name-or-path>")
class CrossEncoderReranker:
    """A local cross-encoder (a folder, or a model in the local Hugging Face cache) scores (query, passage) pairs."""

    provider = "cross-encoder"

    @classmethod
    def from_spec(cls, arg: str, **_: Any) -> CrossEncoderReranker:
        """`cross-encoder:/models/bge-reranker-base`: the model is required."""
        if not arg.strip():
            raise ConfigError(unknown_reranker(f"cross-encoder:{arg}"))
        return cls(_cross_encoder_ref(arg.strip()))

    def __init__(self, ref: str, *, batch_size: int = 32) -> None:
        self.model: str | None = ref
        self.name = f"cross-encoder:{ref}"
        self.batch_size = batch_size
        self.notes: list[str] = []

    def score(self, query: str, texts: list[str]) -> list[float]:
        """Relevance of each text to `query`, by the cross-encoder."""
        self.notes = []
        if not texts:
            return []
        assert self.model is not None
        encoder = load_cross_encoder(self.model)
        try:
            out = encoder.predict(
                [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        except Exception as exc:
            raise RerankError(f"{self.name}: scoring failed: {type(exc).__name__}: {_flat(str(exc))}") from exc
        rows = [[float(v) for v in row] if hasattr(row, "__len__") else [float(row)] for row in out]
        if any(len(row) != 1 for row in rows):
            raise RerankError(f"{self.name}: the model has {len(rows[0])} outputs per pair; a reranker has one")
        return [row[0] for row in rows]


# --- HTTP rerank endpoints ---------------------------------------------------------------------


class _Result(BaseModel):
    index: int = Field(strict=True, ge=0)
    relevance_score: float = Field(allow_inf_nan=False)


class _Reply(BaseModel):
    results: list[_Result]
    model: object = None  # the model that scored, when the endpoint says (any type: used only if a short string)


class HTTPReranker:
    """A rerank endpoint (llama.cpp, vLLM, TEI gateways, Jina, Cohere); every failure is a RerankError naming it."""

    provider = "http"

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 30.0, api_key: str | None = None, **_: Any) -> HTTPReranker:
        """`http://host:8080/v1/rerank#model`: the URL of the rerank route; its fragment, if any, the model."""
        parts = urlsplit(url)
        if not parts.netloc or not parts.path.rstrip("/").endswith("rerank"):
            raise ConfigError(
                f"rerank endpoint {url!r}: give the full URL of the rerank route, e.g. http://localhost:8080/v1/rerank"
            )
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
        return cls(plain, parts.fragment or None, timeout=timeout, api_key=api_key)

    def __init__(
        self, url: str, model: str | None = None, *, timeout: float = 30.0, api_key: str | None = None
    ) -> None:
        self.url = url
        self.asked = model  # what is sent as "model"; `model` becomes what the endpoint says scored
        self.model = model
        self.name = f"{url}#{model}" if model else url
        self.timeout = timeout
        self.notes: list[str] = []
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _fail(self, reason: str) -> RerankError:
        return RerankError(f"rerank endpoint {self.url}: {reason}")

    def score(self, query: str, texts: list[str]) -> list[float]:
        """The endpoint's relevance score of each text; a text the reply leaves out ranks below all others."""
        self.notes = []
        if not texts:
            return []
        payload: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self.asked:
            payload["model"] = self.asked
        try:
            response = self._client.post(self.url, json=payload)
        except httpx.TimeoutException as exc:
            raise self._fail(f"no reply within {self.timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise self._fail(f"cannot reach it: {type(exc).__name__}: {_flat(str(exc))}") from exc
        if response.status_code >= 400:
            raise self._fail(f"HTTP {response.status_code}: {_flat(response.text) or '(empty body)'}")
        try:
            body = json.loads(response.content)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._fail(f"the reply is not JSON: {_flat(response.text, 120) or '(empty body)'}") from exc
        try:
            reply = _Reply.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "reply"
            raise self._fail(
                f'unexpected reply, want {{"results": [{{"index", "relevance_score"}}]}}: {where}: {first["msg"]}'
            ) from exc
        named = " ".join(reply.model.split()) if isinstance(reply.model, str) else ""
        if 0 < len(named) <= MAX_MODEL_NAME and named.isprintable():
            self.model = named  # the reply names the model that served (one behind a gateway, or the only one)
        scores: list[float | None] = [None] * len(texts)
        for result in reply.results:
            if result.index >= len(texts):
                raise self._fail(f"result index {result.index} is out of range for {len(texts)} documents")
            if scores[result.index] is not None:
                raise self._fail(f"result index {result.index} appears twice")
            scores[result.index] = result.relevance_score
        given = [s for s in scores if s is not None]
        if not given:
            raise self._fail(f"no results for {len(texts)} documents")
        if len(given) < len(texts):
            self.notes.append(f"{self.name} scored {len(given)} of {len(texts)} passages; the rest rank last")
        floor = min(given) - 1.0
        return [floor if s is None else s for s in scores]


for _scheme in ("http", "https"):
    register(
        "reranker",
        _scheme,
        usage="http(s)://host/.../rerank[#model]",
        # The spec's argument is the URL after the scheme ("//host/v1/rerank").
        factory=lambda arg, _s=_scheme, **kw: HTTPReranker.from_url(f"{_s}:{arg}", **kw),
    )(HTTPReranker)


# --- the chat model as a judge -------------------------------------------------------------------------------

_THINKING = re.compile(r"<think>.*?(</think>|\Z)", re.S | re.I)
_NUMBER = re.compile(r"(?<![\d.])\d{1,2}(?:\.\d+)?(?![\d.])")


def read_score(reply: str) -> float | None:
    """The first number from 0 to 10 in a reply ("7", "Score: 8/10", "**9**"), reasoning blocks skipped."""
    for match in _NUMBER.finditer(_THINKING.sub(" ", reply)):
        value = float(match.group())
        if 0.0 <= value <= 10.0:
            return value
    return None


def _chat_model_name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


@register("reranker", "llm")
class LLMReranker:
    """The chat model rates each passage 0-10, `max_concurrency` requests at a time."""

    provider = "llm"

    @classmethod
    def from_spec(cls, arg: str, *, chat_model: BaseChatModel | None = None, **_: Any) -> LLMReranker:
        """`llm`: the configured chat model (required)."""
        no_argument("reranker", "llm", arg)
        if chat_model is None:
            raise ConfigError("reranker 'llm' needs a chat model: set llm.model (PAPERSCOPE_LLM_MODEL)")
        return cls(chat_model)

    def __init__(self, chat_model: BaseChatModel, *, max_concurrency: int = 4) -> None:
        self.chat_model = chat_model
        self.model: str | None = _chat_model_name(chat_model)
        self.name = f"llm:{self.model}"
        self.max_concurrency = max_concurrency
        self.notes: list[str] = []

    def score(self, query: str, texts: list[str]) -> list[float]:
        """A 0-10 score per text; a reply with no score gives `NEUTRAL_SCORE` and a note. A failing model call
        is an LLMError."""
        from langchain_core.messages import HumanMessage

        self.notes = []
        if not texts:
            return []
        prompt = load_prompt("rerank")
        inputs = [
            [HumanMessage(content=prompt.format(query=query, passage=_clip(text, MAX_PASSAGE_CHARS)))] for text in texts
        ]
        replies = self.chat_model.batch(
            inputs,  # type: ignore[arg-type]  # a list of message lists is a valid batch input
            config={"max_concurrency": self.max_concurrency},
            return_exceptions=True,
        )
        scores: list[float] = []
        for i, reply in enumerate(replies):
            if isinstance(reply, Exception):
                raise _llm_error(reply, self.chat_model) from reply
            text = str(getattr(reply, "text", reply))
            value = read_score(text)
            if value is None:
                self.notes.append(
                    f"{self.name} gave passage {i + 1} no score (reply: {_flat(text, 80)!r}); it kept {NEUTRAL_SCORE:g}"
                )
                log.warning("%s", self.notes[-1])
                value = NEUTRAL_SCORE
            scores.append(value)
        return scores


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _llm_error(exc: Exception, model: BaseChatModel) -> PaperscopeError:
    from ..llm.client import as_llm_error  # imported only when a model call fails

    return as_llm_error(exc, model)
