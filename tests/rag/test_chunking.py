"""Every chunking strategy: continuous chunk_index, section-bounded, within the model window."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paperscope.errors import ChunkingError
from paperscope.parser import Paper, parse_markdown, parse_pdf
from paperscope.rag.chunking import ChunkOptions, chunk_paper, context_header, max_chars
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.registry import names
from paperscope.rag.tokens import local_token_counter
from tests.pdf_text import PageWords

LONG = " ".join(f"Sentence number {i} explains one more detail of the retrieval pipeline." for i in range(120))

DOC = f"""# Chunky Paper

## Abstract

A short abstract about chunking.

## 1 Introduction

First paragraph of the introduction.

Second paragraph of the introduction.

## 2 Method

{LONG}

Figure 1: Pipeline overview.

### 2.1 A Subsection With A Rather Long Title About Windows

Short text.

## 3 Experiments

Results are good.
"""


@pytest.fixture(scope="module")
def paper() -> Paper:
    return parse_markdown(DOC)


@pytest.mark.parametrize("strategy", names("chunker"))
def test_invariants(paper: Paper, strategy: str, local_embedder: CachedEmbedder) -> None:
    counter = local_token_counter()
    chunks = chunk_paper(paper, counter, strategy, ChunkOptions(embed=local_embedder.embed_documents))
    body = [c for c in chunks if c.kind == "chunk"]
    assert [c.chunk_index for c in body] == list(range(len(body)))
    for c in body:
        assert counter.count(c.index_text) <= counter.max_tokens, (strategy, c.chunk_index)
        section = paper.sections[c.metadata["section_id"]]
        assert c.section_title == section.title
        assert c.index_text.startswith(context_header(paper, section) + "\n")
        section_text = " ".join(p.text for p in paper.paragraphs if p.section_id == section.id)
        for word in c.text.split()[:5]:  # never crosses a section boundary
            assert word in section_text
        assert c.metadata["strategy"] == strategy
        assert c.metadata["boxes"] == []  # Markdown has no page to point at
    assert {c.section_title for c in body} >= {"Abstract", "1 Introduction", "2 Method", "3 Experiments"}


def test_recursive_splits_long_paragraph_with_overlap(paper: Paper) -> None:
    chunks = chunk_paper(paper, local_token_counter(), "recursive", ChunkOptions(chunk_size=120, overlap=30))
    method = [c for c in chunks if c.section_title == "2 Method" and not c.metadata["is_caption"]]
    assert len(method) >= 3
    last_sentence = method[0].text.split(". ")[-1]
    assert last_sentence in method[1].text  # overlap carries the tail over


def test_captions_are_chunks_and_metadata(paper: Paper) -> None:
    chunks = chunk_paper(paper, local_token_counter())
    caption = [c for c in chunks if c.metadata["is_caption"]]
    assert [c.text for c in caption] == ["Figure 1: Pipeline overview."]
    assert any("Figure 1: Pipeline overview." in c.metadata["captions"] for c in chunks if not c.metadata["is_caption"])


def test_parent_child_links(paper: Paper) -> None:
    chunks = chunk_paper(paper, local_token_counter(), "parent_child", ChunkOptions(parent_size=300, child_size=100))
    parents = {c.chunk_index: c for c in chunks if c.kind == "parent"}
    children = [c for c in chunks if c.kind == "chunk"]
    assert parents and children
    for child in children:
        parent = parents[child.metadata["parent_index"]]
        assert parent.section_title == child.section_title
        assert child.text.split()[0] in parent.text


def test_unknown_strategy(paper: Paper) -> None:
    with pytest.raises(ChunkingError, match="unknown chunking strategy 'nope'"):
        chunk_paper(paper, local_token_counter(), "nope")


@pytest.mark.parametrize("strategy", names("chunker"))
def test_a_huge_word_is_cut_to_what_the_chunker_promises(strategy: str, local_embedder: CachedEmbedder) -> None:
    """The tokenizer counts a 50,000-character word as one unknown token: the character cap cuts it."""
    blob = "x" * 46_000 + "数据" * 2_000  # 50,000 characters: one unknown token, then unspaced CJK
    paper = parse_markdown(
        f"# Blob Paper\n\n## Abstract\n\nA short abstract.\n\n## 1 Data\n\nThe blob: {blob} ends here.\n"
    )
    counter = local_token_counter()
    options = ChunkOptions(chunk_size=200, parent_size=2000, embed=local_embedder.embed_documents)
    chunks = chunk_paper(paper, counter, strategy, options)
    for c in chunks:
        budget = 2000 if c.kind == "parent" else counter.max_tokens
        assert len(c.text) <= max_chars(budget) and len(c.index_text.encode()) < 65_535, (c.kind, len(c.text))
        assert counter.count(c.index_text if c.kind == "chunk" else c.text) <= budget, (c.kind, c.chunk_index)
    body = "".join(c.text.replace(" ", "") for c in chunks if c.kind == "chunk" and c.section_title == "1 Data")
    assert blob in body  # cut, not lost


@pytest.mark.parametrize("strategy", names("chunker"))
def test_pdf_chunks_point_at_their_lines(
    sample_pdfs: dict[str, Path], strategy: str, local_embedder: CachedEmbedder
) -> None:
    """Every chunk of a PDF carries the boxes of the lines its text came from, on its own pages."""
    pdf = sample_pdfs["flashrank"]
    paper = parse_pdf(pdf)
    chunks = chunk_paper(paper, local_token_counter(), strategy, ChunkOptions(embed=local_embedder.embed_documents))
    words = PageWords(pdf)
    for c in chunks:
        boxes = c.metadata["boxes"]
        assert boxes, (strategy, c.chunk_index)
        assert {b["page"] for b in boxes} <= set(range(c.page_number, c.metadata["page_end"] + 1))
        # The first word printed on the page (a table row's text begins with its label and column names).
        text = re.sub(r"(^|\n)Table \d+ \|", " ", c.text)
        first = next(w for w in text.split() if w != "|" and not w.endswith(":"))
        inside = " ".join(words.inside(b["page"], b["rect"]) for b in boxes)
        assert first.rstrip("-") in inside, (strategy, c.chunk_index, first)
    if strategy == "recursive":
        # A paragraph cut across chunks: each part gets the lines it holds, not the whole paragraph's.
        longest = max(paper.paragraphs, key=lambda p: len(p.boxes))
        parts = [c for c in chunks if c.kind == "chunk" and c.text.split()[-1] in longest.text]
        assert any(0 < len(c.metadata["boxes"]) < len(longest.boxes) for c in parts)


def test_each_line_says_where_its_text_starts_in_the_chunk(shared_papers: Path) -> None:
    """`box_starts`: the offset in a chunk's text where each box's line begins, so a span of the text (a claim) is
    drawn by its own lines; the text from one start to the next is on that line."""
    pdf = shared_papers / "osdi2004_mapreduce.pdf"
    words = PageWords(pdf)
    lines = aligned = 0
    for c in chunk_paper(parse_pdf(pdf), local_token_counter()):
        boxes, starts = c.metadata["boxes"], c.metadata["box_starts"]
        assert len(starts) == len(boxes) and starts == sorted(starts) and all(0 <= s < len(c.text) for s in starts)
        for i, box in enumerate(boxes):
            said = set(
                re.findall(r"[a-z]{4,}", c.text[starts[i] : starts[i + 1] if i + 1 < len(starts) else None].lower())
            )
            if said:
                lines += 1
                printed = set(re.findall(r"[a-z]{4,}", words.inside(box["page"], box["rect"]).lower()))
                aligned += len(said & printed) >= 0.7 * len(said)
    assert lines > 500 and aligned >= 0.95 * lines
