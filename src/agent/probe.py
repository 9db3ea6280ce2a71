"""What an OpenAI-compatible endpoint can do, found with a few tiny requests (for `paperscope doctor`).

The probe lists the endpoint's models (is it reachable, does it list ours, its context length when the
listing says: vLLM `max_model_len`, llama.cpp `meta.n_ctx`, others `context_length`), times a short reply,
tries a streamed one, and asks for one tool call: structured `tool_calls` ("yes"), a call written as text
that paperscope parses ("as text"), or none ("no"). The tool-call answer and the context length are cached
per endpoint + model in `$PAPERSCOPE_HOME/llm_probe.json`; `agent.prompt = auto` reads the context length there.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage
from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import LLMError
from ..llm.client import make_chat_model
from ..llm.deadline import bounded_http_client
from ..llm.endpoint import one_line
from .textcalls import parse_text_calls

CACHE_FILE = "llm_probe.json"
COMPACT_BELOW = 16384  # tokens of context under which `agent.prompt = auto` picks the compact prompt
PROBE_TOOL = "lookup_paper"
ToolSupport = Literal["yes", "as text", "no"]


class ProbeResult(BaseModel):
    """What one probe of an endpoint found."""

    endpoint: str
    model: str
    reachable: bool = Field(False, description="The endpoint answered the model listing or a chat request.")
    error: str | None = Field(None, description="Why it is not reachable, or what failed.")
    listed: bool | None = Field(None, description="The endpoint lists the model (None: it lists none).")
    models: list[str] = Field(default_factory=list, description="Models the endpoint lists.")
    context_length: int | None = Field(None, description="Context window in tokens, when the listing says.")
    latency: float | None = Field(None, description="Seconds for a short reply.")
    streaming: bool | None = Field(None, description="A streamed reply arrived.")
    stream_error: str | None = None
    tool_calls: ToolSupport | None = Field(None, description="yes: structured; as text: parsed from text; no.")
    tool_error: str | None = None
    cached: bool = Field(False, description="The tool-call answer came from the cache.")


def cache_key(endpoint: str, model: str) -> str:
    return f"{endpoint.rstrip('/')}|{model}"


def _cache_path(settings: Settings) -> Path:
    return Path(settings.home).expanduser() / CACHE_FILE


def _read_cache(settings: Settings) -> dict[str, Any]:
    try:
        data = json.loads(_cache_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no cache yet, or a broken one: probe again
    return data if isinstance(data, dict) else {}


def cached(settings: Settings) -> dict[str, Any] | None:
    """The cached probe facts (tool_calls, context_length) for the configured endpoint + model, if any."""
    if not settings.llm.model:
        return None
    endpoint = (settings.llm.base_url or "https://api.openai.com/v1").rstrip("/")
    entry = _read_cache(settings).get(cache_key(endpoint, settings.llm.model))
    return entry if isinstance(entry, dict) else None


def context_length(settings: Settings) -> int | None:
    """The endpoint's context window: `llm.context_length`, else what the last probe found, else None."""
    if settings.llm.context_length:
        return settings.llm.context_length
    entry = cached(settings) or {}
    value = entry.get("context_length")
    return value if isinstance(value, int) and value > 0 else None


def prompt_choice(settings: Settings, window: int | None = None) -> Literal["full", "compact"]:
    """The agent's prompt: `agent.prompt`, or for auto the compact one when the context (`window`, else
    `context_length(settings)`) is known and short."""
    if settings.agent.prompt != "auto":
        return settings.agent.prompt
    window = window or context_length(settings)
    return "compact" if window is not None and window < COMPACT_BELOW else "full"


def _save(settings: Settings, result: ProbeResult) -> None:
    data = _read_cache(settings)
    data[cache_key(result.endpoint, result.model)] = {
        "tool_calls": result.tool_calls,
        "context_length": result.context_length,
        "probed_at": int(time.time()),
    }
    path = _cache_path(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".llm_probe.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs a probe next time


def probe(settings: Settings, *, refresh: bool = False) -> ProbeResult:
    """Probe the configured endpoint (settings.llm must name a model); the tool check is cached unless `refresh`."""
    # Small replies suffice; a tool call needs a few dozen tokens.
    model = make_chat_model(settings.llm.model_copy(update={"max_tokens": 64}))
    assert model is not None, "probe() needs llm.model"
    result = ProbeResult(endpoint=model.endpoint, model=settings.llm.model or "")
    _list_models(model.endpoint, settings, result)

    with model.question():
        started = time.perf_counter()
        try:
            model.invoke("Reply with the single word OK.")
        except LLMError as exc:
            result.error = exc.reason  # the chat request's reason says more than the listing's
            return result
        result.reachable = True
        result.latency = round(time.perf_counter() - started, 3)
        try:
            result.streaming = any(str(c.text) for c in model.stream("Reply with the single word OK."))
        except LLMError as exc:
            result.streaming, result.stream_error = False, exc.reason

        entry = None if refresh else cached(settings)
        if entry is not None and entry.get("tool_calls") in ("yes", "as text", "no"):
            result.tool_calls, result.cached = entry["tool_calls"], True
        else:
            result.tool_calls, result.tool_error = _tool_support(model)
    if result.tool_error is None:
        _save(settings, result)
    return result


def _tool_support(model: Any) -> tuple[ToolSupport | None, str | None]:
    def lookup_paper(query: str) -> str:
        """Look up a research paper by a few words of its title."""
        return query

    try:
        reply = model.bind_tools([lookup_paper]).invoke(
            "Use the lookup_paper tool to look up the paper 'Attention Is All You Need'."
        )
    except LLMError as exc:
        return None, exc.reason
    if isinstance(reply, AIMessage) and any(c["name"] == PROBE_TOOL for c in reply.tool_calls):
        return "yes", None
    if parse_text_calls(str(reply.text), {PROBE_TOOL}):
        return "as text", None
    return "no", None


def _list_models(endpoint: str, settings: Settings, result: ProbeResult) -> None:
    """Fill `models`, `listed` and `context_length` from GET /models (fine if the endpoint has none)."""
    import openai

    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else "not-needed"
    limit = min(settings.llm.timeout, 10.0)
    client = openai.OpenAI(
        base_url=endpoint, api_key=key, max_retries=0, timeout=limit, http_client=bounded_http_client(limit)
    )
    try:
        page = client.models.list()
        entries = [m.model_dump() for m in page.data]
    except openai.NotFoundError:
        return  # not every server lists models
    except Exception as exc:  # unreachable or not an OpenAI listing: the chat request will tell
        result.error = one_line(f"listing models failed: {type(exc).__name__}: {exc}")
        return
    finally:
        client.close()
    result.reachable = True
    result.models = [str(e.get("id")) for e in entries if e.get("id")]
    result.listed = (result.model in result.models) if result.models else None
    ours = [e for e in entries if e.get("id") == result.model] or (entries if len(entries) == 1 else [])
    for entry in ours:
        meta = entry.get("meta")
        n_ctx = meta.get("n_ctx") if isinstance(meta, dict) else None
        for value in (entry.get("max_model_len"), entry.get("context_length"), entry.get("context_window"), n_ctx):
            if isinstance(value, int) and value > 0:
                result.context_length = value
                return
