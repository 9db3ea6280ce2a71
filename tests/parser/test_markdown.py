from __future__ import annotations

from pathlib import Path

import pytest

from paperscope.errors import ParseError
from paperscope.parser import SectionCategory, parse_markdown

Cat = SectionCategory

DOC = """---
title: Tiny Paper
authors: [Ada One, Bo Two]
venue: ICML 2022
---
# Tiny Paper

## Abstract

We study tiny things.

## 1 Introduction

Why tiny things matter.

## 2 Tiny Nets

### 2.1 Wiring

**Implementation details.** We wire them.

Figure 1: The wiring diagram.

## 3 Experiments

Table 1: Accuracy.
| Model | Acc |
| Tiny | 91.2 |

## References

[1] Someone. Something. 2020.
"""


def test_structure_from_text() -> None:
    paper = parse_markdown(DOC)
    assert paper.title == "Tiny Paper"
    assert paper.authors == ["Ada One", "Bo Two"]
    assert paper.year == 2022
    assert paper.abstract == "We study tiny things."
    assert [(s.title, s.level, s.category) for s in paper.sections] == [
        ("Abstract", 0, Cat.ABSTRACT),
        ("1 Introduction", 0, Cat.INTRODUCTION),
        ("2 Tiny Nets", 0, Cat.METHOD),
        ("2.1 Wiring", 1, Cat.METHOD),
        ("3 Experiments", 0, Cat.EVALUATION),
        ("References", 0, Cat.OTHER),
    ]
    wiring = [p for p in paper.paragraphs if p.section_id == 3]
    assert wiring[0].text.startswith("Implementation details. We wire")  # bold lead is not a heading
    assert wiring[0].captions[0] == "Figure 1: The wiring diagram."
    table = next(p for p in paper.paragraphs if p.kind == "caption" and p.text.startswith("Table 1"))
    assert "Tiny 91.2" in table.text


def test_hash_headings_are_sections_without_single_title(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Introduction\n\nText one.\n\n# Method\n\nText two.\n\n## Details\n\nMore.\n")
    paper = parse_markdown(path)
    assert paper.title == "notes"
    assert [(s.title, s.level) for s in paper.sections] == [("Introduction", 0), ("Method", 0), ("Details", 1)]


def test_plain_text_gets_one_section() -> None:
    paper = parse_markdown("Just a paragraph.\n\nAnd another one.")
    assert len(paper.sections) == 1
    assert len(paper.paragraphs) == 2


def test_empty_and_bad_front_matter(tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("   \n")
    with pytest.raises(ParseError, match=r"empty\.md: empty file"):
        parse_markdown(empty)
    bad = tmp_path / "bad.md"
    bad.write_text("---\ntitle: [unclosed\n---\n# T\n\ntext\n")
    with pytest.raises(ParseError, match=r"bad\.md: invalid YAML front matter"):
        parse_markdown(bad)


def test_fenced_code_is_one_paragraph_that_keeps_its_lines() -> None:
    paper = parse_markdown(
        "# T\n\n## Abstract\n\nShort.\n\n## 2 Code\n\nBefore.\n\n"
        "  ```python\n  # a comment, not a heading\n  def f():\n\n      return 1\n  ```\n\n"
        "Inline ```x``` stays prose.\n\n~~~\n## still code\n````\n~~~\n\n```sh\nopen to the end\n"
    )
    assert [s.title for s in paper.sections] == ["Abstract", "2 Code"]
    assert [p.text for p in paper.paragraphs if p.section_id == 1] == [
        "Before.",
        "```python\n# a comment, not a heading\ndef f():\n\n    return 1\n```",
        "Inline ```x``` stays prose.",
        "```\n## still code\n````\n```",  # a fence closes on its own character only
        "```sh\nopen to the end\n```",
    ]
