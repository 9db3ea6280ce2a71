"""PaperStore on a real Milvus Lite file and on a Milvus server (tests/milvus_server.py), real local embeddings."""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pymilvus import FunctionType

from paperscope.config import Settings
from paperscope.errors import StoreError
from paperscope.parser import Paper, SectionCategory, parse_markdown
from paperscope.rag.chunking import Chunk, ChunkOptions, chunk_paper
from paperscope.rag.embeddings import CachedEmbedder, make_embedder
from paperscope.rag.filters import SearchFilter
from paperscope.rag.store import (
    CHUNK_FIELDS,
    PAPER_FIELDS,
    PaperRecord,
    PaperStore,
    StoredChunk,
    chunk_row_id,
)
from paperscope.rag.tokens import TokenCounter
from tests.markdown_papers import markdown as paper_markdown
from tests.milvus_server import MILVUS_LITE_SERVER_GAPS, is_milvus_lite_server

INJECTION = 'x" or doc_id != "'
# Small chunks: several per section from short paragraphs, so windows and sections have something to walk.
OPTIONS = ChunkOptions(chunk_size=64, overlap=8)
SEARCHES = ("search_dense", "search_bm25", "search_hybrid")


def doc_id(name: str) -> str:
    """UUID5 strings, like the real ingest's doc_ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"paperscope-test/{name}"))


def sha(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


@cache
def embedder() -> CachedEmbedder:
    """The default local embedder, loaded once for the module."""
    return make_embedder("local")


# --- papers ---------------------------------------------------------------------------------------


def markdown(title: str, year: int, sections: list[tuple[str, list[str]]]) -> str:
    return paper_markdown(title, year, sections, authors=("Ada Tester", "Bo Check"))


REEF = markdown(
    "Listening to Coral Reefs: Self-Supervised Audio Encoders for Reef Health Monitoring",
    2022,
    [
        (
            "## Abstract",
            [
                "Coral reefs are noisy places: snapping shrimp, grunting fish and breaking waves form a soundscape "
                "that changes as a reef degrades. We train a self-supervised audio encoder on 40,000 hours of "
                "underwater recordings and show that its embeddings predict reef health better than acoustic indices."
            ],
        ),
        (
            "## 1 Introduction",
            [
                "Divers survey reefs visually, which is slow and expensive. Passive acoustic monitoring records the "
                "reef continuously with hydrophones moored on the seabed, but turning months of audio into health "
                "scores has relied on hand-crafted acoustic indices.",
                "Healthy reefs are loud at dawn and dusk when fish chorus; degraded reefs fall quiet. We ask whether "
                "a learned representation of reef sound captures this better than fixed indices.",
            ],
        ),
        (
            "## 2 Related Work",
            [
                "Acoustic indices such as the acoustic complexity index summarize spectrograms with one number. "
                "Self-supervised audio models learned from speech and music transfer poorly to underwater sound."
            ],
        ),
        (
            "## 3 Method",
            [
                "Our encoder is a convolutional network over log-mel spectrograms of ten-second clips, trained with a "
                "contrastive objective that pulls together clips recorded on the same reef at the same hour."
            ],
        ),
        (
            "### 3.1 Hydrophone Calibration",
            [
                "Every hydrophone is calibrated with the XQ-77 protocol before deployment: a reference pistonphone "
                "tone is played at three depths and the gain curve is stored with the recordings.",
                "Recordings whose XQ-77 calibration drifted by more than two decibels are discarded, which removes "
                "four percent of the corpus.",
            ],
        ),
        (
            "## 4 Experiments",
            [
                "We evaluate on 112 reefs in Indonesia and the Red Sea with health labels from diver surveys. Linear "
                "probes on our embeddings reach 0.81 balanced accuracy against 0.64 for the best acoustic index.",
                "Table 1: Balanced accuracy of reef health prediction. Encoder 0.81; ACI 0.64; spectral entropy 0.58.",
                "Removing the same-hour positive pairs lowers accuracy to 0.72, showing that the daily chorus cycle "
                "carries most of the signal.",
            ],
        ),
        (
            "## 5 Conclusion",
            [
                "Listening is a cheap way to monitor reefs at scale. Future work will track recovery after bleaching "
                "events and release the encoder for other marine habitats."
            ],
        ),
        ("## References", ["[1] A. Diver. Visual reef surveys. Marine Biology, 2015."]),
    ],
)

FOLD = markdown(
    "Sparse Mixture-of-Experts Transformers for Protein Structure Prediction",
    2024,
    [
        (
            "## Abstract",
            [
                "We replace the dense feed-forward blocks of a protein structure predictor with a sparse mixture of "
                "experts routed by residue type, cutting training compute by half at equal accuracy."
            ],
        ),
        (
            "## 1 Introduction",
            [
                "Protein structure prediction models spend most of their compute in feed-forward layers applied to "
                "every residue pair. Many residues need little computation, which invites conditional computation.",
                "Mixture-of-experts layers route each token to a few experts, but routing for amino acid sequences "
                "has not been studied.",
            ],
        ),
        (
            "## 2 Method",
            [
                "Each expert is a two-layer MLP; a learned router picks two of sixteen experts per residue pair, with "
                "a load-balancing loss that keeps experts equally busy.",
                "Routing is conditioned on the residue type and the predicted secondary structure from the previous "
                "recycling iteration.",
            ],
        ),
        (
            "## 3 Experiments",
            [
                "On CASP15 targets the sparse model matches the dense baseline at 86.1 GDT-TS while using 48 percent "
                "of its training FLOPs. Experts specialize: helix residues and loop residues go to different experts."
            ],
        ),
        (
            "## 4 Conclusion",
            ["Sparse experts make protein structure predictors cheaper to train without losing accuracy."],
        ),
    ],
)

TRAFFIC = markdown(
    "Cooperative Traffic Signal Control with Graph Reinforcement Learning",
    2021,
    [
        (
            "## Abstract",
            [
                "We coordinate traffic lights across a city with a graph neural network policy trained by "
                "multi-agent reinforcement learning, reducing average travel time by 18 percent in simulation."
            ],
        ),
        (
            "## 1 Introduction",
            [
                "Fixed-time traffic signals ignore the queues that build up at neighbouring intersections. Adaptive "
                "control reacts to local queues but cannot anticipate the platoon of cars arriving from upstream."
            ],
        ),
        (
            "## 2 Approach",
            [
                "Intersections are nodes of a road graph; each agent observes its queues and messages from its "
                "neighbours passed by a graph attention layer, and chooses the next signal phase every five seconds."
            ],
        ),
        (
            "## 3 Evaluation",
            [
                "In SUMO simulations of Manhattan and Hangzhou road networks, our policy reduces average travel time "
                "by 18 percent over adaptive control and by 31 percent over fixed-time plans during rush hour."
            ],
        ),
        ("## 4 Conclusion", ["Graph policies let traffic lights cooperate without a central controller."]),
    ],
)

GLACIER = markdown(
    "Forecasting Glacier Melt with Physics-Informed Neural Networks",
    2023,
    [
        ("## Abstract", ["We forecast glacier melt with a neural network constrained by the surface energy balance."]),
        (
            "## 1 Introduction",
            [
                "Glacier melt feeds rivers that supply water to two billion people. Degree-day models are simple but "
                "miss radiation effects; full energy balance models need data that remote glaciers lack.",
                "The GLACIOMELT-ZX9 sensor array on the Rhone glacier gives hourly ablation measurements for training.",
            ],
        ),
        (
            "## 2 Method",
            [
                "A recurrent network predicts hourly melt from reanalysis weather; a penalty keeps its outputs close "
                "to the energy balance implied by measured radiation and temperature.",
                "Albedo is predicted as a latent variable and regularized toward satellite observations.",
                "Training uses twelve glaciers in the Alps and is tested on four held-out glaciers in Norway.",
            ],
        ),
        (
            "## 3 Results",
            [
                "The physics-informed model halves the error of degree-day models on held-out glaciers.",
                "Without the energy balance penalty the network overfits the Alpine glaciers.",
                "Seasonal totals are within six percent of stake measurements.",
            ],
        ),
        ("## 4 Conclusion", ["Physical constraints make melt forecasts transferable across mountain ranges."]),
    ],
)

CORPUS = {"reef": REEF, "fold": FOLD, "traffic": TRAFFIC}


@cache
def parsed(name: str) -> Paper:
    sources = {**CORPUS, "glacier": GLACIER}
    return parse_markdown(sources[name])


def chunks_of(name: str, counter: TokenCounter) -> list[Chunk]:
    return chunk_paper(parsed(name), counter, options=OPTIONS)


# --- backends -------------------------------------------------------------------------------------


BACKENDS = ["lite", pytest.param("server", marks=pytest.mark.integration)]


@pytest.fixture(scope="module", params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings of a fresh knowledge base on the backend; batch_size 4 so ingest writes several batches."""
    home = tmp_path_factory.mktemp(f"store-{request.param}")
    if request.param == "lite":
        yield Settings(home=home, embedding={"batch_size": 4})
        return
    uri = request.getfixturevalue("milvus_server_uri")
    kb = f"t{uuid.uuid4().hex[:12]}"  # a shared server: a kb of our own, dropped afterwards
    yield Settings(
        home=home, embedding={"batch_size": 4}, store={"uri": uri, "token": os.environ.get("MILVUS_TOKEN"), "kb": kb}
    )
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, token=os.environ.get("MILVUS_TOKEN") or "")
    for name in (f"{kb}_chunks", f"{kb}_papers"):
        client.drop_collection(name)
    client.close()


