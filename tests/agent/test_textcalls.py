"""Tool calls written as text, in the forms real local models write them, and what is not a call."""

from __future__ import annotations

import json

import pytest

from paperscope.agent.textcalls import TextCall, looks_like_a_call, parse_text_calls

TOOLS = {"search_abstracts", "search_by_section", "get_context_window", "get_paper_introduction", "finish"}
ARGS = {"query": "kv cache", "k": 3}
SCHEMA = {
    "type": "function",
    "function": {
        "name": "search_abstracts",
        "description": "Find the papers about a topic.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


@pytest.mark.parametrize(
    "text",
    [
        f"<tool_call>\n{json.dumps({'name': 'search_abstracts', 'arguments': ARGS})}\n</tool_call>",
        f"<tool_call>{json.dumps({'name': 'search_abstracts', 'arguments': json.dumps(ARGS)})}",  # no closing tag
        f"<tools><function name=\"search_abstracts\" arguments='{json.dumps(ARGS)}'/></tools>",
        f'<function name="search_abstracts">{json.dumps(ARGS)}</function>',
        f"<function=search_abstracts>{json.dumps(ARGS)}</function>",
        "<function=search_abstracts><parameter=query>kv cache</parameter><parameter=k>3</parameter></function>",
        f"<tool_call><function=search_abstracts>{json.dumps(ARGS)}</function></tool_call>",
        f"<|python_tag|>{json.dumps({'name': 'search_abstracts', 'parameters': ARGS})}<|eom_id|>",
        '<|python_tag|>search_abstracts.call(query="kv cache", k=3)',
        f"Let me search.\n```json\n{json.dumps({'name': 'search_abstracts', 'arguments': ARGS}, indent=2)}\n```",
        json.dumps({"name": "search_abstracts", "parameters": ARGS}),
        "{" + json.dumps({"name": "search_abstracts", "arguments": ARGS}) + "}",  # doubled braces, as seen
        f"<tools>\n{json.dumps({'name': 'search_abstracts', 'arguments': ARGS})}\n</tools>",
        json.dumps({"type": "function", "function": {"name": "search_abstracts", "arguments": json.dumps(ARGS)}}),
    ],
    ids=[
        "hermes",
        "hermes-unclosed-string-args",
        "function-tag-in-tools",
        "function-tag-body",
        "function-eq-json",
        "function-eq-parameters",
        "hermes-wrapping-function-eq",
        "python-tag-json",
        "python-tag-call",
        "fenced-json",
        "bare-json-parameters",
        "bare-json-doubled-braces",
        "json-in-tools-tag",
        "openai-shaped",
    ],
)
def test_each_textual_form_is_one_call(text: str) -> None:
    assert parse_text_calls(text, TOOLS) == [TextCall("search_abstracts", ARGS)]
    assert looks_like_a_call(text) or text.startswith("{")


def test_several_calls_in_one_reply() -> None:
    text = (
        "<tool_call>\n"
        + json.dumps({"name": "search_abstracts", "arguments": {"query": "a"}})
        + "\n</tool_call>\n<tool_call>\n"
        + json.dumps({"name": "get_paper_introduction", "arguments": {"doc_id": "P2"}})
        + "\n</tool_call>"
    )
    assert parse_text_calls(text, TOOLS) == [
        TextCall("search_abstracts", {"query": "a"}),
        TextCall("get_paper_introduction", {"doc_id": "P2"}),
    ]
    listed = json.dumps([{"name": "search_abstracts", "arguments": {"query": q}} for q in ("a", "b")])
    assert [c.args for c in parse_text_calls(listed, TOOLS)] == [{"query": "a"}, {"query": "b"}]


@pytest.mark.parametrize(
    "text",
    [
        f"<tools>\n{json.dumps(SCHEMA)}\n</tools>",
        f"```json\n{json.dumps(SCHEMA)}\n```",
        json.dumps(SCHEMA["function"]),
        f"<function name=\"search_abstracts\" parameters='{json.dumps(SCHEMA['function']['parameters'])}'/>",
    ],
    ids=["tools-block", "fenced", "bare-function", "function-tag"],
)
def test_copied_tool_schemas_are_not_calls(text: str) -> None:
    assert parse_text_calls(text, TOOLS) == []
    assert looks_like_a_call(text)  # and still never an answer to show


@pytest.mark.parametrize(
    "text",
    [
        "FlashRank was trained on 1.2 million queries [P1:4].",
        'The config was {"lr": 3e-5, "batch": 32}.',
        json.dumps({"name": "plot_results", "arguments": {"x": 1}}),  # untagged, and not one of our tools
        "```python\nprint('hello')\n```",
        "",
    ],
)
def test_prose_and_foreign_json_are_not_calls(text: str) -> None:
    assert parse_text_calls(text, TOOLS) == []


def test_a_bare_answer_object_is_a_finish_call() -> None:
    args = {"answer": "It uses 1.2M queries [P1:4].", "sources": ["P1:4"]}
    assert parse_text_calls(json.dumps(args), TOOLS) == [TextCall("finish", args)]


def test_broken_arguments_are_a_call_with_an_error() -> None:
    [call] = parse_text_calls('<tool_call>{"name": "search_abstracts", "arguments": {"query": "kv"</tool_call>', TOOLS)
    assert call.name == "search_abstracts" and call.args is None and "not valid JSON" in (call.error or "")
    [call] = parse_text_calls('<function=search_abstracts>{"query": </function>', TOOLS)
    assert call.args is None
    [call] = parse_text_calls("<|python_tag|>search_abstracts('kv cache')", TOOLS)
    assert call.args is None and "key=value" in (call.error or "")


def test_a_tagged_unknown_tool_is_still_a_call_for_the_tool_node_to_refuse() -> None:
    assert parse_text_calls('<tool_call>{"name": "web_search", "arguments": {"q": "x"}}</tool_call>', TOOLS) == [
        TextCall("web_search", {"q": "x"})
    ]
