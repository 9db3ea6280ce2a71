"""Rules drawn on a page: the horizontal and vertical lines that frame and divide tables."""

from __future__ import annotations

from dataclasses import dataclass

import pymupdf


@dataclass
class Rule:
    """A horizontal rule: a drawn line or a very flat rectangle."""

    x0: float
    x1: float
    y: float


@dataclass
class VRule:
    """A vertical rule."""

    x: float
    y0: float
    y1: float


def page_rules(pdf_page: pymupdf.Page) -> tuple[list[Rule], list[VRule]]:
    """Horizontal rules at least 15 pt long and vertical rules at least 5 pt long: drawn lines, hairline
    rectangles, and the one-pixel images some converters draw rules with."""
    rules: list[Rule] = []
    verticals: list[VRule] = []

    def add(x0: float, y0: float, x1: float, y1: float) -> None:
        if y1 - y0 <= 2 and x1 - x0 >= 15:
            rules.append(Rule(x0, x1, (y0 + y1) / 2))
        elif x1 - x0 <= 2 and y1 - y0 >= 5:
            verticals.append(VRule((x0 + x1) / 2, y0, y1))

    for info in pdf_page.get_image_info():
        add(*info["bbox"])
    for path in pdf_page.get_drawings():
        for item in path["items"]:
            if item[0] == "l":
                a, b = item[1], item[2]
                add(min(a.x, b.x), min(a.y, b.y), max(a.x, b.x), max(a.y, b.y))
            elif item[0] == "re":
                r = item[1]
                add(r.x0, r.y0, r.x1, r.y1)
                if "s" in (path.get("type") or "") and r.height > 2 and r.width > 2:
                    # A stroked box (a framed table): its edges are rules.
                    add(r.x0, r.y0, r.x1, r.y0)
                    add(r.x0, r.y1, r.x1, r.y1)
                    add(r.x0, r.y0, r.x0, r.y1)
                    add(r.x1, r.y0, r.x1, r.y1)
    return _joined(rules), verticals


def _joined(rules: list[Rule]) -> list[Rule]:
    """Collinear pieces of one rule (tables drawn cell border by cell border) made one rule."""
    out: list[Rule] = []
    for r in sorted(rules, key=lambda r: (round(r.y), r.x0)):
        last = out[-1] if out else None
        if last is not None and abs(last.y - r.y) <= 1 and r.x0 <= last.x1 + 2:
            last.x1 = max(last.x1, r.x1)
        else:
            out.append(Rule(r.x0, r.x1, r.y))
    out.sort(key=lambda r: r.y)
    return out