@pytest.fixture(scope="module")
def store(settings: Settings) -> Iterator[PaperStore]:
    """A store holding the three corpus papers (ready)."""
    with PaperStore.open(settings, embedder()) as s:
        for name in CORPUS:
            s.insert_paper_chunks(
                parsed(name), chunks_of(name, s.embedder.token_counter), doc_id(name), sha(name), f"{name}.md"
            )
        yield s


def reef_xq77_index(store: PaperStore) -> int:
    """chunk_index of the first reef chunk that mentions XQ-77."""
    return next(c.chunk_index for c in store.get_chunks(doc_id("reef")) if "XQ-77" in c.text)


# --- schema ---------------------------------------------------------------------------------------


def _fields(store: PaperStore, collection: str) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in store.client.describe_collection(collection)["fields"]}


def test_chunks_schema_is_exactly_the_design(store: PaperStore) -> None:
    desc = store.client.describe_collection(store.chunks_name)
    fields = {f["name"]: f for f in desc["fields"]}
    assert (
        list(fields)
        == list(CHUNK_FIELDS)
        == [
            "id",
            "doc_id",
            "title",
            "conference_year",
            "chunk_index",
            "text",
            "index_text",
            "vector",
            "sparse",
            "section_title",
            "parent_section",
            "section_category",
            "hierarchy_level",
            "page_number",
            "kind",
            "metadata",
        ]
    )
    assert {n: f["type"] for n, f in fields.items()} == CHUNK_FIELDS
    assert fields["id"].get("is_primary") and not desc["auto_id"]
    assert int(fields["doc_id"]["params"]["max_length"]) == 64
    assert int(fields["vector"]["params"]["dim"]) == 384
    assert str(fields["index_text"]["params"]["enable_analyzer"]).lower() == "true"
    assert str(fields["index_text"]["params"]["enable_match"]).lower() == "true"
    assert not desc["enable_dynamic_field"]
    (bm25,) = desc["functions"]
    assert bm25["input_field_names"] == ["index_text"] and bm25["output_field_names"] == ["sparse"]
    assert bm25["type"] == FunctionType.BM25
    assert desc["properties"]["paperscope.embedder"] == "local:all-MiniLM-L6-v2"
    assert desc["consistency_level"] == 0  # Strong
    indexes = {
        name: store.client.describe_index(store.chunks_name, name)
        for name in store.client.list_indexes(store.chunks_name)
    }
    by_field = {i["field_name"]: i for i in indexes.values()}
    assert (by_field["vector"]["index_type"], by_field["vector"]["metric_type"]) == ("HNSW", "COSINE")
    assert (by_field["sparse"]["index_type"], by_field["sparse"]["metric_type"]) == ("SPARSE_INVERTED_INDEX", "BM25")
    assert {f for f, i in by_field.items() if i["index_type"] == "INVERTED"} == {
        "doc_id",
        "section_category",
        "chunk_index",
    }


