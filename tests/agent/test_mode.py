"""Agent or single-shot: one decision (`agent.mode.uses_agent`) for every way in, from settings built once."""

from __future__ import annotations

import pytest

from paperscope.agent.mode import mode_of, uses_agent
from paperscope.config import Settings
from paperscope.operations import Asking, AskRequest, settings_request
from paperscope.rag.store import PaperStore
from tests.scripted_model import ScriptedChatModel, final, tool_call

QUESTION = "How does BlendIR weight BM25 against dense scores?"


@pytest.mark.parametrize(
    ("enabled", "has_model", "single_shot", "agent"),
    [
        (True, True, False, True),
        (True, False, False, False),  # no model: nothing to run the agent
        (False, True, False, False),  # agent.enable_agentic_rag off
        (True, True, True, False),  # --no-agent, or papers, sections or k fixed
    ],
)
def test_the_one_decision(enabled: bool, has_model: bool, single_shot: bool, agent: bool) -> None:
    settings = Settings(agent={"enable_agentic_rag": enabled}, llm={"model": "m"})  # type: ignore[arg-type]
    assert uses_agent(settings, has_model, single_shot=single_shot) is agent


def test_mode_in_words_says_the_same() -> None:
    assert mode_of(Settings()) == "single-shot, no LLM"
    assert mode_of(Settings(llm={"model": "qwen"})) == "agent with qwen"  # type: ignore[arg-type]
    off = Settings(llm={"model": "qwen"}, agent={"enable_agentic_rag": False})  # type: ignore[arg-type]
    assert mode_of(off) == "single-shot with qwen"


def test_a_single_shot_request_is_single_shot_in_its_settings_layer() -> None:
    assert settings_request(AskRequest(query=QUESTION, no_agent=True))["agent"] == {"enable_agentic_rag": False}
    assert settings_request(AskRequest(query=QUESTION, k=3))["agent"] == {"enable_agentic_rag": False}
    assert settings_request(AskRequest(query=QUESTION))["agent"] == {"enable_agentic_rag": None}  # not given


def test_settings_are_never_rewritten() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.agent.enable_agentic_rag = False  # type: ignore[misc]
    changed = settings.with_overrides(agent={"enable_agentic_rag": False})
    assert settings.agent.enable_agentic_rag and not changed.agent.enable_agentic_rag


def test_asking_sends_a_question_to_the_agent_or_the_single_shot_path(sample_kb: PaperStore) -> None:
    """The same model, the same question: the agent answers unless the request fixes k (a hard limit)."""
    settings = sample_kb.settings.with_overrides(llm={"use_for_routing": False})
    search = tool_call("search_abstracts", {"query": "BlendIR"})
    model = ScriptedChatModel([final("Weighted [1]."), search, *[final("It weighs them.")] * 3])
    asking = Asking(sample_kb, settings, chat_model=model)
    scoped = asking.ask(AskRequest(query=QUESTION, k=3))
    assert scoped.mode == "single-shot" and not scoped.trace and scoped.answer == "Weighted [1]."
    by_agent = asking.ask(AskRequest(query=QUESTION))
    assert by_agent.trace and by_agent.trace[0].tool == "search_abstracts"  # the agent searched
