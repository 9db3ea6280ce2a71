"""The sample corpus: every PDF must parse back to the structure of its Markdown source."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
import yaml

from paperscope.parser import Paper, SectionCategory, parse_markdown, parse_pdf
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.tokens import local_token_counter

Cat = SectionCategory


def _front_matter(source: Path) -> dict[str, object]:
    text = source.read_text(encoding="utf-8")
    return dict(yaml.safe_load(text.split("---")[1]))


def _prose(text: str) -> bool:
    words = text.split()
    return sum(w[0].isalpha() for w in words) >= 0.6 * len(words)


def _body_words(paper: Paper) -> list[str]:
    # Tables float in the rendered PDFs (full-width ones break the column order), so
    # captions and table cells are checked separately; running text must survive word for word.
    return " ".join(p.text for p in paper.paragraphs if p.kind == "body" and _prose(p.text)).split()


@pytest.fixture(scope="module")
def parsed(sample_pdfs: dict[str, Path], sample_sources: list[Path]) -> dict[str, tuple[Paper, Paper]]:
    return {s.stem: (parse_pdf(sample_pdfs[s.stem]), parse_markdown(s)) for s in sample_sources}


def test_every_heading_found_with_level_and_category(parsed: dict[str, tuple[Paper, Paper]]) -> None:
    for slug, (pdf, md) in parsed.items():
        got = [(s.title, s.level, s.category) for s in pdf.sections]
        want = [(s.title, s.level, s.category) for s in md.sections]
        assert got == want, slug


def test_metadata(parsed: dict[str, tuple[Paper, Paper]], sample_sources: list[Path]) -> None:
    for source in sample_sources:
        meta = _front_matter(source)
        pdf, _ = parsed[source.stem]
        assert pdf.title == meta["title"], source.stem
        venue_year = int(str(meta["venue"]).split()[-1])
        assert pdf.year == venue_year, source.stem
        assert len(pdf.abstract.split()) > 100, source.stem
        assert pdf.sections[0].category is Cat.ABSTRACT


def test_running_text_survives(parsed: dict[str, tuple[Paper, Paper]], sample_sources: list[Path]) -> None:
    """Reading order, de-hyphenation, no headers/footers/page or line numbers in the text."""
    for source in sample_sources:
        pdf, md = parsed[source.stem]
        short_title = str(_front_matter(source).get("short_title", ""))
        got, want = _body_words(pdf), _body_words(md)
        ratio = difflib.SequenceMatcher(None, got, want, autojunk=False).ratio()
        assert ratio > 0.985, f"{source.stem}: body text differs from the source (ratio {ratio:.3f})"
        # A running header that leaked would add one mention of the short title per page.
        assert got.count(short_title) == want.count(short_title), f"{source.stem}: running header in the text"
        assert " ".join(got).count(str(_front_matter(source)["venue"])) == " ".join(want).count(
            str(_front_matter(source)["venue"])
        )


def test_hyphenated_words_are_joined(parsed: dict[str, tuple[Paper, Paper]]) -> None:
    pdf_words = {w for pdf, _ in parsed.values() for w in _body_words(pdf)}
    md_words = {w for _, md in parsed.values() for w in _body_words(md)}
    broken = {w for w in pdf_words - md_words if w.rstrip(".,;:").endswith("-")}
    assert not broken, f"words left split at a line break: {sorted(broken)[:10]}"


def test_captions_are_blocks_tied_to_paragraphs(parsed: dict[str, tuple[Paper, Paper]]) -> None:
    for slug, (pdf, md) in parsed.items():
        # A table read as a table is a block of its own that holds its caption.
        captions = [p for p in pdf.paragraphs if p.kind in ("caption", "table")]
        assert len(captions) == len([p for p in md.paragraphs if p.kind == "caption"]), slug
        tied = [c for p in pdf.paragraphs for c in p.captions]
        assert len(tied) == len(captions), slug
        assert all(c.text.split(":")[0].split()[0] in ("Figure", "Table") for c in captions)


def _source_tables(source: Path) -> dict[str, list[list[str]]]:
    """The tables of a Markdown source: "Table N:" caption lines and the |-rows under them (header first)."""
    tables: dict[str, list[list[str]]] = {}
    label = None
    for line in source.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^(Table \d+):", line):
            label = m.group(1)
            tables[label] = []
        elif label and line.startswith("|"):
            tables[label].append([c.strip() for c in line.strip().strip("|").split("|")])
        else:
            label = None
    return tables


def test_tables_read_cell_for_cell(parsed: dict[str, tuple[Paper, Paper]], sample_sources: list[Path]) -> None:
    """Every table of the rendered corpus comes back with its header and every cell, row by row, and its
    cells are no longer loose paragraphs."""
    total = 0
    for source in sample_sources:
        pdf, _ = parsed[source.stem]
        got = {t.label: [t.header, *t.rows] for t in pdf.tables}
        want = _source_tables(source)
        assert got == want, source.stem
        total += len(want)
        for p in pdf.paragraphs:
            if p.kind == "table":
                assert p.table is not None and p.text.startswith(p.table.caption)
                assert len(p.text.splitlines()) == 1 + len(p.table.rows)
        loose = " ".join(p.text for p in pdf.paragraphs if p.kind == "body")
        for rows in want.values():
            for row in rows[1:]:
                assert " ".join(row) not in loose, (source.stem, row)
    assert total == 36


def test_method_section_named_by_paper_is_method(parsed: dict[str, tuple[Paper, Paper]]) -> None:
    expected = {
        "flashrank": "3 FlashRank",
        "blendir": "III. ADAPTIVE FUSION",
        "switchback": "3 Routing by Feedback",
    }
    for slug, title in expected.items():
        pdf, _ = parsed[slug]
        section = next(s for s in pdf.sections if s.title == title)
        assert section.category is Cat.METHOD


def test_chunk_index_continuous(parsed: dict[str, tuple[Paper, Paper]]) -> None:
    counter = local_token_counter()
    for slug, (pdf, _) in parsed.items():
        chunks = chunk_paper(pdf, counter)
        assert [c.chunk_index for c in chunks] == list(range(len(chunks))), slug
        assert chunks[0].section_category is Cat.ABSTRACT
