"""A scripted chat model for unit tests: replays canned replies in order and records what it was asked.

    model = ScriptedChatModel([tool_call("search_abstracts", {"query": "kv cache"}), final("Done.")])
    graph_or_chain.invoke(...)
    assert model.calls[0][-1].content == "..."

Each scripted step is an `AIMessage`, a callable ``(messages) -> AIMessage`` (to answer from the input), or an
exception instance (raised, to simulate a failing endpoint). Running past the end of the script is an
AssertionError that says how many replies were scripted. `bind_tools` (and therefore
``with_structured_output(..., method="function_calling")``) returns a copy that shares the script and the call
log, so the test can keep a handle on the original model.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, InvalidToolCall, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

# The tool contract of ../shared/DESIGN.md: the five tools every agent run binds, by name.
DESIGN_TOOLS = frozenset(
    {"search_abstracts", "search_by_section", "get_context_window", "get_paper_introduction", "finish"}
)

Step: TypeAlias = AIMessage | Callable[[list[BaseMessage]], AIMessage] | BaseException

_ids = itertools.count(1)


def _call_id() -> str:
    return f"call_{next(_ids)}"


def tool_call(name: str, args: dict[str, Any], id: str | None = None, *, content: str = "") -> AIMessage:
    """An assistant reply calling one tool."""
    return tool_calls((name, args, id), content=content)


Call: TypeAlias = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str | None]


def tool_calls(*calls: Call, content: str = "") -> AIMessage:
    """An assistant reply calling several tools at once: ``tool_calls(("a", {...}), ("b", {...}, "id"))``."""
    built: list[ToolCall] = []
    for call in calls:
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 else None
        built.append(ToolCall(name=name, args=dict(args), id=call_id or _call_id(), type="tool_call"))
    return AIMessage(content=content, tool_calls=built)


def invalid_tool_call(name: str, raw_args: str, id: str | None = None) -> AIMessage:
    """An assistant reply whose tool-call arguments are not valid JSON (as a real endpoint can send)."""
    bad = InvalidToolCall(name=name, args=raw_args, id=id or _call_id(), error="invalid JSON", type="invalid_tool_call")
    return AIMessage(content="", invalid_tool_calls=[bad])


def final(text: str) -> AIMessage:
    """A plain-text assistant reply with no tool call."""
    return AIMessage(content=text)


@dataclass
class _Script:
    """State shared by a model and its tool-bound copies."""

    steps: list[Step]
    position: int = 0
    calls: list[list[BaseMessage]] = field(default_factory=list)
    call_tools: list[list[str]] = field(default_factory=list)


class ScriptedChatModel(BaseChatModel):
    """Replays `steps` one per model call; see the module docstring."""

    _script: _Script = PrivateAttr()
    _bound_tools: list[str] = PrivateAttr(default_factory=list)
    _tool_choice: Any = PrivateAttr(default=None)

    def __init__(self, steps: Sequence[Step] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._script = _Script(steps=list(steps))

    @property
    def _llm_type(self) -> str:
        return "scripted"

    # -- inspection ----------------------------------------------------------------------------------------

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """Input messages of every call so far (shared with tool-bound copies)."""
        return self._script.calls

    @property
    def call_tools(self) -> list[list[str]]:
        """Names of the tools bound at each call."""
        return self._script.call_tools

    @property
    def bound_tools(self) -> list[str]:
        """Names of the tools bound to this copy (empty on the original model)."""
        return list(self._bound_tools)

    @property
    def tool_choice(self) -> Any:
        """The tool_choice given to `bind_tools` ("any" for structured output)."""
        return self._tool_choice

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script.steps) - self._script.position

    def add(self, *steps: Step) -> None:
        """Append replies to the script."""
        self._script.steps.extend(steps)

    # -- the model -----------------------------------------------------------------------------------------

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> ScriptedChatModel:
        """A copy with `tools` bound; it shares the script and call log with this model."""
        bound = self.model_copy()
        # model_copy copies the private dict shallowly: _script stays shared, the tool list is the copy's own.
        bound._bound_tools = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        bound._tool_choice = tool_choice
        return bound

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        script = self._script
        script.calls.append(list(messages))
        script.call_tools.append(list(self._bound_tools))
        if script.position >= len(script.steps):
            last = str(messages[-1].content)[-300:] if messages else ""
            raise AssertionError(
                f"ScriptedChatModel ran out of replies: call #{len(script.calls)} but only "
                f"{len(script.steps)} scripted; end of the last input message: {last!r}"
            )
        step = script.steps[script.position]
        script.position += 1
        if isinstance(step, BaseException):
            raise step
        reply = step(list(messages)) if callable(step) else step
        if not isinstance(reply, AIMessage):
            raise AssertionError(f"scripted step #{script.position} produced {type(reply).__name__}, not AIMessage")
        # A copy, so the graph/langchain may set ids or metadata without altering the script.
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy(deep=True))])
