"""Stream the agent's final answer as the model writes it.

The answer arrives inside the JSON arguments of a structured `finish` call. `AnswerStream` decodes the
`answer` string from the growing argument text and hands on each new piece, with citations (`[P1:12]` or
`[doc_id:chunk_index]`) already renumbered [n] the way the final Answer numbers them (see citations.py),
only ids the run has seen, unseen ones dropped. Plain text (a wrap-up, or calls written as text) is not
streamed: it may turn out to be no answer at all, and is handed on whole once the run has judged it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessageChunk

from ..answer.citations import CitationStream

_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def partial_json_string(text: str, start: int) -> tuple[str, bool]:
    """Decode a JSON string body from `start` for as far as it has arrived: (text so far, closed)."""
    out: list[str] = []
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), True
        if ch == "\\":
            if i + 1 >= len(text):
                break
            code = text[i + 1]
            if code == "u":
                digits = text[i + 2 : i + 6]
                if len(digits) < 4:
                    break
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(code, code))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), False


class AnswerStream:
    """Feed it the model's message chunks; it calls `on_token` with the answer as it grows."""

    def __init__(
        self,
        seen: Mapping[str, Any],
        on_token: Callable[[str], None],
        resolve: Callable[[str], str | None] | None = None,
    ) -> None:
        """`resolve` maps a cited id to the full id of a seen chunk (None when it was not seen)."""
        self.seen = seen
        self.on_token = on_token
        self.resolve = resolve or (lambda cid: cid if cid in seen else None)
        self._text = CitationStream(self.resolve, on_token)
        self._message_id: str | None = None
        self._names: dict[int, str] = {}
        self._args: dict[int, str] = {}
        self._decoded = 0

    @property
    def streamed(self) -> bool:
        """True once any of the answer was handed on."""
        return self._text.streamed

    def feed(self, chunk: AIMessageChunk, node: str | None) -> None:
        if chunk.id != self._message_id:  # a new model reply: tool-call indexes start again
            self._message_id, self._names, self._args, self._decoded = chunk.id, {}, {}, 0
        for part in chunk.tool_call_chunks:
            index = part.get("index") or 0
            if part.get("name"):
                self._names[index] = str(part["name"])
            self._args[index] = self._args.get(index, "") + (part.get("args") or "")
            if self._names.get(index) == "finish":
                self._advance(self._args[index])

    def close(self) -> None:
        """Hand on whatever is still held back (the last sentence)."""
        self._text.close()

    def _advance(self, args: str) -> None:
        m = _ANSWER_KEY.search(args)
        if m is None:
            return
        text, closed = partial_json_string(args, m.end())
        new, self._decoded = text[self._decoded :], len(text)
        if new:
            self._emit(new)
        if closed:
            self.close()

    def _emit(self, text: str) -> None:
        self._text.feed(text)
