"""Tool calls written as text: what models that do not emit structured `tool_calls` write instead.

Recognised, in this order (the first form found wins):

- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (closing tag optional);
- ``<function=NAME>{...}</function>`` or ``<function=NAME><parameter=KEY>VALUE</parameter></function>``;
- ``<function name="NAME" arguments='{...}'/>``, alone or inside ``<tools>...</tools>``;
- Llama 3: ``<|python_tag|>{"name": ..., "parameters": {...}}`` or ``<|python_tag|>NAME.call(key="value")``;
- a JSON object (fenced in a code block or bare) with ``name`` and ``arguments`` / ``parameters``, or an
  OpenAI-style ``{"function": {"name": ..., "arguments": ...}}``; a bare ``{"answer": ..., "sources": [...]}``
  is a `finish` call. Bare and fenced JSON must name one of the tools, so JSON inside an answer is not a call.

A copied tool schema (``parameters`` holding a JSON schema, or a ``description`` beside it) is not a call.
Arguments are only decoded here; they are validated by the same tool schemas as structured calls.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

FINISH = "finish"


@dataclass(frozen=True)
class TextCall:
    """One call found in text: `args` is None when they could not be decoded (`error` says why)."""

    name: str
    args: dict[str, Any] | None
    error: str | None = None


_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNCTION_EQ = re.compile(r"<function=([A-Za-z_][\w.-]*)>\s*(.*?)\s*(?:</function>|(?=<function[=\s])|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([A-Za-z_]\w*)>\s*(.*?)\s*(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_FUNCTION_TAG = re.compile(r"<function\s+([^<>]*?)\s*(/>|>(.*?)</function>|>)", re.S)
_ATTR = re.compile(r"""([A-Za-z_]\w*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""", re.S)
_PYTHON_TAG = re.compile(r"<\|python_tag\|>(.*?)(?:<\|eom_id\|>|<\|eot_id\|>|\Z)", re.S)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)


def parse_text_calls(text: str, tool_names: Collection[str]) -> list[TextCall]:
    """The tool calls written in `text` ([] when it holds none)."""
    if not text or not text.strip():
        return []
    for found in (
        _hermes(text, tool_names),
        _function_eq(text),
        _function_tags(text),
        _python_tag(text, tool_names),
        _fenced(text, tool_names),
        _bare_json(text, tool_names),
    ):
        if found:
            return found
    return []


_CLOSED = re.compile(r"(</tool_call>|</tools>|</function>|<\|eom_id\|>|<\|eot_id\|>|/>|[}\])]|```)\s*\Z")


def enough_read(text: str, tool_names: Collection[str]) -> bool:
    """True once `text` (a reply still arriving) holds a whole call, or a whole copied tool schema: enough to
    stop reading it.

    Small models write a chain of calls in one reply, the later ones guessing at results they have not seen,
    or copy out every tool declaration, at a few tokens a second on a laptop: the first complete call is the
    one worth running, and a copied schema already says the reply holds none.
    """
    if _CLOSED.search(text) is None:
        return False
    if any(c.args is not None for c in parse_text_calls(text, tool_names)):
        return True
    return any(_is_declaration(obj) for obj in _json_objects(text))


def looks_like_a_call(text: str) -> bool:
    """True when `text` carries tool-call or tool-schema markup: never show it to a user as an answer."""
    markers = (
        "<tool_call",
        "</tool_call",
        "<tool_response",  # echoed back from the chat template's rendering of tool results
        "<function",
        "<tools>",
        "<|python_tag|>",
        '"arguments"',
        '"parameters"',
    )
    return any(m in text for m in markers)


# --- the forms -----------------------------------------------------------------------------------------------


def _hermes(text: str, names: Collection[str]) -> list[TextCall]:
    calls: list[TextCall] = []
    for m in _TOOL_CALL.finditer(text):
        body = m.group(1).strip()
        inner = _function_eq(body) or _function_tags(body)
        if inner:
            calls += inner
            continue
        obj, error = _first_json(body)
        if obj is None:
            if body:
                calls.append(TextCall(_name_guess(body), None, error or "arguments are not valid JSON"))
            continue
        for item in obj if isinstance(obj, list) else [obj]:
            call = _from_object(item, names, tagged=True)
            if call is not None:
                calls.append(call)
    return calls


def _function_eq(text: str) -> list[TextCall]:
    calls: list[TextCall] = []
    for m in _FUNCTION_EQ.finditer(text):
        name, body = m.group(1), m.group(2).strip()
        params = {p.group(1): _scalar(p.group(2)) for p in _PARAMETER.finditer(body)}
        if params:
            calls.append(TextCall(name, params))
        elif not body:
            calls.append(TextCall(name, {}))
        else:
            calls.append(_decoded(name, body))
    return calls


def _function_tags(text: str) -> list[TextCall]:
    calls: list[TextCall] = []
    for m in _FUNCTION_TAG.finditer(text):
        attrs = {
            a.group(1): html.unescape(a.group(2) if a.group(2) is not None else a.group(3))
            for a in _ATTR.finditer(m.group(1))
        }
        name = attrs.get("name")
        if not name:
            continue
        raw = attrs.get("arguments", attrs.get("parameters"))
        body = (m.group(3) or "").strip()
        if raw is None and body:
            raw = body
        if raw is None:
            calls.append(TextCall(name, {}))
            continue
        call = _decoded(name, raw)
        if call.args is not None and _is_schema(call.args):
            continue  # <function name=... parameters={schema}>: a copied declaration
        calls.append(call)
    return calls


def _python_tag(text: str, names: Collection[str]) -> list[TextCall]:
    calls: list[TextCall] = []
    for m in _PYTHON_TAG.finditer(text):
        body = m.group(1).strip()
        objects = list(_json_objects(body))
        if objects:
            calls += [c for obj in objects if (c := _from_object(obj, names, tagged=True)) is not None]
            continue
        calls += _python_calls(body)
    return calls


def _fenced(text: str, names: Collection[str]) -> list[TextCall]:
    calls: list[TextCall] = []
    for m in _FENCE.finditer(text):
        calls += [c for obj in _json_objects(m.group(1)) if (c := _from_object(obj, names, tagged=False)) is not None]
    return calls


def _bare_json(text: str, names: Collection[str]) -> list[TextCall]:
    return [c for obj in _json_objects(text) if (c := _from_object(obj, names, tagged=False)) is not None]


# --- pieces ------------------------------------------------------------------------------------------------


def _from_object(obj: Any, names: Collection[str], *, tagged: bool) -> TextCall | None:
    """A call from a decoded JSON value, or None when it is not one (a schema, or an unknown name untagged)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        return _from_object(obj["function"], names, tagged=tagged)
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        if "answer" in obj and "sources" in obj and FINISH in names:
            return TextCall(FINISH, {"answer": obj["answer"], "sources": obj["sources"]})
        return None
    if not tagged and name not in names:
        return None
    if "arguments" in obj:
        raw = obj["arguments"]
    elif "parameters" in obj:
        raw = obj["parameters"]
    elif "args" in obj:
        raw = obj["args"]
    else:
        return None if not tagged else TextCall(name, {})
    if "description" in obj and isinstance(raw, dict) and _is_schema(raw):
        return None
    if isinstance(raw, dict):
        return None if _is_schema(raw) else TextCall(name, raw)
    if isinstance(raw, str):
        return _decoded(name, raw)
    if raw is None:
        return TextCall(name, {})
    return TextCall(name, None, "arguments must be a JSON object")


def _decoded(name: str, raw: str) -> TextCall:
    """A call whose arguments are a JSON object written as a string."""
    obj, error = _first_json(raw)
    if isinstance(obj, dict):
        return TextCall(name, obj)
    return TextCall(name, None, error or "arguments must be a JSON object")


def _is_declaration(obj: Any) -> bool:
    """A copied tool declaration: {"type": "function", "function": {... "parameters": schema}} or its inner part."""
    if not isinstance(obj, dict):
        return False
    function = obj.get("function")
    inner: dict[str, Any] = function if isinstance(function, dict) else obj
    params = inner.get("parameters")
    return isinstance(inner.get("name"), str) and isinstance(params, dict) and _is_schema(params)


def _is_schema(args: dict[str, Any]) -> bool:
    """A JSON schema rather than argument values: what a model copies from the tool declarations."""
    props = args.get("properties")
    return isinstance(props, dict) and (args.get("type") == "object" or "required" in args)


def _json_objects(text: str) -> Iterator[Any]:
    """Every JSON object (or the items of a JSON list) in `text`, outermost first, left to right.

    Scanning from each "{" also finds objects that a model wrapped in extra braces ("{{...}}").
    """
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text):
        start = min((p for p in (text.find("{", i), text.find("[", i)) if p != -1), default=-1)
        if start == -1:
            return
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        if isinstance(value, list):
            yield from (v for v in value if isinstance(v, dict))
        elif isinstance(value, dict):
            yield value
        i = end


