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


def papers_queries(store: PaperStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gains the filter of each query of the papers collection a store makes (from now on)."""
    calls: list[str] = []
    real = store.client.query

    def counted(collection: str, *args: object, **kwargs: object) -> object:
        if collection == store.papers_name:
            calls.append(str(kwargs.get("filter", "")))
        return real(collection, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store.client, "query", counted)
    return calls


def test_within_a_pin_readiness_comes_from_the_catalogue_read_at_its_start(
    store: PaperStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer's searches and reads ask Milvus nothing about readiness: the catalogue checked when the pin began
    says which papers are ready. Outside a pin, a paper that stops being ready is hidden at once."""
    calls = papers_queries(store, monkeypatch)
    with store.pinned() as catalogue:
        started = len(calls)
        assert store.catalogue() is catalogue and store.catalogue(checked=False) is catalogue
        hits = store.search_bm25("kelp forests otters", k=3)
        windows = store.get_windows({hits[0].doc_id: [0, 1]})
        with store.pinned() as inner:
            assert inner is catalogue  # a pin inside a pin keeps the outer catalogue
        assert hits and windows[hits[0].doc_id] and len(calls) == started  # no readiness query
    did = put(store, "Delta")
    try:
        with store.pinned():
            assert did in {h.doc_id for h in store.search_bm25("Delta studies kelp", k=20)}
            store.set_status(did, "ingesting")  # stops being ready while the pin holds
            pinned_view = {h.doc_id for h in store.search_bm25("Delta studies kelp", k=20)}
        assert did in pinned_view  # the answer sees the library as it was when it started
        assert did not in {h.doc_id for h in store.search_bm25("Delta studies kelp", k=20)}  # after it: hidden
        assert store.get_windows({did: [0]}) == {}
    finally:
        store.delete_paper(did)


def test_a_pin_holds_one_knowledge_base_only(store: PaperStore, home: Path, local_embedder: CachedEmbedder) -> None:
    """A pin of one knowledge base says nothing about another's readiness: its searches check their own."""
    with PaperStore.open(Settings(home=home).with_overrides(store={"kb": "other_pin"}), local_embedder) as other:
        did = put(other, "Epsilon")
        with store.pinned():
            assert did not in {p.doc_id for p in store.catalogue().papers}
            assert did in {h.doc_id for h in other.search_bm25("Epsilon studies kelp", k=5)}
            assert other.catalogue() is not store.catalogue()


def test_an_answer_makes_no_readiness_query(store: PaperStore, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole no-model answer (routing, the survey's searches, windows) reads the catalogue's version once and asks
    nothing else of the papers collection by primary key or status; without a model it reads no Introduction."""
    from paperscope.agent.pipeline import Searcher

    searcher = Searcher(store, Settings(home=home), None)
    searcher.answer("What do kelp forests and otters have to do with each other?")  # caches built
    calls = papers_queries(store, monkeypatch)
    sections: list[object] = []
    real = type(store).get_sections
    monkeypatch.setattr(type(store), "get_sections", lambda self, *a, **k: sections.append(a) or real(self, *a, **k))
    answer = searcher.answer("What do kelp forests and otters have to do with each other?")
    assert answer.sources and answer.claims
    assert calls == [""]  # the version's row count, nothing else
    assert sections == []


def test_searches_return_no_vectors_and_ranking_reads_those_it_needs(
    store: PaperStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search's hits carry no vectors (a survey's 60 candidates cost ~10 ms more with theirs); MMR reads the
    vectors of the hits it ranks by key, and only when it picks several: for one pick it changes nothing."""
    import numpy as np

    from paperscope.rag.engine import Engine
    from paperscope.rag.registry import RunLog

    hits = store.search_bm25("kelp forests otters", k=6)
    assert len(hits) == 6 and all(h.vector is None for h in hits)
    store.load_vectors(hits[:2])
    [v0, v1] = [np.asarray(h.vector) for h in hits[:2]]
    expected = np.asarray(store.embedder.embed_documents([hits[0].index_text])[0])
    assert float(v0 @ expected / (np.linalg.norm(v0) * np.linalg.norm(expected))) > 0.999  # the stored embedding
    assert v1.shape == v0.shape and all(h.vector is None for h in hits[2:])

    passages = Engine(store).passages
    loads: list[int] = []
    real = type(store).load_vectors
    monkeypatch.setattr(type(store), "load_vectors", lambda self, cs: loads.append(len(cs)) or real(self, cs))
    fresh = store.search_bm25("kelp forests otters", k=6)
    one = passages.rank(fresh, [], 1, RunLog())
    assert loads == [] and all(h.vector is None for h in fresh)
    several = passages.rank(fresh, [], 3, RunLog())
    assert loads == [6] and all(h.vector is not None for h in fresh)
    assert one[0] == several[0]  # MMR's first pick is the best-valued hit either way
