"""The agent loop as a LangGraph StateGraph: model node <-> tool node, bounded by max_iterations.

model --(tool calls)--> tools --> model ...   ends when the model calls `finish`, answers in plain text,
fails, or runs out of turns; out of turns, a last `wrap_up` call without tools answers from what was gathered.

Real models are imperfect, so the loop also:
- runs tool calls the model wrote as text (textcalls.py) as real calls, marked `from_text` in the trace;
- re-prompts once (`nudge`) when the model answers or finishes before it has read anything;
- stops on a model failure, keeping the error in the state: the searcher then answers without the agent.

The run's `RunState` is the graph's context (`invoke(..., context=state)`): nodes get it as `runtime.context`,
tools through the ToolRuntime the ToolNode injects. Each tool call is traced by the ToolNode's `wrap_tool_call`
wrapper (`trace_call`), which hands the step on with the call's ToolMessage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    HumanMessage,
    InvalidToolCall,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import ValidationError

from ..answer.model import TraceStep
from ..errors import LLMError
from ..llm.client import as_llm_error
from ..prompts import load_prompt
from .textcalls import enough_read, parse_text_calls
from .tools import AgentTools, FinishArgs, RunState, brief_declarations, call_args, call_step, tool_error

PARSED_FROM_TEXT = "parsed_from_text"  # response_metadata key of a reply whose calls were written as text
Execute = Callable[[ToolCallRequest], ToolMessage | Command[Any]]  # what a wrap_tool_call wrapper is handed


class AgentState(TypedDict):
    """The conversation so far, how many model turns it took, and how it ended."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    cut_short: bool
    nudged: bool
    error: LLMError | None


def initial_state(messages: list[AnyMessage]) -> AgentState:
    """The state a run starts from."""
    return AgentState(messages=messages, turns=0, cut_short=False, nudged=False, error=None)


def finish_call(message: AnyMessage) -> dict[str, Any] | None:
    """The arguments of a valid `finish` call in `message`, if it has one."""
    if not isinstance(message, AIMessage):
        return None
    for call in message.tool_calls:
        if call["name"] == "finish":
            try:
                return FinishArgs.model_validate(call["args"]).model_dump()
            except ValidationError:
                return None
    return None


def with_text_calls(reply: AIMessage, names: set[str], turn: int) -> AIMessage:
    """`reply`, or, when it has no tool call but writes some as text, the same reply with those as real calls."""
    if reply.tool_calls or reply.invalid_tool_calls:
        return reply
    found = parse_text_calls(str(reply.text), names)
    if not found:
        return reply
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for i, c in enumerate(found):
        call_id = f"text_{turn}_{i}"
        if c.args is None:
            invalid.append(InvalidToolCall(name=c.name, args=None, id=call_id, error=c.error, type="invalid_tool_call"))
        else:
            calls.append(ToolCall(name=c.name, args=c.args, id=call_id, type="tool_call"))
    # The calls replace the text: sent back to the endpoint, the turn reads as the tool calls it meant.
    return AIMessage(
        content="",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        id=reply.id,
        usage_metadata=reply.usage_metadata,
        response_metadata={**reply.response_metadata, PARSED_FROM_TEXT: True},
    )


def read_reply(model: Runnable[Any, Any], messages: list[AnyMessage], names: set[str]) -> AIMessage:
    """The model's reply, streamed; one that writes tool calls as text is cut once its first call is complete
    (closing the stream stops the generation on the server)."""
    total: AIMessageChunk | None = None
    stream = model.stream(messages)
    try:
        for chunk in stream:
            if not isinstance(chunk, AIMessageChunk):
                if isinstance(chunk, AIMessage):
                    return chunk  # a model that cannot stream hands over its whole reply
                continue
            total = chunk if total is None else total + chunk
            if not total.tool_call_chunks and enough_read(str(total.text), names):
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if total is None:
        return AIMessage(content="")
    reply = message_chunk_to_message(total)
    return reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply.content))


def without_early_finish(reply: AIMessage) -> tuple[AIMessage, bool]:
    """`reply` without a `finish` called in the same turn as other tools (an answer written before their
    results could be read: small models plan a whole chain of calls at once); True when one was dropped."""
    others = [c for c in reply.tool_calls if c["name"] != "finish"]
    if not others or len(others) == len(reply.tool_calls):
        return reply, False
    return reply.model_copy(update={"tool_calls": others}), True


def trace_call(request: ToolCallRequest, execute: Execute) -> ToolMessage | Command[Any]:
    """The ToolNode's `wrap_tool_call`: runs one call and makes its TraceStep, reported at once and handed on as
    the ToolMessage's artifact (the tool's own artifact, the citations it showed, is the step's `results`)."""
    run = cast(RunState, request.runtime.context)  # build_graph's graph always runs with one
    state = cast(AgentState, request.state)
    call, tool = request.tool_call, request.tool
    last = state["messages"][-1]
    from_text = isinstance(last, AIMessage) and bool(last.response_metadata.get(PARSED_FROM_TEXT))
    args = call_args(run, tool, call["args"]) if tool is not None else {}
    started = time.perf_counter()
    message = execute(request)
    if not isinstance(message, ToolMessage):  # a Command: none of the agent's tools returns one
        return message
    if tool is None:  # ToolNode answered it with the tool list; the trace says it plainly
        step = TraceStep(tool=call["name"], observation=f"error: unknown tool {call['name']!r}", error=True)
    else:
        step = call_step(run, call["name"], args, message, round(time.perf_counter() - started, 4))
    step.turn, step.from_text = state["turns"], from_text
    run.report(step)
    return message.model_copy(update={"artifact": step})


