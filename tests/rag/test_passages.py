"""Track A passages: the caption of a table or figure the question names joins the evidence (passages.py)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.parser import parse_markdown
from paperscope.rag.chunking import ChunkOptions, chunk_paper
from paperscope.rag.cues import caption_labels, named_labels
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.engine import Engine
from paperscope.rag.filters import SearchFilter
from paperscope.rag.ranking import lead_captions
from paperscope.rag.store import PaperStore
from tests.markdown_papers import markdown

SURVEY = " ".join(f"Transect {i} counted otters resting in the kelp forest canopy at low tide." for i in range(10))
CAPTION = "Figure 3: Density per site for the twelve sites (depth = 20 m, area = 50 m2); grey bars mark 2019."


def test_a_question_names_tables_and_figures_by_their_labels() -> None:
    assert named_labels("the spectra of Figure 1, (Fig. 3a), in Table 4 and Tab. 2; TABLE IV; 表 5 和图 6") == {
        ("FIGURE", "1"), ("FIGURE", "3"), ("TABLE", "4"), ("TABLE", "2"), ("TABLE", "IV"), ("TABLE", "5"),
        ("FIGURE", "6"),
    }  # fmt: skip
    assert named_labels("the table is large and the figures agree") == frozenset()
    assert caption_labels("Results follow.\nFigure 3: Density per site.\nTable IV. Sites") == {
        ("FIGURE", "3"),
        ("TABLE", "IV"),
    }
    assert caption_labels("as Table 2: shows, mid-line") == frozenset()  # a caption opens its line


def test_captions_lead_after_the_best_candidate_with_its_score() -> None:
    from paperscope.rag.store.records import StoredChunk

    def chunk(i: int, score: float) -> StoredChunk:
        return StoredChunk.model_validate(
            dict(id=i, doc_id="d", title="T", year=None, chunk_index=i, text=f"t{i}", index_text=f"t{i}",
                 section_title="", parent_section="", section_category=0, hierarchy_level=1, page_number=1,
                 score=score)
        )  # fmt: skip

    hits = [chunk(0, 9.0), chunk(1, 5.0), chunk(2, 1.0)]
    led = lead_captions(hits, [chunk(2, 1.0)])
    assert [h.chunk_index for h in led] == [0, 2, 1] and led[1].score == 9.0
    assert lead_captions(hits, []) == hits


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, local_embedder: CachedEmbedder) -> Iterator[PaperStore]:
    home: Path = tmp_path_factory.mktemp("passages")
    with PaperStore.open(Settings(home=home), local_embedder) as store:
        yield store


def test_the_caption_of_the_figure_a_question_names_joins_its_evidence(store: PaperStore) -> None:
    """The caption chunk shares few words with the question; named as "Figure 3" it joins the evidence right after
    the best passage, found by its label even when no candidate held it."""
    source = markdown(
        "Otters of the Kelp Coast",
        2020,
        [
            ("## Abstract", ["We counted otters in kelp forests along the coast. " + SURVEY[:200]]),
            ("## 1 Introduction", [SURVEY, SURVEY]),
            ("## 2 Survey", [SURVEY]),
            ("## 3 Results", [CAPTION]),
            ("## 4 Discussion", [SURVEY]),
        ],
    )
    paper = parse_markdown(source)
    chunks = chunk_paper(paper, store.embedder.token_counter, "recursive", ChunkOptions(chunk_size=48, overlap=0))
    did = str(uuid.uuid5(uuid.NAMESPACE_URL, "paperscope-test/passages/otters"))
    store.insert_paper_chunks(paper, chunks, did, hashlib.sha256(source.encode()).hexdigest(), "otters.md")
    caption = next(c.chunk_index for c in chunks if c.text.startswith("Figure 3:"))
    engine = Engine(store)
    scope = SearchFilter(doc_ids=[did])

    asked = "How many otters rested in the kelp forest canopy at low tide"
    named = engine.retrieve(f"{asked}, as Figure 3 shows?", scope, k=3)
    assert caption in [c.chunk_index for c in named.chunks[:2]]
    [run] = [o for o in named.operators if o.name == "captions"]
    assert run.detail["found"] == [caption] and run.detail["labels"] == ["FIGURE 3"]
    unnamed = engine.retrieve(f"{asked}?", scope, k=3)
    assert caption not in [c.chunk_index for c in unnamed.chunks]
    assert not [o for o in unnamed.operators if o.name == "captions"]
