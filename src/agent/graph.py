"""The agent loop as a LangGraph StateGraph: model node <-> tool node, bounded by max_iterations.

model --(tool calls)--> tools --> model ...   ends when the model calls `finish`, answers in plain text,
or runs out of turns; out of turns, a last `wrap_up` call without tools answers from what was gathered.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from pydantic import ValidationError

from .tools import AgentTools, FinishArgs

WRAP_UP = (
    "You are out of turns. Answer the question now from the passages above only, citing their ids inline "
    "as [doc_id:chunk_index], and say that the search was cut short. Do not call tools."
)


class AgentState(TypedDict):
    """The conversation so far and how many model turns it took."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    cut_short: bool


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


def build_graph(chat_model: BaseChatModel, tools: AgentTools, max_iterations: int) -> CompiledStateGraph[Any]:
    """Compile the agent graph for one run (the tools carry the run's state)."""
    bound = tools.tools()
    model_with_tools = chat_model.bind_tools(bound)
    # ToolNode runs the independent calls of one turn concurrently and turns bad arguments into error messages.
    tool_node = ToolNode(bound, handle_tool_errors=tools.tool_error)
    names = {t.name for t in bound}

    def call_model(state: AgentState) -> dict[str, Any]:
        reply = model_with_tools.invoke(state["messages"])
        return {"messages": [reply], "turns": state["turns"] + 1}

    def run_tools(state: AgentState) -> dict[str, Any]:
        last = state["messages"][-1]
        out: list[AnyMessage] = []
        if isinstance(last, AIMessage) and last.tool_calls:
            for call in last.tool_calls:
                if call["name"] not in names:  # ToolNode answers these itself; the trace should show them too
                    tools.state.record_error(call["name"], f"error: unknown tool {call['name']!r}")
            result = tool_node.invoke(state)
            out.extend(result["messages"] if isinstance(result, dict) else result)
        if isinstance(last, AIMessage):
            # Calls whose arguments were not even JSON never reach the ToolNode; the model must hear about them.
            for bad in last.invalid_tool_calls:
                message = f"error: {bad.get('name') or 'tool call'}: arguments are not valid JSON"
                tools.state.record_error(bad.get("name") or "?", message)
                out.append(ToolMessage(content=message, tool_call_id=bad.get("id") or "invalid", status="error"))
        return {"messages": out}

    def wrap_up(state: AgentState) -> dict[str, Any]:
        reply = chat_model.invoke([*state["messages"], HumanMessage(content=WRAP_UP)])
        return {"messages": [reply], "cut_short": True}

    def after_model(state: AgentState) -> str:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or (not last.tool_calls and not last.invalid_tool_calls):
            return END  # a plain-text answer
        if finish_call(last) is not None:
            return END
        return "tools"

    def after_tools(state: AgentState) -> Literal["model", "wrap_up"]:
        return "wrap_up" if state["turns"] >= max_iterations else "model"

    graph = StateGraph(AgentState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_node("wrap_up", wrap_up)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["tools", END])
    graph.add_conditional_edges("tools", after_tools, ["model", "wrap_up"])
    graph.add_edge("wrap_up", END)
    return graph.compile()
