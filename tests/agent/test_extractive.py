"""Extractive answers: the paper's own reference numbers never pass for our citations."""

from __future__ import annotations

import pytest

from paperscope.agent.extractive import extractive_answer, strip_references
from paperscope.parser.models import SectionCategory
from paperscope.rag.context import Evidence
from paperscope.rag.store import StoredChunk


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Dense retrieval [1] beats BM25 [2, 5].", "Dense retrieval beats BM25."),
        ("Prior work [12–14] and [3-4; 9] agrees.", "Prior work and agrees."),
        ("[7] showed it first.", "showed it first."),
        ("Scores lie in [0, 1] and [0.5, 2].", "Scores lie in [0, 1] and [0.5, 2]."),  # intervals stay
        ("See Table [A] and x[i] for details.", "See Table [A] and x[i] for details."),
    ],
)
def test_reference_numbers_are_stripped(sentence: str, expected: str) -> None:
    assert strip_references(sentence) == expected


def test_an_extractive_answer_cites_only_our_sources() -> None:
    text = "FlashRank distils a listwise teacher [4] into small cross-encoders [5, 8]. It runs on a CPU [12–14]."
    chunk = StoredChunk(
        id=1,
        doc_id="d" * 8,
        title="FlashRank",
        year=2023,
        chunk_index=0,
        text=text,
        index_text=text,
        section_title="3 Method",
        parent_section="",
        section_category=SectionCategory.METHOD,
        hierarchy_level=0,
        page_number=2,
    )
    evidence = [Evidence(doc_id="d" * 8, title="FlashRank", year=2023, chunks=[chunk], hits=[0], score=1.0, rank=0)]
    answer = extractive_answer("What does FlashRank distil into cross-encoders?", evidence)
    lines = answer.splitlines()[1:]
    assert "- FlashRank distils a listwise teacher into small cross-encoders. [1]" in lines
    assert all(line.endswith("[1]") and line.count("[") == 1 for line in lines)
