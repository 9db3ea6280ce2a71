"""Citation ids `<doc_id>:<chunk_index>` inside square brackets, as the agent writes them."""

from __future__ import annotations

import re

BRACKET = re.compile(r"\[([^\[\]\n]{1,400})\]")
_CITATION_ID = re.compile(r"^\s*([A-Za-z0-9_-]{1,64}):(\d{1,7})\s*$")


def ids_in(inside: str) -> list[str]:
    """Citation ids in the text of one [...] group ("a:1", "a:1, b:2", "a:1; a:2"); [] if it is not one."""
    parts = re.split(r"[,;]", inside)
    ids = [f"{m.group(1)}:{int(m.group(2))}" for p in parts if (m := _CITATION_ID.match(p))]
    return ids if len(ids) == len(parts) else []