def test_papers_schema(store: PaperStore) -> None:
    desc = store.client.describe_collection(store.papers_name)
    fields = {f["name"]: f for f in desc["fields"]}
    assert list(fields) == list(PAPER_FIELDS)
    assert {n: f["type"] for n, f in fields.items()} == PAPER_FIELDS
    assert fields["doc_id"].get("is_primary")
    assert int(fields["vector"]["params"]["dim"]) == 384
    assert desc["properties"]["paperscope.embedder"] == "local:all-MiniLM-L6-v2"
    assert desc["consistency_level"] == 0


def test_rows_carry_every_field(store: PaperStore) -> None:
    row = store.client.query(
        store.chunks_name, filter=f'doc_id == "{doc_id("reef")}" and chunk_index == 0', output_fields=["*"], limit=1
    )[0]
    assert set(row) >= set(CHUNK_FIELDS) - {"sparse"}
    assert len(row["vector"]) == 384
    assert row["conference_year"] == 2022 and row["kind"] == "chunk" and row["section_category"] == 0
    assert row["id"] == chunk_row_id(doc_id("reef"), "chunk", 0, 0)
    assert isinstance(row["metadata"], dict) and "is_caption" in row["metadata"]


# --- ingest ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORPUS))
def test_chunk_index_is_continuous_per_paper(store: PaperStore, name: str) -> None:
    rows = store.client.query(
        store.chunks_name, filter=f'doc_id == "{doc_id(name)}"', output_fields=["chunk_index", "kind"], limit=1000
    )
    indices = sorted(r["chunk_index"] for r in rows if r["kind"] == "chunk")
    expected = len(chunks_of(name, store.embedder.token_counter))
    assert indices == list(range(expected))
    paper = store.get_paper(doc_id(name))
    assert paper is not None and paper.n_chunks == expected and paper.ready
    assert store.count_chunks(doc_id(name)) == expected


def test_count_chunks_over_the_kb(store: PaperStore) -> None:
    total = sum(store.count_chunks(doc_id(n)) for n in CORPUS)
    assert store.count_chunks() >= total  # other tests may add papers; never fewer


def test_paper_records(store: PaperStore) -> None:
    reef = store.get_paper(doc_id("reef"))
    assert isinstance(reef, PaperRecord)
    assert reef.title.startswith("Listening to Coral Reefs")
    assert reef.authors == ["Ada Tester", "Bo Check"]
    assert reef.year == 2022 and reef.source == "reef.md" and reef.sha256 == sha("reef")
    assert reef.abstract.startswith("Coral reefs are noisy places")
    assert [s.title for s in reef.sections][:3] == ["Abstract", "1 Introduction", "2 Related Work"]
    assert reef.sections[4].parent_id == 3  # the tree survives the JSON round trip
    assert reef.ingested_at > 1_600_000_000
    assert store.get_paper(doc_id("nope")) is None
    assert store.get_paper_by_sha(sha("fold")).doc_id == doc_id("fold")  # type: ignore[union-attr]
    assert store.get_paper_by_sha(sha("absent")) is None
    listed = {p.doc_id for p in store.list_papers()}
    assert {doc_id(n) for n in CORPUS} <= listed


def test_brief_listing_leaves_out_the_heavy_fields(store: PaperStore) -> None:
    full = {p.doc_id: p for p in store.list_papers()}
    brief = store.list_papers(brief=True)
    assert [p.doc_id for p in brief] == list(full)
    for p in brief:
        assert (p.title, p.year, p.n_chunks, p.status, p.source) == (
            full[p.doc_id].title,
            full[p.doc_id].year,
            full[p.doc_id].n_chunks,
            full[p.doc_id].status,
            full[p.doc_id].source,
        )
        assert p.abstract == "" and p.sections == [] and full[p.doc_id].sections


def test_search_papers_by_title_and_abstract(store: PaperStore) -> None:
    hits = store.search_papers("machine learning for traffic lights in cities", k=3)
    assert hits[0].doc_id == doc_id("traffic") and hits[0].score is not None
    scoped = store.search_papers("traffic lights", k=3, doc_ids=[doc_id("fold")])
    assert [p.doc_id for p in scoped] == [doc_id("fold")]
    assert store.search_papers("traffic", doc_ids=[]) == []


def test_bad_arguments_are_rejected(store: PaperStore) -> None:
    paper = parsed("reef")
    with pytest.raises(ValueError, match="doc_id"):
        store.insert_paper_chunks(paper, [], INJECTION, sha("x"), "x.md")
    with pytest.raises(ValueError, match="sha256"):
        store.insert_paper_chunks(paper, [], doc_id("x"), "not-a-sha", "x.md")
    gap = chunks_of("reef", store.embedder.token_counter)
    del gap[1]
    with pytest.raises(StoreError, match=doc_id("x")):
        store.insert_paper_chunks(paper, gap, doc_id("x"), sha("x"), "x.md")
    assert store.get_paper(doc_id("x")) is None  # refused before anything was written
    with pytest.raises(ValueError):
        store.get_paper_by_sha("zz")


def test_store_failures_are_store_errors_naming_the_paper(store: PaperStore) -> None:
    chunks = chunks_of("traffic", store.embedder.token_counter)
    chunks[0] = chunks[0].model_copy(update={"metadata": {"unserializable": object()}})
    with pytest.raises(StoreError, match=f"knowledge base '{store.kb}': paper {doc_id('broken')}") as err:
        store.insert_paper_chunks(parsed("traffic"), chunks, doc_id("broken"), sha("broken"), "broken.md")
    assert err.value.__cause__ is not None
    assert store.get_paper(doc_id("broken")).status == "ingesting"  # type: ignore[union-attr]
    store.delete_paper(doc_id("broken"))


