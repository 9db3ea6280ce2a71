"""Decoding the answer out of streamed `finish` arguments."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessageChunk

from paperscope.agent.streaming import AnswerStream, partial_json_string

A = "0f0f0f0f-0000-0000-0000-000000000001"


def test_partial_json_strings() -> None:
    assert partial_json_string('ab\\"c\\n', 0) == ('ab"c\n', False)
    assert partial_json_string('x\\u00e9y" rest', 0) == ("xéy", True)
    assert partial_json_string("x\\u00", 0) == ("x", False)  # an escape cut in half waits for the rest


def stream_of(args: str, size: int, seen: set[str]) -> tuple[list[str], AnswerStream]:
    pieces: list[str] = []
    s = AnswerStream(dict.fromkeys(seen), pieces.append)
    for i in range(0, len(args), size):
        part = args[i : i + size]
        first = i == 0
        chunk = AIMessageChunk(
            content="",
            id="m1",
            tool_call_chunks=[{"name": "finish" if first else None, "args": part, "id": None, "index": 0}],
        )
        s.feed(chunk, "model")
    s.close()
    return pieces, s


def test_citations_are_renumbered_and_unseen_ones_dropped_while_streaming() -> None:
    answer = f"Uses 1.2M queries [{A}:15] and [{A}:16; {A}:15], not [x:9] or [sic]."
    args = json.dumps({"answer": answer, "sources": [f"{A}:15"]})
    for size in (1, 3, 7, 50):
        pieces, s = stream_of(args, size, {f"{A}:15", f"{A}:16"})
        assert s.streamed
        # citations side by side are one run: each passage once, in order of use; an unseen one goes
        assert "".join(pieces) == "Uses 1.2M queries [1][2], not or [sic]."
