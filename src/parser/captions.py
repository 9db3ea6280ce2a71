"""Figure and table captions: "Figure 2:", "Fig. 3.", "Table IV -"."""

from __future__ import annotations

import re

from .layout import Line

# A supplement numbers its floats "Figure S6", "Table S2".
CAPTION = re.compile(r"^(figure|fig\.?|table)\s*(?-i:S)?(\d+|[ivx]+)\s*[:.|\u2013\u2014-]", re.I)
CAPTION_LOOSE = re.compile(r"^(figure|fig\.?|table)\s*(?-i:S)?(\d+|[ivx]+)\b", re.I)
# "Algorithm 4 FIDD", "Listing 2: Decoder loop": the label of an algorithm or a code listing, set above it in bold.
FLOAT_LABEL = re.compile(r"^(algorithm|listing|procedure|pseudocode)\s*\d+\b", re.I)


def starts_caption(ln: Line, body: float) -> bool:
    """True when the line opens a caption: "Figure 2:", or "Table 3" in type smaller than the body."""
    return bool(CAPTION.match(ln.text)) or (bool(CAPTION_LOOSE.match(ln.text)) and ln.size < 0.97 * body)