# --- windows and sections -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "window", "expected"),
    [("start", 1, [0, 1]), ("start", 2, [0, 1, 2]), ("middle", 1, [4, 5, 6]), ("end", 1, [-2, -1]), ("end", 0, [-1])],
)
def test_context_window(store: PaperStore, where: str, window: int, expected: list[int]) -> None:
    n = store.count_chunks(doc_id("reef"))
    center = {"start": 0, "middle": 5, "end": n - 1}[where]
    got = store.get_context_window(doc_id("reef"), center, window)
    assert [c.chunk_index for c in got] == [i % n for i in expected]
    assert all(isinstance(c, StoredChunk) and c.doc_id == doc_id("reef") and c.kind == "chunk" for c in got)
    assert all(c.score is None and c.year == 2022 and c.title.startswith("Listening") for c in got)


def test_context_window_past_the_end_and_bad_arguments(store: PaperStore) -> None:
    n = store.count_chunks(doc_id("reef"))
    assert store.get_context_window(doc_id("reef"), n + 5, 1) == []
    assert store.get_context_window(doc_id("nope"), 0, 1) == []
    with pytest.raises(ValueError, match="doc_id"):
        store.get_context_window(INJECTION, 0, 1)
    with pytest.raises(ValueError):
        store.get_context_window(doc_id("reef"), -1, 1)
    with pytest.raises(ValueError):
        store.get_context_window(doc_id("reef"), 0, -1)


def test_get_section_in_order_within_budget(store: PaperStore) -> None:
    counter = store.embedder.token_counter
    intro = store.get_section(doc_id("reef"), "INTRODUCTION", 10_000)
    expected = [c.chunk_index for c in chunks_of("reef", counter) if c.section_category == SectionCategory.INTRODUCTION]
    assert [c.chunk_index for c in intro] == expected and len(expected) >= 2
    assert all(c.section_category == SectionCategory.INTRODUCTION for c in intro)
    first = counter.count(intro[0].text)
    assert [c.chunk_index for c in store.get_section(doc_id("reef"), 1, first)] == [expected[0]]
    assert [c.chunk_index for c in store.get_section(doc_id("reef"), SectionCategory.INTRODUCTION, 1)] == [expected[0]]
    method = store.get_section(doc_id("reef"), "method", 10_000)
    assert {c.section_title for c in method} == {"3 Method", "3.1 Hydrophone Calibration"}
    assert {c.parent_section for c in method if c.section_title.startswith("3.1")} == {"3 Method"}
    assert {c.hierarchy_level for c in method} == {0, 1}
    assert store.get_section(doc_id("fold"), "RELATED_WORK", 500) == []
    with pytest.raises(ValueError, match="category"):
        store.get_section(doc_id("reef"), "METHODS", 500)
    with pytest.raises(ValueError, match="doc_id"):
        store.get_section(INJECTION, "METHOD", 500)


# --- search ---------------------------------------------------------------------------------------


