"""Claims: each sentence of an answer tied to the exact span of the chunk it rests on, with a verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paperscope.agent.pipeline import Searcher
from paperscope.answer.claims import Reading, span_boxes
from paperscope.answer.extractive import SUPPORT
from paperscope.answer.grounding import check
from paperscope.answer.model import Answer
from paperscope.answer.sentences import sentence_spans, units, units_at
from paperscope.config import Settings
from paperscope.rag.store import PaperStore, StoredChunk
from tests.pdf_text import PageWords


def test_each_unit_knows_its_span_as_printed() -> None:
    text = (
        "Large language  models are   increasingly de\u00adployed. "
        "The impro-\nvements hold across 12 tasks (see Sec. 3).\n"
        "Table 2 | Model: BERT | F1: 90.9\n\nShort. A second paragraph states that 4096 tokens fit in one window."
    )
    found = units_at(text)
    assert [u.text for u, _, _ in found] == [u.text for u in units(text)]
    for unit, start, end in found:
        printed = text[start:end].replace("\u00ad", "").replace("-\n", "")
        assert " ".join(printed.split()) == unit.text, (unit.text, printed)
    assert [u.text for u, _, _ in found][1] == "The improvements hold across 12 tasks (see Sec. 3)."
    assert found[2][0].row is not None and text[found[2][1] : found[2][2]] == "Table 2 | Model: BERT | F1: 90.9"


def test_an_answers_sentences_keep_list_items_and_abbreviations() -> None:
    text = "FlashRank labels 1.2 million queries [1], e.g. from MS MARCO [2]. It uses Fig. 3.\n\n1. First.\n- Second."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "FlashRank labels 1.2 million queries [1], e.g. from MS MARCO [2].",
        "It uses Fig. 3.",
        "1. First.",
        "- Second.",
    ]


@pytest.fixture(scope="module")
def answer(sample_kb: PaperStore) -> Answer:
    searcher = Searcher(sample_kb, Settings(home=sample_kb.settings.home))
    return searcher.answer("How many queries was FlashRank trained on?")


def chunk_of(store: PaperStore, citation: str) -> StoredChunk:
    doc_id, index = citation.rsplit(":", 1)
    [chunk] = [c for c in store.get_context_window(doc_id, int(index), 0) if c.chunk_index == int(index)]
    return chunk


def test_an_extracted_answer_is_claims_that_quote_their_chunks(answer: Answer, sample_kb: PaperStore) -> None:
    assert answer.extractive and answer.claims
    assert answer.claims[0].role == "answer" and any("1.2 million queries" in c.text for c in answer.claims)
    by_n = {s.n: s for s in answer.sources}
    for claim in answer.claims:
        assert claim.citation is not None and claim.span is not None and claim.verdict == "supported"
        chunk = chunk_of(sample_kb, claim.citation)
        assert chunk.text[claim.span[0] : claim.span[1]] == claim.text == claim.quote
        source = by_n[claim.n or 0]
        assert source.doc_id == chunk.doc_id and source.chunk_range[0] <= chunk.chunk_index <= source.chunk_range[1]
        # Where the answer's text shows it: the sentence as the reader sees it.
        assert claim.at is not None
        shown = answer.answer[claim.at[0] : claim.at[1]]
        assert " ".join(claim.text.split()).startswith(shown.removesuffix(" …")[:40])
        assert claim.boxes and all(b in chunk.metadata["boxes"] for b in claim.boxes)
    roles = [c.role for c in answer.claims]
    assert roles == sorted(roles)  # the answering claims first, the supporting ones after
    assert answer.answer.count(SUPPORT) == ("support" in roles)  # and they are said to be support, once


def test_a_claims_boxes_are_the_lines_of_its_span(sample_kb: PaperStore, sample_pdfs: dict[str, Path]) -> None:
    """A sentence of a chunk is highlighted by its own lines, not the chunk's."""
    words = PageWords(sample_pdfs["flashrank"])
    doc_id = next(p.doc_id for p in sample_kb.list_papers(brief=True) if p.title.startswith("FlashRank"))
    chunks = sample_kb.get_context_window(doc_id, 3, 3)
    chunk = next(c for c in chunks if len(c.metadata["boxes"]) >= 6)
    unit, start, end = next((u, a, b) for u, a, b in units_at(chunk.text) if len(u.text) > 80)
    boxes = span_boxes(chunk, start, end)
    assert 0 < len(boxes) < len(chunk.metadata["boxes"])
    inside = " ".join(words.inside(b["page"], b["rect"]) for b in boxes)
    said = set(re.findall(r"[a-z]{4,}", unit.text.lower()))
    assert len(said & set(re.findall(r"[a-z]{4,}", inside.lower()))) >= 0.9 * len(said)


def test_a_models_sentences_get_the_verdict_of_what_was_read(sample_kb: PaperStore) -> None:
    doc_id = next(p.doc_id for p in sample_kb.list_papers(brief=True) if p.title.startswith("FlashRank"))
    chunks = [c for c in sample_kb.get_context_window(doc_id, 3, 5) if c.kind == "chunk"]
    read = " ".join(c.text for c in chunks)
    assert "1.2 million" in read
    reading = Reading([(1, chunks)], "How many queries was FlashRank trained on?")
    text = (
        "FlashRank labels 1.2 million queries [1]. It was trained on 3.5 billion documents in 1999 [1]. "
        "The authors also studied lichens on the north side of oak trees."
    )
    report = check(text, [read], "How many queries was FlashRank trained on?")
    held, invented, unrelated = reading.claims(text, report)
    assert (held.verdict, held.n, held.role) == ("supported", 1, "answer")
    assert held.citation is not None and held.span is not None and "1.2 million" in (held.quote or "")
    assert invented.verdict == "unsupported" and "3.5 billion" in invented.missing
    assert unrelated.verdict == "unsupported"
