"""Map section headings to categories (the table in DESIGN.md) and fill the gaps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .models import SectionCategory as Cat

# Checked before the positional match: a heading such as "Background and Related Work"
# is related work, and "Appendix: Results" is appendix, whatever words come first.
_PRIORITY: list[tuple[Cat, re.Pattern[str]]] = [
    (Cat.ABSTRACT, re.compile(r"^(abstract\b|摘\s*要)")),
    (
        Cat.OTHER,
        re.compile(
            r"\b(references?|bibliography|appendi(x|ces)|acknowledge?ments?|supplementary|supplemental)\b"
            r"|参考文献|致\s*谢|附\s*录"
        ),
    ),
    (
        Cat.RELATED_WORK,
        re.compile(r"\b(related\s+work|prior\s+work|previous\s+work|literature\s+review)\b|相关工作|研究现状|文献综述"),
    ),
]

# Otherwise the keyword that comes first in the heading decides ("Results and Discussion"
# is EVALUATION, "Discussion and Future Work" is CONCLUSION). The last EVALUATION words
# (performance, benchmark, user/case study) extend the DESIGN.md table.
_POSITIONAL: list[tuple[Cat, re.Pattern[str]]] = [
    (Cat.INTRODUCTION, re.compile(r"\b(introduction|background|motivation)\b|引\s*言|绪\s*论|前\s*言|背景|简介")),
    (
        Cat.METHOD,
        re.compile(
            r"\b(methods?|methodology|approach(es)?|model(s|ing)?|architectures?|frameworks?)\b|方法|模型|框架|算法"
        ),
    ),
    (
        Cat.EVALUATION,
        re.compile(
            r"\b(experiments?|experimental|results?|evaluations?|ablations?|comparisons?|analys[ie]s"
            r"|performance|benchmarks?|user\s+stud(y|ies)|case\s+stud(y|ies))\b|实验|结果|评估|评价|分析"
        ),
    ),
    (
        Cat.CONCLUSION,
        re.compile(
            r"\b(conclusions?|concluding|discussion|summary|limitations?|future\s+work)\b|结\s*论|讨论|总结|展望"
        ),
    ),
]

# Unnumbered sections journals print after the body: named, they are headings in any type.
_BACK_MATTER = re.compile(
    r"^(acknowledge?ments?|acknowledge?ment|references?|bibliography|literature\s+cited|appendi(x|ces)"
    r"|funding(\s+(information|statement|sources))?|grant\s+disclosures|author(s|s’|s')?\s+contributions?"
    r"|contributions|competing\s+interests?|conflicts?\s+of\s+interests?|declaration\s+of\s+competing\s+interests?"
    r"|declarations|data\s+(and\s+code\s+)?availability(\s+statement)?|availability\s+of\s+data(\s+and\s+materials)?"
    r"|code\s+availability|ethics(\s+(statement|approval))?|ethical\s+(statement|approval|considerations)"
    r"|supplementary\s+(material|materials|information|data)|supplemental\s+(material|information)"
    r"|additional\s+(information|files?)|abbreviations|author\s+details|consent\s+for\s+publication"
    r"|参考文献|致\s*谢|附\s*录)$"
)

# The paper's reference list: cited titles and author names, never the paper's own evidence.
_REFERENCE_LIST = re.compile(
    r"^\s*(?:[\dIVX]+\.?\s*)?(references?|bibliography|literature\s+cited|works\s+cited|参考文献)\s*$", re.I
)


def is_reference_list(heading: str) -> bool:
    """True for a References / Bibliography heading (numbered or not)."""
    return bool(_REFERENCE_LIST.match(heading))


# A subsection keeps its parent's category unless its own heading names one of these:
# generic words like "model" or "motivation" inside a section mean nothing about its role.
_SUBSECTION_OVERRIDES = {Cat.EVALUATION, Cat.CONCLUSION, Cat.RELATED_WORK, Cat.OTHER}


def match_category(heading: str) -> Cat | None:
    """Category named by a heading (numbering already stripped), or None."""
    text = heading.lower()
    for cat, pattern in _PRIORITY:
        if pattern.search(text):
            return cat
    hits = [(m.start(), cat) for cat, pattern in _POSITIONAL if (m := pattern.search(text))]
    return min(hits)[1] if hits else None


_GLUE = re.compile(r"\b(and|of|the|&|our|proposed|materials?|set\s*up|setup|details?|study|work|remarks|)\b")


def known_heading(name: str) -> Cat | None:
    """Category of a heading that is nothing but a section name ("Results", "Related Work", "Funding")."""
    text = re.sub(r"[\s:.\u2014\u2013-]+$", "", " ".join(name.split())).lower()
    if _BACK_MATTER.match(text):
        return Cat.OTHER
    if len(text.split()) > 5 or not text:
        return None
    # Every word must be a section word or glue: "Experimental Results" yes, "Results for the cat" no.
    rest = text
    for _, pattern in (*_PRIORITY, *_POSITIONAL):
        rest = pattern.sub(" ", rest)
    if _GLUE.sub(" ", rest).strip(" ,&/"):
        return None
    return match_category(text)


@dataclass
class HeadingInfo:
    """What the classifier needs to know of one section."""

    name: str
    level: int
    parent: int | None
    appendix: bool = False


def classify_sections(headings: Sequence[HeadingInfo]) -> list[Cat]:
    """Categories for a list of sections in reading order.

    Rules: own match first; subsections inherit; anything after References, or
    numbered as an appendix, is OTHER; an unmatched top-level section between the
    Introduction and the first Evaluation section is METHOD; the rest is OTHER.
    """
    own = [match_category(h.name) for h in headings]
    top = [i for i, h in enumerate(headings) if h.parent is None]
    first_intro = next((i for i in top if own[i] is Cat.INTRODUCTION), None)
    # METHOD fills the gap up to the first Evaluation section (or, without one, up to the
    # Conclusion or the back matter).
    method_end = next((i for i in top if own[i] is Cat.EVALUATION), None)
    if method_end is None:
        method_end = next((i for i in top if own[i] in (Cat.CONCLUSION, Cat.OTHER)), None)
    after_refs = False
    cats: list[Cat] = []
    for i, h in enumerate(headings):
        cat: Cat
        if h.parent is None:
            if after_refs or h.appendix:
                cat = Cat.OTHER
            elif own[i] is not None:
                cat = own[i]  # type: ignore[assignment]
            elif first_intro is not None and i > first_intro and (method_end is None or i < method_end):
                cat = Cat.METHOD
            else:
                cat = Cat.OTHER
            if own[i] is Cat.OTHER and re.search(r"\b(references?|bibliography)\b", h.name.lower()):
                after_refs = True
        else:
            parent_cat = cats[h.parent]
            mine = own[i]
            if parent_cat is not Cat.OTHER and mine in _SUBSECTION_OVERRIDES:
                cat = mine  # type: ignore[assignment]
            else:
                cat = parent_cat
        cats.append(cat)
    return cats
