"""The bounded chat model against the scripted server: timeouts, the question budget, retries, one error type."""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel

from paperscope.cancellation import Cancellation
from paperscope.config import LLMSettings
from paperscope.errors import LLMError
from paperscope.llm.client import BoundedChatOpenAI, llm_failure, make_chat_model, question_scope
from tests.openai_server import (
    Drop,
    EmptyBody,
    Endless,
    Garbage,
    Hang,
    HTTPError,
    Ramble,
    ScriptedOpenAIServer,
    Slow,
    Text,
)


def bounded(base_url: str, **settings: Any) -> BoundedChatOpenAI:
    values: dict[str, Any] = {"timeout": 0.5, "backoff": 0.01, "max_tokens": 32, **settings}
    model = make_chat_model(LLMSettings(model="scripted-model", base_url=base_url, **values))
    assert isinstance(model, BoundedChatOpenAI)
    return model


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens there once the socket is closed


def failure(model: BaseChatModel, *, stream: bool = False) -> LLMError:
    with pytest.raises(LLMError) as caught:
        if stream:
            list(model.stream("hi"))
        else:
            model.invoke("hi")
    return caught.value


def test_the_request_carries_max_tokens_under_both_names() -> None:
    with ScriptedOpenAIServer([Text("OK")]) as server:
        assert bounded(server.base_url).invoke("hi").content == "OK"
    request = server.requests[0]
    assert request["max_completion_tokens"] == 32 and request["max_tokens"] == 32


def test_a_rambling_model_stops_at_max_tokens() -> None:
    with ScriptedOpenAIServer([Ramble(), Ramble()]) as server:
        model = bounded(server.base_url, max_tokens=20)
        reply = model.invoke("go on")
        streamed = "".join(str(c.content) for c in model.stream("go on"))
    assert reply.content == "and " * 20 and reply.response_metadata["finish_reason"] == "length"
    assert streamed == "and " * 20


@pytest.mark.parametrize(
    ("script", "kind", "reason", "requests"),
    [
        ([Hang()], "timeout", "no reply within 0.5 s", 1),
        ([HTTPError(500, "boom")] * 3, "server", "HTTP 500: boom", 3),  # retried twice
        ([Drop()] * 3, "unreachable", "cannot connect", 3),  # retried twice
        ([HTTPError(400, "context too long")], "rejected", "HTTP 400: context too long", 1),  # never retried
        ([EmptyBody()], "bad_response", "not a chat completion", 1),
        ([Garbage()], "bad_response", "not a chat completion", 1),
        ([Garbage(b"<html>oops</html>", "text/html")], "bad_response", "not a chat completion", 1),
    ],
    ids=["hang", "http-500", "dropped-connection", "http-400", "empty-body", "garbage-json", "garbage-html"],
)
def test_every_endpoint_fault_is_one_llm_error_naming_model_and_endpoint(
    script: list[Any], kind: str, reason: str, requests: int
) -> None:
    with ScriptedOpenAIServer(script) as server:
        error = failure(bounded(server.base_url))
        assert len(server.requests) == requests
        assert str(error).startswith(f"model scripted-model at {server.base_url} failed: ")
    assert error.kind == kind and reason in error.reason
    assert "\n" not in str(error)


def test_a_refused_connection_is_retried_then_reported() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    error = failure(bounded(url))
    assert error.kind == "unreachable" and "Connection refused" in error.reason and url in str(error)


def test_a_retry_that_succeeds_is_invisible() -> None:
    with ScriptedOpenAIServer([HTTPError(503, "warming up"), Text("ready")]) as server:
        assert bounded(server.base_url).invoke("hi").content == "ready"


def test_streams_that_stall_or_never_end_are_cut() -> None:
    with ScriptedOpenAIServer([Endless(interval=0.02), Hang()]) as server:
        model = bounded(server.base_url)
        endless = failure(model, stream=True)
        stalled = failure(model, stream=True)
    assert endless.kind == "timeout" and "still streaming after 0.5 s" in endless.reason
    assert stalled.kind == "timeout" and "no reply within 0.5 s" in stalled.reason


