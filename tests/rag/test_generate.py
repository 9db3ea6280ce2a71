"""Model calls for operators: cached by model, prompt version and text; concurrent; one bad item stays alone."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from paperscope.errors import LLMError
from paperscope.rag.generate import Generator
from tests.scripted_model import ScriptedChatModel, final


def echo(messages: list[BaseMessage]) -> AIMessage:
    return AIMessage(content="reply to " + str(messages[-1].content)[-20:])


def test_a_repeated_call_is_answered_from_the_disk_cache(tmp_path: Path) -> None:
    model = ScriptedChatModel([final("first answer")])
    gen = Generator(model, tmp_path / "gen.sqlite")
    assert gen.generate("answer", context="ctx", question="q?") == "first answer"
    again = Generator(ScriptedChatModel([]), tmp_path / "gen.sqlite")  # a new process: nothing scripted to call
    assert again.generate("answer", context="ctx", question="q?") == "first answer"
    assert (gen.calls, again.calls, again.cached) == (1, 0, 1)
    assert again.cached_only("answer", context="ctx", question="other") is None


def test_the_key_names_the_model_prompt_and_text(tmp_path: Path) -> None:
    gen = Generator(ScriptedChatModel([]), tmp_path / "gen.sqlite")
    a, b = gen.key("answer", "x"), gen.key("answer", "y")
    assert a != b and a.startswith("ScriptedChatModel|answer@") and gen.key("router", "x") != a


def test_many_items_each_get_their_reply_or_their_error(tmp_path: Path) -> None:
    model = ScriptedChatModel([echo, LLMError("m", "http://x", "server", "HTTP 500"), echo])
    gen = Generator(model, None, concurrency=1)
    out = gen.generate_many("answer", [{"context": str(i), "question": "q"} for i in range(3)])
    assert isinstance(out[0], str) and isinstance(out[1], LLMError) and isinstance(out[2], str)
    assert gen.calls == 2


def test_an_empty_reply_is_not_cached(tmp_path: Path) -> None:
    model = ScriptedChatModel([final(""), final("now")])
    gen = Generator(model, tmp_path / "gen.sqlite")
    assert gen.generate("answer", context="c", question="q") == ""
    assert gen.generate("answer", context="c", question="q") == "now" and gen.calls == 2


def test_concurrent_calls_all_return(tmp_path: Path) -> None:
    model = ScriptedChatModel([echo] * 8)
    gen = Generator(model, tmp_path / "gen.sqlite", concurrency=4, requests_per_second=200)
    out = gen.generate_many("answer", [{"context": f"c{i}", "question": "q"} for i in range(8)])
    assert all(isinstance(o, str) and o.startswith("reply to") for o in out) and gen.calls == 8


def test_a_lower_reply_cap_is_its_own_cache_entry(tmp_path: Path) -> None:
    model = ScriptedChatModel([final("short"), final("long")])
    capped, free = Generator(model, tmp_path / "gen.sqlite", max_tokens=64), Generator(model, tmp_path / "gen.sqlite")
    assert capped.key("answer", "x") != free.key("answer", "x")
    assert capped.generate("answer", context="c", question="q") == "short"
    assert free.generate("answer", context="c", question="q") == "long"  # not the capped reply
