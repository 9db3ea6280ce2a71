"""Agent or single-shot: the one decision, for every way a question comes in (CLI, chat, eval, HTTP, Python).

Light on purpose (no langgraph): the CLI asks it to say how it will answer before anything heavy is imported.
"""

from __future__ import annotations

from ..config import Settings


def uses_agent(settings: Settings, has_model: bool, *, single_shot: bool = False) -> bool:
    """True when the agent answers: a chat model is there, `agent.enable_agentic_rag` is on, and the question does
    not ask for single-shot (`single_shot`: --no-agent, or papers, sections or k fixed, hard limits the agent could
    not be held to)."""
    return has_model and settings.agent.enable_agentic_rag and not single_shot


def mode_of(settings: Settings, *, single_shot: bool = False) -> str:
    """How questions with these settings are answered, in words: "agent with M", "single-shot, no LLM", ..."""
    if not settings.llm.model:
        return "single-shot, no LLM"
    how = "agent" if uses_agent(settings, True, single_shot=single_shot) else "single-shot"
    return f"{how} with {settings.llm.model}"