def build_graph(
    chat_model: BaseChatModel, tools: AgentTools, max_iterations: int, *, brief: bool = False
) -> CompiledStateGraph[AgentState, RunState, AgentState, AgentState]:
    """Compile the agent graph; run it with the run's `RunState` as context. `brief`: declare the tools to the
    model briefly (the compact contract, see `brief_declarations`); they run and validate the same."""
    bound = tools.tools()
    # The tools are declared even to a model that writes its calls as text: its chat template turns the
    # declarations into the call format it was trained on, which a prompt of our own does not match.
    model_with_tools = chat_model.bind_tools(brief_declarations(bound) if brief else bound)
    # ToolNode runs the independent calls of one turn concurrently and turns bad arguments into error messages.
    tool_node = ToolNode(bound, handle_tool_errors=tool_error, wrap_tool_call=trace_call)
    names = {t.name for t in bound}

    def call_model(state: AgentState, runtime: Runtime[RunState]) -> dict[str, Any]:
        turn = state["turns"] + 1
        try:
            reply = read_reply(model_with_tools, state["messages"], names)
        except Exception as exc:  # a failing model ends the loop; the searcher answers without it
            return {"error": as_llm_error(exc, chat_model), "turns": turn}
        if isinstance(reply, AIMessage):
            reply, dropped = without_early_finish(with_text_calls(reply, names, turn))
            if dropped:
                note = "error: finish ignored: it came with other calls, before their results were read"
                from_text = bool(reply.response_metadata.get(PARSED_FROM_TEXT))
                step = TraceStep(tool="finish", observation=note, error=True, turn=turn, from_text=from_text)
                runtime.context.record(step)
        return {"messages": [reply], "turns": turn}

    def run_tools(state: AgentState, runtime: Runtime[RunState]) -> dict[str, Any]:
        run = runtime.context
        last = state["messages"][-1]
        out: list[AnyMessage] = []
        if isinstance(last, AIMessage) and last.tool_calls:
            # Invoked inside this node, the ToolNode inherits its config and with it the run's context.
            result = tool_node.invoke(state)
            answered: list[ToolMessage] = result["messages"]
            # The ToolNode returns one message per call, in the order of the calls, each carrying the step
            # trace_call made of it (reported as the call ended, in whatever order the calls ended).
            run.trace.extend(m.artifact for m in answered)
            out.extend(answered)
        if isinstance(last, AIMessage):
            # Calls whose arguments were not even JSON never reach the ToolNode; the model must hear about them.
            turn, from_text = state["turns"], bool(last.response_metadata.get(PARSED_FROM_TEXT))
            for bad in last.invalid_tool_calls:
                reason = bad.get("error") if (bad.get("id") or "").startswith("text_") else None
                message = f"error: {bad.get('name') or 'tool call'}: {reason or 'arguments are not valid JSON'}"
                name = bad.get("name") or "?"
                run.record(TraceStep(tool=name, observation=message, error=True, turn=turn, from_text=from_text))
                out.append(ToolMessage(content=message, tool_call_id=bad.get("id") or "invalid", status="error"))
        return {"messages": out}

    def nudge(state: AgentState) -> dict[str, Any]:
        return {"messages": [HumanMessage(content=load_prompt("use_tools").format())], "nudged": True}

    def wrap_up(state: AgentState) -> dict[str, Any]:
        try:
            reply = chat_model.invoke([*state["messages"], HumanMessage(content=load_prompt("wrap_up").format())])
        except Exception as exc:  # as in call_model
            return {"error": as_llm_error(exc, chat_model), "cut_short": True}
        return {"messages": [reply], "cut_short": True}

    def after_model(state: AgentState, runtime: Runtime[RunState]) -> str:
        if state["error"] is not None:
            return END
        last = state["messages"][-1]
        calls = isinstance(last, AIMessage) and bool(last.tool_calls or last.invalid_tool_calls)
        finished = finish_call(last) is not None
        if not calls or finished:
            # An answer before reading anything is from memory: ask once for a tool call instead. (An answer
            # after reading that cites none of it is not asked again: rewriting it from the passages with
            # answer.md gives small models' answers more of the facts, see searcher.py.)
            if not runtime.context.seen and not state["nudged"] and state["turns"] < max_iterations:
                return "nudge"
            return END
        return "tools"

    def after_tools(state: AgentState) -> Literal["model", "wrap_up"]:
        return "wrap_up" if state["turns"] >= max_iterations else "model"

    graph = StateGraph(AgentState, context_schema=RunState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_node("nudge", nudge)
    graph.add_node("wrap_up", wrap_up)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["tools", "nudge", END])
    graph.add_edge("nudge", "model")
    graph.add_conditional_edges("tools", after_tools, ["model", "wrap_up"])
    graph.add_edge("wrap_up", END)
    return graph.compile()
