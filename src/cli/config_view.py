"""What `paperscope config` prints: every setting, its value and where it came from."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

from .. import terminal
from ..rag.kb_settings import KbSettings
from ..settings_layers import LayeredSettings, user_file
from ..terminal import markup

_COLOURS = {"default": "dim", "env": "cyan", "user": "green", "kb": "magenta", "request": "yellow"}


def shown(value: Any) -> str:
    """A value as the table shows it: text as is, None as 'unset', the rest as JSON (true, 0.85, [..])."""
    if value is None:
        return "unset"
    return value if isinstance(value, str) else json.dumps(value)


def settings_table(layered: LayeredSettings, kb: KbSettings | None) -> Table:
    """One row per setting: name, value (secrets masked), source, and the variable/file/kb it came from."""
    user = layered.layer("user")
    title = f"settings · user file {user_file(layered.settings.home)}"
    if user is None or not user.values:
        title += " (none set)"
    if kb is not None:
        model = f"{kb.embedding_model} (dim {kb.dim})" if kb.dim else str(kb.embedding_model)
        title += f"\nknowledge base {kb.kb!r}: created with embedding model {model}"
    table = Table(title=markup(title))
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source", no_wrap=True)
    table.add_column("from", overflow="fold")
    for p in layered.provenance():
        origin = "" if p.source in ("default", "request") else p.origin
        table.add_row(
            terminal.text(p.name),
            terminal.text(shown(p.value)),
            terminal.text(p.source, _COLOURS[p.source]),
            terminal.text(origin, "dim"),
        )
    return table


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
