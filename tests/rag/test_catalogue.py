"""The catalogue kept in memory, point reads by primary key and BM25 queries without stop words (store)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.parser import SectionCategory, parse_markdown
from paperscope.rag.chunking import ChunkOptions, chunk_paper
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore
from paperscope.rag.store.schema import PROP_CATALOGUE
from tests.markdown_papers import markdown

OPTIONS = ChunkOptions(chunk_size=48, overlap=0)  # several chunks per section
LONG = " ".join(f"Sentence {i} of this section says something about kelp forests and otters." for i in range(12))


def doc_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"paperscope-test/catalogue/{name}"))


def paper_source(name: str, *, background_again: bool = False) -> str:
    """A paper whose Introduction spans several chunks; with `background_again`, an INTRODUCTION-like section
    ("Background") comes back after the Method."""
    sections = [
        ("## Abstract", [f"{name} studies kelp. " + LONG[:300]]),
        ("## 1 Introduction", [LONG, LONG]),
        ("## 2 Method", [LONG]),
    ]
    if background_again:
        sections.append(("## 3 Introduction to the Data", [LONG]))
    sections.append(("## 4 Results", [LONG]))
    return markdown(f"{name}: Kelp Forests Seen From Space", 2021, sections)


def put(store: PaperStore, name: str, **kw: bool) -> str:
    paper = parse_markdown(paper_source(name, **kw))
    chunks = chunk_paper(paper, store.embedder.token_counter, "recursive", OPTIONS)
    did = doc_id(name)
    store.insert_paper_chunks(paper, chunks, did, hashlib.sha256(name.encode()).hexdigest(), f"{name}.md")
    return did


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalogue")


@pytest.fixture(scope="module")
def store(home: Path, local_embedder: CachedEmbedder) -> Iterator[PaperStore]:
    with PaperStore.open(Settings(home=home), local_embedder) as store:
        for name in ("Alpha", "Beta"):
            put(store, name)
        put(store, "Gamma", background_again=True)
        yield store


def test_the_catalogue_is_read_once_and_again_after_any_write(store: PaperStore, home: Path) -> None:
    first = store.catalogue()
    assert store.catalogue() is first  # unchanged: no second read
    assert sorted(p.title.split(":")[0] for p in first.ready) == ["Alpha", "Beta", "Gamma"]
    # A write through another store of the same kb (another command in this process) is seen at once.
    with PaperStore.open(Settings(home=home), store.embedder) as other:
        did = put(other, "Delta")
    after = store.catalogue()
    assert after is not first and did in after.by_id
    store.set_status(did, "ingesting")
    assert did not in {p.doc_id for p in store.catalogue().ready}
    assert [p.doc_id for p in store.catalogue().waiting] == [did]
    store.delete_paper(did)
    assert did not in store.catalogue().by_id


def test_changes_other_processes_make_are_seen(store: PaperStore) -> None:
    before = store.catalogue()
    # Another process writing to the same server gives the catalogue a new version token.
    store.client.alter_collection_properties(store.papers_name, properties={PROP_CATALOGUE: "another process"})
    assert store.catalogue() is not before
    # A row deleted behind the store's back (a raw client, a process killed before its token) changes the count.
    did = put(store, "Epsilon")
    seen = store.catalogue()
    store.client.delete(store.papers_name, filter=f'doc_id == "{did}"')
    try:
        assert did not in store.catalogue().by_id and store.catalogue() is not seen
    finally:
        store.delete_chunks_of(did)


def test_sections_read_by_key_match_the_filtered_read(store: PaperStore) -> None:
    ids = [doc_id(n) for n in ("Alpha", "Beta", "Gamma")]
    for category in (SectionCategory.ABSTRACT, SectionCategory.INTRODUCTION, SectionCategory.METHOD):
        for budget in (1, 60, 500, 5000):
            together = store.get_sections(ids, category, budget)
            for did in ids:
                expected = store._section_by_filter(did, category, budget, "test")
                assert [c.chunk_index for c in together[did]] == [c.chunk_index for c in expected], (category, budget)
                assert [c.chunk_index for c in store.get_section(did, category, budget)] == [
                    c.chunk_index for c in expected
                ]
    gamma = store.get_section(doc_id("Gamma"), SectionCategory.INTRODUCTION, 5000)
    assert {c.section_title for c in gamma} == {"1 Introduction", "3 Introduction to the Data"}  # both runs
    assert len(store.get_section(doc_id("Alpha"), SectionCategory.INTRODUCTION, 5000)) >= 3


def test_windows_of_several_papers_in_one_read(store: PaperStore) -> None:
    alpha, beta = doc_id("Alpha"), doc_id("Beta")
    found = store.get_windows({alpha: [0, 1, 2, 999], beta: [3, 2]})
    assert {d: [c.chunk_index for c in cs] for d, cs in found.items()} == {alpha: [0, 1, 2], beta: [2, 3]}
    assert [c.text for c in found[alpha]] == [c.text for c in store.get_chunks(alpha)[:3]]
    store.set_status(beta, "ingesting")
    try:
        assert list(store.get_windows({alpha: [0], beta: [0]})) == [alpha]  # a paper not ready gives nothing
    finally:
        store.set_status(beta, "ready")
    with pytest.raises(ValueError, match=">= 0"):
        store.get_windows({alpha: [-1]})


def test_paper_searches_read_only_the_fields_asked(store: PaperStore) -> None:
    full = store.search_papers_bm25("Alpha kelp forests", k=3)
    ids = store.search_papers_bm25("Alpha kelp forests", k=3, fields=("doc_id",))
    assert [(p.doc_id, p.score) for p in ids] == [(p.doc_id, p.score) for p in full] and full[0].title
    assert all(p.title == "" and p.aliases == [] for p in ids)  # nothing else was read
    dense = store.search_papers("kelp forests seen from space", k=3, fields=("doc_id",))
    assert {p.doc_id for p in dense} <= {doc_id(n) for n in ("Alpha", "Beta", "Gamma")} and dense[0].score


def version_reads(store: PaperStore, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A list that gains an entry each time a store reads the catalogue's version (from now on, in this test)."""
    reads: list[object] = []
    real = type(store)._catalogue_version

    def counted(self: PaperStore) -> tuple[str, int]:
        reads.append(self)
        return real(self)

    monkeypatch.setattr(type(store), "_catalogue_version", counted)
    return reads


def test_one_question_reads_the_catalogue_version_once(store: PaperStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from paperscope.rag.engine import Engine

    engine = Engine(store)
    reads = version_reads(store, monkeypatch)
    assert engine.retrieve("What do kelp forests and otters have to do with each other?").chunks
    assert len(reads) == 1  # pinned for the whole question: routing, enrichment kinds, transforms
    did = put(store, "Delta")  # after the question, a change is seen at once
    try:
        assert did in {p.doc_id for p in engine.papers()} and len(reads) == 2
    finally:
        store.delete_paper(did)


def test_a_whole_answer_reads_the_catalogue_version_once(
    store: PaperStore, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer's bibliography names its papers from the catalogue the retrieval read: no second check."""
    from paperscope.agent.pipeline import Searcher

    searcher = Searcher(store, Settings(home=home), None)
    searcher.answer("What do kelp forests and otters have to do with each other?")  # the locator and caches built
    reads = version_reads(store, monkeypatch)
    answer = searcher.answer("How do otters use kelp forests according to Alpha?")
    assert answer.bibliography and len(reads) == 1
    assert store.catalogue(checked=False) is store.catalogue()  # the copy held is the current one
