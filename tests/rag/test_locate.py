"""Finding the paper a question is about: copies of one paper, names that are common words, the collection as
the question's scope."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.engine import Engine
from paperscope.rag.identity import identity_of
from paperscope.rag.ingest import ingest
from paperscope.rag.store import PaperStore


def test_a_name_with_a_size_has_a_stem_and_two_words_do_not() -> None:
    kinds = {a.text: a.kind for a in identity_of("Marten-1B: Pretraining a Compact Language Model", "", []).aliases}
    assert kinds.get("Marten") == "stem"
    plain = {a.text for a in identity_of("Paper Plain: Making Medical Research Papers Approachable", "", []).aliases}
    assert "Paper" not in plain and "Paper Plain" in plain  # "paper" is in every question


def test_a_full_copy_and_an_excerpt_of_one_paper_are_one_paper(
    tmp_path: Path, sample_pdfs: dict[str, Path], local_embedder: CachedEmbedder
) -> None:
    """A tie between two copies of the same title is no reason to call the paper absent: the fuller copy answers."""
    excerpt = tmp_path / "flashrank-first-page.pdf"
    with pymupdf.open(sample_pdfs["flashrank"]) as doc:
        doc.select([0])
        doc.save(excerpt)
    settings = Settings(home=tmp_path / "home", store={"kb": "copies"})
    with PaperStore.open(settings, local_embedder) as store:
        report = ingest([sample_pdfs["flashrank"], excerpt, sample_pdfs["marten"]], settings, store)
        full = next(f.doc_id for f in report.files if f.path.endswith("flashrank.pdf"))
        found = Engine(store, settings).retrieve("In the FlashRank paper, how many queries were labelled?")
    assert found.track == "A" and found.doc_ids == [full]


@pytest.mark.parametrize(
    ("question", "track"),
    [
        ("Among the papers in the collection, how many queries was FlashRank trained on?", "A"),
        ("Which papers in the collection compare against FlashRank?", "B"),
    ],
)
def test_the_collection_as_scope_still_names_its_paper(sample_kb: PaperStore, question: str, track: str) -> None:
    assert Engine(sample_kb).retrieve(question).track == track
