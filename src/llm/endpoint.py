"""What the client and its errors say about an endpoint: its default address and replies cut to one line."""

from __future__ import annotations

import re

OPENAI_URL = "https://api.openai.com/v1"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def one_line(text: str, limit: int = 200) -> str:
    """`text` flattened to one line without control characters, cut to `limit` characters."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