def _first_json(text: str) -> tuple[Any, str | None]:
    """The first JSON value in `text`, or (None, why not)."""
    text = text.strip()
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        first = next(_json_objects(text), None)
        if first is not None:
            return first, None
        return None, f"arguments are not valid JSON ({exc.msg})"


def _scalar(value: str) -> Any:
    """A <parameter> value: JSON when it parses (numbers, lists), else the text itself."""
    value = value.strip()
    try:
        return json.loads(value)
    except ValueError:
        return value


def _name_guess(body: str) -> str:
    m = re.search(r'"name"\s*:\s*"([^"]{1,64})"', body)
    return m.group(1) if m else "tool call"


def _python_calls(text: str) -> list[TextCall]:
    """``name(key=value, ...)`` or ``name.call(...)`` statements with literal keyword values."""
    try:
        tree = ast.parse(text.strip())
    except SyntaxError:
        return []
    calls: list[TextCall] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = _python_call(stmt.value)
            if call is not None:
                calls.append(call)
    return calls


def _python_call(node: ast.Call) -> TextCall | None:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "call" and isinstance(func.value, ast.Name):
        name = func.value.id
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        return None
    if node.args:
        return TextCall(name, None, "write arguments as key=value pairs")
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return TextCall(name, None, "write arguments as key=value pairs")
        try:
            args[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            return TextCall(name, None, f"argument {kw.arg} is not a literal value")
    return TextCall(name, args)
