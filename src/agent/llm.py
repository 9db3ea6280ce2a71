"""The chat model: any OpenAI-compatible endpoint through langchain-openai, or none."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from ..config import LLMSettings


def make_chat_model(settings: LLMSettings) -> BaseChatModel | None:
    """A `ChatOpenAI` for the configured endpoint, or None when no model is configured."""
    if not settings.model:
        return None
    from langchain_openai import ChatOpenAI

    # Local servers (vLLM, Ollama, llama.cpp) accept any key, but the client insists on one.
    key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
    return ChatOpenAI(
        model=settings.model,
        base_url=settings.base_url,
        api_key=key,  # type: ignore[arg-type]
        temperature=settings.temperature,
        timeout=settings.timeout,
        max_retries=1,
    )


def model_name(model: BaseChatModel | None) -> str | None:
    """A readable name of the chat model (None when there is none)."""
    if model is None:
        return None
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