def test_a_slow_first_token_within_the_timeout_is_waited_for() -> None:
    with ScriptedOpenAIServer([Slow(0.2, Text("late but fine"))] * 2) as server:
        model = bounded(server.base_url, timeout=5)
        assert model.invoke("hi").content == "late but fine"
        assert "".join(str(c.content) for c in model.stream("hi")) == "late but fine"


def test_inside_a_question_a_failed_endpoint_is_not_called_again() -> None:
    with ScriptedOpenAIServer([Hang(), Text("next question")]) as server:
        model = bounded(server.base_url)
        with question_scope(model):
            first = failure(model)
            again = failure(model)  # at once: no second request
            assert len(server.requests) == 1 and llm_failure(model) is first
        assert (again.kind, again.reason) == (first.kind, first.reason)
        with question_scope(model):  # a new question tries again
            assert model.invoke("hi").content == "next question"
            assert llm_failure(model) is None


def test_a_batch_keeps_the_failure_across_questions() -> None:
    with ScriptedOpenAIServer([HTTPError(500, "down")] * 3) as server:
        model = bounded(server.base_url)
        model.keep_failures = True
        for _ in range(3):
            with question_scope(model):
                assert failure(model).kind == "server"
        assert len(server.requests) == 3  # one request and its two retries, for all three questions


def test_the_question_budget_bounds_all_its_calls() -> None:
    with ScriptedOpenAIServer([Slow(30, Text("too late"))]) as server:
        model = bounded(server.base_url, timeout=30, question_budget=1.0)
        started = time.monotonic()
        with question_scope(model):
            waited = failure(model)  # the request may take 30 s, the question has 1 s: it waits what is left of 1 s
        took = time.monotonic() - started
    # What is left, not the whole second: a loaded machine spends part of the budget before the request goes out.
    left = re.fullmatch(r".*no reply within (\d+(?:\.\d+)?) s.*", waited.reason)
    assert waited.kind == "timeout" and left is not None and 0 <= float(left.group(1)) <= 1.0
    assert took < 10  # bounded by the question's budget (plus start-up), never the request's 30 s
    with ScriptedOpenAIServer([Text("never asked")]) as server:
        model = bounded(server.base_url, question_budget=0.01)
        with question_scope(model):
            time.sleep(0.05)  # the question spent its budget elsewhere (retrieval, tools)
            spent = failure(model)
        assert spent.kind == "budget" and "budget is spent" in spent.reason and server.requests == []


def test_a_request_the_endpoint_refuses_does_not_mark_it_down() -> None:
    with ScriptedOpenAIServer([HTTPError(400, "too long"), Text("fine")]) as server:
        model = bounded(server.base_url)
        with question_scope(model):
            assert failure(model).kind == "rejected"
            assert llm_failure(model) is None and model.invoke("shorter").content == "fine"


def cancelled_model(base_url: str) -> tuple[BoundedChatOpenAI, Cancellation]:
    cancel = Cancellation()
    model = make_chat_model(LLMSettings(model="scripted-model", base_url=base_url, timeout=60), cancel)
    assert isinstance(model, BoundedChatOpenAI)
    return model, cancel


@pytest.mark.parametrize("stream", [False, True])
def test_a_cancelled_question_cuts_the_call_and_makes_no_more(stream: bool) -> None:
    with ScriptedOpenAIServer([Hang(), Text("never asked")]) as server:
        model, cancel = cancelled_model(server.base_url)
        threading.Timer(0.5, cancel.set, args=("the client went away",)).start()
        started = time.monotonic()
        with question_scope(model):
            cut = failure(model, stream=stream)  # the model hangs; its timeout is 60 s
            took = time.monotonic() - started
            again = failure(model)
        deadline = time.monotonic() + 10
        while not server.gone and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.gone == [0], "the model server sees the connection closed"
    assert cut.kind == "cancelled" and cut.reason == "the question was cancelled (the client went away)"
    assert took < 30  # ended by the cancel, not by the 60 s timeout
    assert again.kind == "cancelled" and len(server.requests) == 1
