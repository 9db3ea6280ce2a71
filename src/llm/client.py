"""The chat model: any OpenAI-compatible endpoint through langchain-openai, or none; every call bounded.

`make_chat_model` builds a `BoundedChatOpenAI` (bounded.py: timeouts, a per-question budget, narrow retries, one
error type) for the configured endpoint. This module stays light: langchain-openai is imported only when a model
is configured, so commands and questions without one never load it.
"""

from __future__ import annotations

import logging
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ..config import LLMSettings
from ..errors import LLMError
from .endpoint import OPENAI_URL, one_line

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..cancellation import Cancellation
    from .bounded import BoundedChatOpenAI


def __getattr__(name: str) -> Any:
    """`BoundedChatOpenAI` and `CHARS_PER_TOKEN_CAP` from bounded.py, imported when first asked for."""
    if name in ("BoundedChatOpenAI", "CHARS_PER_TOKEN_CAP"):
        from . import bounded

        return getattr(bounded, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _bounded(model: object) -> BoundedChatOpenAI | None:
    """`model` when it is a BoundedChatOpenAI, else None (without importing langchain-openai to find out: a
    bounded model exists only once bounded.py was imported)."""
    module = sys.modules.get(f"{__package__}.bounded")
    return model if module is not None and isinstance(model, module.BoundedChatOpenAI) else None


def make_chat_model(settings: LLMSettings, cancel: Cancellation | None = None) -> BoundedChatOpenAI | None:
    """A bounded `ChatOpenAI` for the configured endpoint, or None when no model is configured. With `cancel`, its
    calls fail once that is set, and a call under way is cut."""
    if not settings.model:
        return None
    from .bounded import BoundedChatOpenAI
    from .deadline import bounded_http_client

    # Local servers (vLLM, Ollama, llama.cpp) accept any key, but the client insists on one.
    key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
    endpoint = (settings.base_url or OPENAI_URL).rstrip("/")
    # langchain-openai sends the cap as max_completion_tokens; older local servers only read max_tokens.
    local = settings.base_url is not None and "api.openai.com" not in settings.base_url
    return BoundedChatOpenAI(
        model=settings.model,
        base_url=settings.base_url,
        api_key=key,  # type: ignore[arg-type]
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,  # type: ignore[call-arg]
        extra_body={"max_tokens": settings.max_tokens} if local else None,
        stream_usage=True,  # the agent streams its turns; token usage still counted
        timeout=settings.timeout,
        http_client=bounded_http_client(settings.timeout, cancel),  # wall-clock limits, keep-alives or not
        max_retries=0,  # retries are ours: only connection errors and 5xx, within the question's budget
        call_timeout=settings.timeout,
        question_budget=settings.question_budget,
        retries=settings.retries,
        backoff=settings.backoff,
        endpoint=endpoint,
        cancel=cancel,
    )


def question_scope(model: BaseChatModel | None) -> AbstractContextManager[None]:
    """The question scope of a bounded model (a no-op for any other model)."""
    bounded = _bounded(model)
    return bounded.question() if bounded is not None else nullcontext()


def model_error(model: BaseChatModel | None, kind: str, reason: str) -> LLMError:
    """An LLMError about `model` (kinds as in `LLMError`)."""
    bounded = _bounded(model)
    endpoint = bounded.endpoint if bounded is not None else "(in process)"
    return LLMError(model_name(model) or "?", endpoint, kind, one_line(reason))


def as_llm_error(exc: Exception, model: BaseChatModel | None) -> LLMError:
    """`exc` from a model call as an LLMError (a bounded model raises them already; others are wrapped)."""
    if isinstance(exc, LLMError):
        return exc
    return model_error(model, "bad_response", f"{type(exc).__name__}: {exc}")


def llm_failure(model: BaseChatModel | None) -> LLMError | None:
    """The endpoint failure of the bounded model's current (or last) question, if any."""
    bounded = _bounded(model)
    return bounded.failure if bounded is not None else None


class _ReportedWithTheAnswer(logging.Filter):
    """The LLM router logs a failed model call and routes by the rules; when the failure is an LLMError the
    answer reports it (`Answer.llm_error`), so the log line would say the same thing twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not any(isinstance(a, LLMError) for a in args)


logging.getLogger("paperscope.router").addFilter(_ReportedWithTheAnswer())


def model_name(model: BaseChatModel | None) -> str | None:
    """A readable name of the chat model (None when there is none)."""
    if model is None:
        return None
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
