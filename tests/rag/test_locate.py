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


@pytest.mark.parametrize(
    "question",
    [
        "How were models evaluated in the structure-aware chunking paper and in the cheap listwise reranking paper?",
        "How were the models evaluated in the ChunkSage paper and in the FlashRank paper?",
    ],
)
def test_a_question_naming_two_papers_by_their_titles_words_compares_those_two(
    sample_kb: PaperStore, sample_doc_ids: dict[str, str], question: str
) -> None:
    """Named by a phrase of their titles rather than by their names, two papers the wording sets side by side ("the
    X paper and the Y paper") are the two the question compares: Track B over exactly those."""
    found = Engine(sample_kb).retrieve(question)
    named = {sample_doc_ids["chunksage"], sample_doc_ids["flashrank"]}
    assert found.track == "B" and set(found.route.doc_ids) == named
    assert {c.doc_id for c in found.chunks} <= named


def test_several_papers_are_named_by_wording_not_by_two_mentions_of_one() -> None:
    from paperscope.rag.cues import refers_to_several_papers

    assert refers_to_several_papers("How did the TrustRank paper and the ReVerb paper obtain their judgements?")
    assert refers_to_several_papers("比较 NG-Scope 和 TraceMonkey 两篇论文的实验硬件平台")
    assert refers_to_several_papers("Do both papers tune BM25?")
    assert not refers_to_several_papers("In the Bigtable paper, what does the paper say about GFS and Chubby?")
    assert not refers_to_several_papers("In the paper's experiments, what F1 and recall does the paper report?")


def test_a_phrase_inside_a_quoted_title_does_not_name_another_paper(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    """'Sparse Information Extraction: ...' quoted names that paper; the "Information Extraction" inside it is part of
    that name, not a mention of "Open Information Extraction", so the question stays on one paper (Track A)."""
    papers = {
        "sparse.md": ("Sparse Information Extraction: Unsupervised Language Models to the Rescue", "REALM ranks"),
        # The acronym it introduces makes "Information Extraction" one of its names.
        "open.md": ("Identifying Relations for Open Information Extraction", "Information Extraction (IE) extracts"),
    }
    paths = []
    for name, (title, what) in papers.items():
        body = (
            f'---\ntitle: "{title}"\nauthors: ["Ada Example"]\n---\n\n# {title}\n\n## Abstract\n\n{what} relations '
            f"from sentences found on the Web.\n\n## 1 Introduction\n\n{what} relations with a language model; the "
            "type-checking error rate falls by a third when BM25 is replaced with cosine distance.\n"
        )
        (tmp_path / name).write_text(body)
        paths.append(tmp_path / name)
    settings = Settings(home=tmp_path / "home", store={"kb": "nested"})
    with PaperStore.open(settings, local_embedder) as store:
        report = ingest(paths, settings, store)
        sparse = next(f.doc_id for f in report.files if f.path.endswith("sparse.md"))
        found = Engine(store, settings).retrieve(
            "In 'Sparse Information Extraction: Unsupervised Language Models to the Rescue', how much lower is the "
            "type-checking error rate when BM25 is replaced with cosine distance?"
        )
    assert found.track == "A" and found.doc_ids == [sparse]


@pytest.mark.parametrize(
    ("question", "track"),
    [
        ("Which methods are compared in the cheap listwise reranking paper?", "A"),
        ("Which methods are compared with listwise rerankers?", "B"),
    ],
)
def test_which_methods_of_the_paper_it_refers_to_is_about_that_paper(
    sample_kb: PaperStore, question: str, track: str
) -> None:
    """ "Which methods ..." asks across the field, unless it refers to one paper ("in the X paper") that is found."""
    assert Engine(sample_kb).retrieve(question).track == track
