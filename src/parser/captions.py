"""Figure and table captions: "Figure 2:", "Fig. 3.", "Table IV -"."""

from __future__ import annotations

import re

from .layout import Line

CAPTION = re.compile(r"^(figure|fig\.?|table)\s*(\d+|[ivx]+)\s*[:.|\u2013\u2014-]", re.I)
CAPTION_LOOSE = re.compile(r"^(figure|fig\.?|table)\s*(\d+|[ivx]+)\b", re.I)


def starts_caption(ln: Line, body: float) -> bool:
    """True when the line opens a caption: "Figure 2:", or "Table 3" in type smaller than the body."""
    return bool(CAPTION.match(ln.text)) or (bool(CAPTION_LOOSE.match(ln.text)) and ln.size < 0.97 * body)
