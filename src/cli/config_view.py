"""What `paperscope config` prints: every setting, its value and where it came from."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from rich.console import Group, RenderableType
from rich.text import Text

from .. import terminal
from ..config import Settings
from ..rag.kb_settings import KbSettings
from ..settings_layers import LayeredSettings, user_file

INDENT = 4  # columns a description is indented under its setting
_COLOURS = {"default": "dim", "env": "cyan", "user": "green", "kb": "magenta", "request": "yellow"}


def shown(value: Any) -> str:
    """A value as the table shows it: text as is, None as 'unset', the rest as JSON (true, 0.85, [..])."""
    if value is None:
        return "unset"
    return value if isinstance(value, str) else json.dumps(value)


def describe(name: str) -> str:
    """The description a setting's Field gives (`retrieval.k`, `home`), or "" for a name Settings does not have."""
    part, _, field = name.partition(".")
    info = Settings.model_fields.get(part)
    if info is None:
        return ""
    if field:
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return ""
        info = model.model_fields.get(field)
    return (info.description or "") if info is not None else ""


def settings_view(layered: LayeredSettings, kb: KbSettings | None) -> Group:
    """Every setting as a researcher reads it at any width, piped too: its name, value and where it came from on
    one line, its description wrapped and indented under it; the settings grouped by part with the part's own
    description. A table squeezed its description column to a few characters at 80 columns (or, piped, ran
    hundreds of characters wide), so there is none."""
    user = layered.layer("user")
    title = f"settings · user file {user_file(layered.settings.home)}"
    if user is None or not user.values:
        title += " (none set)"
    lines: list[RenderableType] = [_line(terminal.text(title, "bold"))]
    if kb is not None:
        model = f"{kb.embedding_model} (dim {kb.dim})" if kb.dim else str(kb.embedding_model)
        lines.append(_line(terminal.text(f"knowledge base {kb.kb!r}: created with embedding model {model}")))
    part = None
    for p in layered.provenance():
        group = p.name.partition(".")[0] if "." in p.name else ""
        if group != part or part is None:
            part = group
            lines.append(Text())
            if group:
                lines.append(_line(terminal.text(f"[{group}] ", "bold") + terminal.text(describe(group), "dim")))
        origin = "" if p.source in ("default", "request") else f": {p.origin}"
        line = Text.assemble(
            terminal.text(p.name, "bold"),
            " = ",
            terminal.text(shown(p.value)),
            "  (",
            terminal.text(p.source, _COLOURS[p.source]),
            terminal.text(origin, "dim"),
            ")",
        )
        lines.append(_line(line))
        lines.append(terminal.Indented(terminal.text(describe(p.name)), INDENT))
    return Group(*lines)


def _line(text: Text) -> terminal.Indented:
    """A line of its own, wrapped where it is longer than the width (a long path) two columns in: apart from the
    descriptions, four columns in."""
    return terminal.Indented(text, 2, hanging=True)


def changes_lines(kb: KbSettings, set_values: dict[str, Any], unset: list[str], before: KbSettings) -> list[str]:
    """What `config --set/--unset` did, one line each."""
    lines = [f"knowledge base {kb.kb!r}: {name} = {shown(kb.overrides[name])}" for name in set_values]
    for name in unset:
        if name in before.overrides:
            back = kb.created.get(name)
            after = f" (back to {shown(back)}, as created)" if name in kb.created else ""
            lines.append(f"knowledge base {kb.kb!r}: {name} unset{after}")
        else:
            lines.append(f"knowledge base {kb.kb!r}: {name} was not set for it; nothing to unset")
    return lines