def test_dense_finds_the_topic(store: PaperStore) -> None:
    hits = store.search_dense("recording fish sounds underwater with microphones on the reef", k=5)
    assert hits[0].doc_id == doc_id("reef")
    assert all(isinstance(h.score, float) and -1.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[misc]
    assert store.search_dense("amino acid residues routed to experts", k=3)[0].doc_id == doc_id("fold")


def test_bm25_finds_a_made_up_token(store: PaperStore) -> None:
    hits = store.search_bm25("XQ-77", k=3)
    assert hits and "XQ-77" in hits[0].text and hits[0].doc_id == doc_id("reef")
    assert hits[0].score is not None and hits[0].score > 0
    assert store.search_bm25("qwertyzzz", k=3) == []  # a term in no chunk


def test_bm25_matches_answers_several_words_in_one_search(store: PaperStore) -> None:
    assert store.bm25_matches(["XQ-77", "qwertyzzz", "qwertyzzz XQ-77", "reef"]) == [True, False, True, True]
    assert store.bm25_matches([]) == []
    assert store.bm25_matches(["reef"], SearchFilter(doc_ids=[doc_id("traffic")])) == [
        bool(store.search_bm25("reef", SearchFilter(doc_ids=[doc_id("traffic")]), 1))
    ]
    with pytest.raises(ValueError, match="empty"):
        store.bm25_matches(["reef", " "])


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
def test_hybrid_finds_both_kinds_of_target(store: PaperStore, fusion: Any) -> None:
    hits = store.search_hybrid("XQ-77 calibration drift", k=5, fusion=fusion)
    assert any("XQ-77" in h.text for h in hits[:2])
    semantic = store.search_hybrid("coordinating traffic lights across intersections", k=3, fusion=fusion)
    assert semantic[0].doc_id == doc_id("traffic")
    assert all(h.score is not None for h in hits)


def test_hybrid_arguments(store: PaperStore) -> None:
    with pytest.raises(ValueError, match="fusion"):
        store.search_hybrid("x", fusion="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weights"):
        store.search_hybrid("x", fusion="weighted", weights=(2.0, 0.5))
    with pytest.raises(ValueError, match="rrf_k"):
        store.search_hybrid("x", rrf_k=0)
    hits = store.search_hybrid("XQ-77", k=3, fusion="weighted", weights=(0.0, 1.0))
    assert "XQ-77" in hits[0].text


@pytest.mark.parametrize("method", SEARCHES)
def test_query_and_k_are_validated(store: PaperStore, method: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        getattr(store, method)("   ")
    with pytest.raises(ValueError, match="k must"):
        getattr(store, method)("reef", k=0)


@pytest.mark.parametrize("method", SEARCHES)
def test_scoped_search_never_returns_another_paper(store: PaperStore, method: str) -> None:
    for name in CORPUS:
        hits = getattr(store, method)("XQ-77 hydrophone reef traffic protein", SearchFilter(doc_ids=[doc_id(name)]), 20)
        assert hits, name
        assert {h.doc_id for h in hits} == {doc_id(name)}
    two = getattr(store, method)("reef protein", SearchFilter(doc_ids=[doc_id("reef"), doc_id("fold")]), 50)
    assert {h.doc_id for h in two} <= {doc_id("reef"), doc_id("fold")}
    assert getattr(store, method)("reef", SearchFilter(doc_ids=[]), 5) == []
    assert getattr(store, method)("reef", SearchFilter(doc_ids=[doc_id("unknown")]), 5) == []


@pytest.mark.parametrize("method", SEARCHES)
def test_category_and_year_filters(store: PaperStore, method: str) -> None:
    hits = getattr(store, method)(
        "results accuracy experiments evaluation", SearchFilter(categories=["EVALUATION"]), 20
    )
    assert hits and {h.section_category for h in hits} == {SectionCategory.EVALUATION}
    two = getattr(store, method)("model method approach", SearchFilter(categories=[2, "CONCLUSION"]), 20)
    assert two and {h.section_category for h in two} <= {SectionCategory.METHOD, SectionCategory.CONCLUSION}
    recent = getattr(store, method)("reef protein traffic", SearchFilter(year_min=2022, year_max=2023), 20)
    assert recent and all(h.year is not None and 2022 <= h.year <= 2023 for h in recent)
    assert not {h.doc_id for h in recent} & {doc_id("fold"), doc_id("traffic")}


@pytest.mark.parametrize("method", SEARCHES)
def test_exclude_captions(store: PaperStore, method: str) -> None:
    query = "balanced accuracy of reef health prediction table"
    scope = SearchFilter(doc_ids=[doc_id("reef")])
    assert any(h.metadata.get("is_caption") for h in getattr(store, method)(query, scope, 20))
    kept = getattr(store, method)(query, scope.model_copy(update={"exclude_captions": True}), 20)
    assert kept and not any(h.metadata.get("is_caption") for h in kept)


@pytest.mark.parametrize("method", SEARCHES)
def test_filter_injection_matches_nothing_and_breaks_nothing(store: PaperStore, method: str) -> None:
    with pytest.raises(ValidationError):
        SearchFilter(doc_ids=[INJECTION])
    sneaky = SearchFilter.model_construct(doc_ids=[INJECTION], kinds=["chunk"], categories=None)
    assert getattr(store, method)("reef", sneaky, 10) == []
    assert store.client.query(store.chunks_name, filter=sneaky.to_expr(), output_fields=["id"], limit=10) == []
    assert store.count_chunks(doc_id("reef")) > 0  # nothing was harmed
    assert getattr(store, method)("reef", None, 3)


def test_templated_filters_match_the_literal_ones(store: PaperStore) -> None:
    """Servers take `filter_params`; the store sticks to literals because Milvus Lite ignores them."""
    if store.is_lite:
        pytest.skip("Milvus Lite 3.2 ignores filter_params and cannot parse {placeholders}")
    if is_milvus_lite_server(store.uri, store.settings.store.token or ""):
        pytest.skip(MILVUS_LITE_SERVER_GAPS["filter_params"])
    f = SearchFilter(doc_ids=[doc_id("reef"), doc_id("fold")], categories=["METHOD", "EVALUATION"], year_min=2020)
    expr, params = f.to_template()
    templated = store.client.query(
        store.chunks_name, filter=expr, filter_params=params, output_fields=["id"], limit=500
    )
    literal = store.client.query(store.chunks_name, filter=f.to_expr(), output_fields=["id"], limit=500)
    assert literal and sorted(r["id"] for r in templated) == sorted(r["id"] for r in literal)


# --- derived rows, re-ingest, delete --------------------------------------------------------------


def test_derived_rows_are_kept_apart(store: PaperStore) -> None:
    name, did = "glacier", doc_id("derived")
    counter = store.embedder.token_counter
    body = chunks_of(name, counter)
    questions = [
        Chunk(
            chunk_index=0,
            text=f"Question {i} about glacier melt?",
            index_text=f"What does the GLACIOMELT-ZX9 sensor measure, variant {i}?",
            section_title="1 Introduction",
            parent_section="",
            section_category=SectionCategory.INTRODUCTION,
            hierarchy_level=0,
            page_number=1,
            kind="question",
        )
        for i in range(2)
    ]
    store.insert_paper_chunks(parsed(name), body + questions, did, sha("derived"), "derived.md")
    try:
        assert store.count_chunks(did) == len(body)
        assert store.count_chunks(did, kind=None) == len(body) + 2
        assert store.count_chunks(did, kind="question") == 2
        ids = {c.id for c in store.get_chunks(did, kind=None)}
        assert len(ids) == len(body) + 2  # (kind, chunk_index, n) keep the two questions apart
        scope = SearchFilter(doc_ids=[did])
        assert all(h.kind == "chunk" for h in store.search_bm25("GLACIOMELT-ZX9 sensor", scope, 10))
        q = store.search_bm25("GLACIOMELT-ZX9 sensor", SearchFilter(doc_ids=[did], kinds=["question"]), 10)
        assert sorted(h.text for h in q) == [questions[0].text, questions[1].text]
        assert [c.chunk_index for c in store.get_context_window(did, 0, 1)] == [0, 1]  # body rows only
        with pytest.raises(ValueError, match="kind"):
            store.count_chunks(did, kind="bogus")
    finally:
        store.delete_paper(did)


def test_reinsert_does_not_duplicate_and_drops_stale_rows(store: PaperStore) -> None:
    name, did = "traffic", doc_id("reinsert")
    chunks = chunks_of(name, store.embedder.token_counter)
    store.insert_paper_chunks(parsed(name), chunks, did, sha("v1"), "v1.md")
    first = {c.id: c.text for c in store.get_chunks(did)}
    store.insert_paper_chunks(parsed(name), chunks, did, sha("v1"), "v1.md")
    assert {c.id: c.text for c in store.get_chunks(did)} == first
    assert store.count_chunks(did) == len(chunks)
    # A changed file with fewer chunks: rows with chunk_index >= the new count disappear.
    shorter = [c.model_copy(update={"text": c.text + " (v2)"}) for c in chunks[:3]]
    store.insert_paper_chunks(parsed(name), shorter, did, sha("v2"), "v2.md")
    again = store.get_chunks(did)
    assert [c.chunk_index for c in again] == [0, 1, 2]
    assert all(c.text.endswith("(v2)") for c in again)
    assert store.count_chunks(did, kind=None) == 3
    paper = store.get_paper(did)
    assert paper is not None and paper.n_chunks == 3 and paper.sha256 == sha("v2") and paper.ready
    assert [p.doc_id for p in store.list_papers()].count(did) == 1
    store.delete_paper(did)


def test_delete_removes_everything(store: PaperStore) -> None:
    name, did = "fold", doc_id("deleted")
    chunks = chunks_of(name, store.embedder.token_counter)
    store.insert_paper_chunks(parsed(name), chunks, did, sha("deleted"), "deleted.md")
    assert store.count_chunks(did) == len(chunks)
    assert store.delete_paper(did) == len(chunks)
    assert store.count_chunks(did, kind=None) == 0
    assert store.get_paper(did) is None
    assert store.get_paper_by_sha(sha("deleted")) is None
    assert did not in {p.doc_id for p in store.list_papers()}
    for method in SEARCHES:
        assert getattr(store, method)("protein experts", SearchFilter(doc_ids=[did]), 5) == []
    assert store.delete_paper(did) == 0  # deleting twice is harmless
    assert store.count_chunks(doc_id("fold")) > 0  # the other copy of the same text is untouched


# --- readiness ------------------------------------------------------------------------------------


class FailingEmbedder:
    """Delegates to a real embedder, fails on the n-th embed_documents call (a crash mid-ingest)."""

    def __init__(self, inner: CachedEmbedder, fail_on_call: int) -> None:
        self.inner, self.fail_on_call, self.n = inner, fail_on_call, 0
        self.name, self.dim, self.max_tokens, self.token_counter = (
            inner.name,
            inner.dim,
            inner.max_tokens,
            inner.token_counter,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.n += 1
        if self.n == self.fail_on_call:
            raise RuntimeError("embedding server went away")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.mark.parametrize("method", SEARCHES)
def test_a_paper_still_ingesting_is_never_returned(store: PaperStore, settings: Settings, method: str) -> None:
    name, did = "glacier", doc_id(f"crash-{method}")
    chunks = chunks_of(name, store.embedder.token_counter)
    assert len(chunks) > store.write_batch
    # Call 1 embeds title+abstract, call 2 the first batch (written), call 3 fails.
    failing = FailingEmbedder(embedder(), fail_on_call=3)
    with (
        PaperStore(settings, failing) as crashing,  # type: ignore[arg-type]
        pytest.raises(StoreError, match=f"paper {did}: embedding chunks 4\\.\\.") as err,
    ):
        crashing.insert_paper_chunks(parsed(name), chunks, did, sha("crash"), "crash.md")
    assert isinstance(err.value.__cause__, RuntimeError)
    paper = store.get_paper(did)
    assert paper is not None and paper.status == "ingesting" and not paper.ready
    assert store.count_chunks(did) == store.write_batch  # the first batch is in the collection...
    search = getattr(store, method)
    assert all(h.doc_id != did for h in search("GLACIOMELT-ZX9 glacier melt sensor", None, 50))  # ...but hidden
    assert search("glacier melt", SearchFilter(doc_ids=[did]), 5) == []
    assert all(p.doc_id != did for p in store.search_papers("glacier melt forecasting", k=10))
    # Ingesting again repairs it.
    store.insert_paper_chunks(parsed(name), chunks, did, sha("crash"), "crash.md")
    assert store.get_paper(did).ready  # type: ignore[union-attr]
    assert any(h.doc_id == did for h in search("GLACIOMELT-ZX9 glacier melt sensor", SearchFilter(doc_ids=[did]), 5))
    store.delete_paper(did)


# --- opening --------------------------------------------------------------------------------------


class FakeEmbedder:
    """Another model: only its identity matters for the knowledge-base check."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim
        self.token_counter = embedder().token_counter
        self.max_tokens = self.token_counter.max_tokens

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dim - 1) for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.mark.parametrize(("name", "dim"), [("fake:tiny", 8), ("fake:same-dim", 384)])
def test_opening_with_another_embedder_is_a_clear_error(
    store: PaperStore, settings: Settings, name: str, dim: int
) -> None:
    with pytest.raises(StoreError) as err:
        PaperStore(settings, FakeEmbedder(name, dim))  # type: ignore[arg-type]
    message = str(err.value)
    assert f"knowledge base '{settings.store.kb}' was built with local:all-MiniLM-L6-v2 (dim 384)" in message
    assert f"this run uses {name} (dim {dim})" in message
    assert store.count_chunks(doc_id("reef")) > 0  # the open store still works


def test_a_second_store_on_the_same_kb_shares_it(store: PaperStore, settings: Settings) -> None:
    with PaperStore.open(settings, embedder()) as other:
        assert other.count_chunks(doc_id("reef")) == store.count_chunks(doc_id("reef"))
    # Closing the second one leaves the first one (and, for Lite, the shared local server) working.
    assert store.search_bm25("XQ-77", k=1)


def test_flush_keeps_everything_searchable(store: PaperStore) -> None:
    before = store.count_chunks(kind=None)
    store.flush()
    store.flush()  # idempotent
    assert store.count_chunks(kind=None) == before
    assert "XQ-77" in store.search_bm25("XQ-77", k=1)[0].text
    assert store.search_dense("recording fish sounds on the reef", k=1)[0].doc_id == doc_id("reef")


def test_another_kb_is_independent(settings: Settings) -> None:
    other = settings.with_overrides(store={"kb": f"{settings.store.kb}_other"})
    with PaperStore(other, FakeEmbedder("fake:tiny", 8)) as s:  # type: ignore[arg-type]
        assert s.count_chunks() == 0 and s.list_papers() == []
        assert s.chunks_name == f"{settings.store.kb}_other_chunks"
        s.client.drop_collection(s.chunks_name)
        s.client.drop_collection(s.papers_name)


def test_lite_file_lives_in_home_and_persists(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    with PaperStore(settings, embedder()) as s:
        assert s.is_lite and s.uri == str((tmp_path / "home" / "milvus.db").resolve())
        s.insert_paper_chunks(
            parsed("traffic"), chunks_of("traffic", s.embedder.token_counter), doc_id("p"), sha("p"), "p.md"
        )
        n = s.count_chunks()
    assert (tmp_path / "home" / "milvus.db").exists()
    with PaperStore(settings, embedder()) as again:  # a reopened Lite collection must be loaded again
        assert again.count_chunks() == n
        assert again.search_bm25("traffic signal", k=1)[0].doc_id == doc_id("p")


def test_bad_uri_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="neither"):
        PaperStore(Settings(home=tmp_path, store={"uri": "ftp://example"}), embedder())


# --- hardening --------------------------------------------------------------------------------------------


def test_orphan_chunks_never_come_back_from_a_search_or_a_read(store: PaperStore) -> None:
    """Chunks whose paper has no catalogue row (what a crash or a bug can leave) are invisible, and k holds."""
    orphan = doc_id("orphan-glacier")
    store.insert_paper_chunks(
        parsed("glacier"), chunks_of("glacier", store.embedder.token_counter), orphan, sha("orphan"), "o.md"
    )
    store.client.delete(store.papers_name, filter=f'doc_id == "{orphan}"')  # the catalogue row is gone
    try:
        assert store.count_chunks(orphan) > 0
        for method in SEARCHES:
            hits = getattr(store, method)("GLACIOMELT-ZX9 glacier melt sensor", None, 3)
            assert all(h.doc_id != orphan for h in hits), method
            assert getattr(store, method)("glacier melt", SearchFilter(doc_ids=[orphan]), 5) == []
        assert len(store.search_dense("GLACIOMELT-ZX9 glacier melt sensor", k=3)) == 3  # searched past it
        # The orphan alone holds this token: no ready chunk matches it, though Milvus' first hit is the orphan's.
        assert store.bm25_matches(["GLACIOMELT-ZX9", "XQ-77"]) == [False, True]
        assert store.get_context_window(orphan, 1, 1) == []
        assert store.get_section(orphan, "ABSTRACT", 500) == []
        assert all(p.doc_id != orphan for p in store.search_papers("glacier melt forecasting", k=10))
    finally:
        store.delete_chunks_of(orphan)


def test_reads_by_doc_id_skip_a_paper_that_is_not_ready(store: PaperStore) -> None:
    did = doc_id("reef")
    store.set_status(did, "ingesting")
    try:
        assert store.get_context_window(did, 1, 1) == []
        assert store.get_section(did, "ABSTRACT", 500) == []
    finally:
        store.set_status(did, "ready")
    assert store.get_context_window(did, 1, 1)


def test_a_text_over_the_varchar_limit_is_refused_not_cut(store: PaperStore) -> None:
    chunks = chunks_of("traffic", store.embedder.token_counter)
    huge = "signal " * 10_000  # 70,000 bytes
    chunks[2] = chunks[2].model_copy(update={"text": huge, "index_text": huge})
    did = doc_id("huge")
    with pytest.raises(StoreError, match=r"paper .+: chunk 2 .+text is 70,000 bytes, over Milvus' 65,535-byte limit"):
        store.insert_paper_chunks(parsed("traffic"), chunks, did, sha("huge"), "huge.md")
    assert store.get_paper(did) is None and store.count_chunks(did, kind=None) == 0  # nothing written


def _old_catalogue(tmp_path: Path, lacking: tuple[str, ...], row: dict[str, Any], version: str) -> None:
    """A papers collection of an earlier schema (without the fields `lacking`) holding `row`."""
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    client = MilvusClient(str((tmp_path / "milvus.db").resolve()))
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for name, dtype in PAPER_FIELDS.items():
        if name in lacking:
            continue
        if name == "search_text":
            schema.add_field(name, dtype, max_length=65535, enable_analyzer=True)
        elif dtype == DataType.VARCHAR:
            schema.add_field(name, dtype, max_length=4096, is_primary=name == "doc_id")
        elif dtype == DataType.FLOAT_VECTOR:
            schema.add_field(name, dtype, dim=384)
        else:
            schema.add_field(name, dtype)
    index = MilvusClient.prepare_index_params()
    index.add_index("vector", index_type="HNSW", metric_type="COSINE")
    if "sparse" not in lacking:
        bm25 = Function(
            name="search_text_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["search_text"],
            output_field_names=["sparse"],
        )
        schema.add_function(bm25)
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    props = {"paperscope.embedder": "local:all-MiniLM-L6-v2", "paperscope.dim": "384", "paperscope.schema": version}
    client.create_collection("papers_papers", schema=schema, index_params=index, properties=props)
    client.insert("papers_papers", [row])
    client.close()


def test_a_catalogue_of_schema_3_gains_its_enrichments_and_summary(tmp_path: Path) -> None:
    """A knowledge base built before enrichment existed is migrated on open: no enrichment, no summary."""
    row = dict(
        doc_id=doc_id("old"), title="OldNet: An Old Paper", authors=["Ada Lovelace"], year=2020, abstract="",
        source="/x.pdf", sources=["/x.pdf"], sha256=sha("old"), n_chunks=0, pages=1, sections=[], status="ready",
        ingested_at=1, aliases=[["OldNet", "short", 1.0]], search_text="OldNet: An Old Paper OldNet",
        vector=[1.0] + [0.0] * 383,
    )  # fmt: skip
    _old_catalogue(tmp_path, ("enrichments", "summary", "meta", "references"), row, "3")
    with PaperStore(Settings(home=tmp_path), embedder()) as store:
        [paper] = store.list_papers()
        assert (paper.doc_id, paper.enrichments, paper.summary, paper.sources) == (doc_id("old"), [], "", ["/x.pdf"])
        assert {"enrichments", "summary"} <= set(_fields(store, store.papers_name))
        assert [p.doc_id for p in store.search_papers_bm25("OldNet")] == [doc_id("old")]


def test_a_catalogue_of_schema_4_gains_its_library_metadata(tmp_path: Path) -> None:
    """A knowledge base built before library metadata existed is migrated on open: none known, the rest kept."""
    row = dict(
        doc_id=doc_id("old"), title="OldNet: An Old Paper", authors=["Ada Lovelace"], year=2020, abstract="",
        source="/x.pdf", sources=["/x.pdf"], sha256=sha("old"), n_chunks=0, pages=1, sections=[], status="ready",
        ingested_at=1, aliases=[["OldNet", "short", 1.0]], search_text="OldNet: An Old Paper OldNet",
        enrichments=["headers"], summary="", vector=[1.0] + [0.0] * 383,
    )  # fmt: skip
    _old_catalogue(tmp_path, ("meta", "references"), row, "4")
    with PaperStore(Settings(home=tmp_path), embedder()) as store:
        [paper] = store.list_papers()
        assert (paper.doc_id, paper.enrichments, paper.meta.empty, paper.meta.collections) == (
            doc_id("old"), ["headers"], True, []
        )  # fmt: skip
        assert "meta" in _fields(store, store.papers_name)
        assert [p.doc_id for p in store.catalogue().papers] == [doc_id("old")]


def test_a_catalogue_of_schema_1_gains_its_sources_and_aliases(tmp_path: Path) -> None:
    """A knowledge base built before `sources` and `aliases` existed is migrated on open, every row kept."""
    from pymilvus import DataType, MilvusClient

    settings = Settings(home=tmp_path)
    path = str((tmp_path / "milvus.db").resolve())
    client = MilvusClient(path)
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for name, dtype in PAPER_FIELDS.items():
        if name in ("sources", "aliases", "search_text", "sparse", "enrichments", "summary", "meta", "references"):
            continue  # the fields schema 1 did not have
        if dtype == DataType.VARCHAR:
            schema.add_field(name, dtype, max_length=4096, is_primary=name == "doc_id")
        elif dtype == DataType.FLOAT_VECTOR:
            schema.add_field(name, dtype, dim=384)
        else:
            schema.add_field(name, dtype)
    index = MilvusClient.prepare_index_params()
    index.add_index("vector", index_type="HNSW", metric_type="COSINE")
    props = {"paperscope.embedder": "local:all-MiniLM-L6-v2", "paperscope.dim": "384", "paperscope.schema": "1"}
    client.create_collection("papers_papers", schema=schema, index_params=index, properties=props)
    row = dict(
        doc_id=doc_id("old"), title="OldNet: An Old Paper", authors=["Ada Lovelace"], year=2020, abstract="",
        source="/x.pdf", sha256=sha("old"), n_chunks=0, pages=1, sections=[], status="ready", ingested_at=1,
        vector=[1.0] + [0.0] * 383,
    )  # fmt: skip
    client.insert("papers_papers", [row])
    client.close()
    with PaperStore(settings, embedder()) as store:
        [paper] = store.list_papers()
        assert (paper.doc_id, paper.title, paper.sources) == (doc_id("old"), "OldNet: An Old Paper", ["/x.pdf"])
        assert {"sources", "aliases", "search_text", "sparse"} <= set(_fields(store, store.papers_name))
        assert store.papers_from_source("/x.pdf")[0].doc_id == doc_id("old")
        assert {"OldNet", "Lovelace", "Lovelace et al"} <= {a.text for a in paper.aliases}
        assert [p.doc_id for p in store.search_papers_bm25("OldNet by Lovelace")] == [doc_id("old")]


def test_reading_never_creates_a_knowledge_base(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    with pytest.raises(StoreError, match="knowledge base 'papers' does not exist: there is no store at"):
        PaperStore(settings, embedder(), create=False)
    assert not (tmp_path / "home").exists()
    PaperStore(settings, embedder()).close()  # ingest creates it
    typo = settings.with_overrides(store={"kb": "typo"})
    with pytest.raises(StoreError, match=r"knowledge base 'typo' does not exist \(existing: 'papers'\)"):
        PaperStore(typo, embedder(), create=False)
    with PaperStore(settings, embedder(), create=False) as store:
        assert store.client.list_collections() == ["papers_chunks", "papers_papers"]  # nothing was added


def test_a_damaged_lite_file_is_not_blamed_on_another_process(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    PaperStore(settings, embedder()).close()
    data = tmp_path / "milvus.db"
    for manifest in (data / "collections" / "papers_chunks").glob("manifest.json*"):
        manifest.write_text("garbage")
    said = r"collection papers_chunks is damaged: .+/manifest\.json cannot be read \(.+\); move .+/papers_chunks aside"
    with pytest.raises(StoreError, match=said):
        PaperStore(settings, embedder())
    shutil.rmtree(data / "collections")
    (data / "collections").write_text("not a directory")
    with pytest.raises(StoreError) as err:
        PaperStore(settings, embedder())
    assert "is damaged; move it aside" in str(err.value) and "another process" not in str(err.value)

    (data / "collections").unlink()
    (data / "collections").mkdir()
    import fcntl

    with (data / "LOCK").open("rb") as held:  # another holder of the lock, as a second paperscope would be
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreError, match="another process is using this Milvus Lite file"):
            PaperStore(settings, embedder())


def test_a_file_where_the_lite_directory_should_be_is_explained(tmp_path: Path) -> None:
    (tmp_path / "milvus.db").write_text("an old single-file store")
    with pytest.raises(StoreError, match="is not a Milvus Lite data directory"):
        PaperStore(Settings(home=tmp_path), embedder())
    with pytest.raises(StoreError, match=r"name must end in \.db"):
        PaperStore(Settings(home=tmp_path, store={"uri": str(tmp_path / "kbdir")}), embedder())
