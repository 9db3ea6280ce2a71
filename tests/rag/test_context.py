"""Context assembly on a real Milvus Lite store with the real local embedder: windows, merging, budget, intros."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import cache

import pytest
from pydantic import ValidationError

from paperscope.config import Settings
from paperscope.parser import Paper, SectionCategory, parse_markdown
from paperscope.rag.chunking import Chunk, ChunkOptions, chunk_paper
from paperscope.rag.context import (
    Evidence,
    PaperContext,
    assemble,
    expand_windows,
    format_context,
    introduction,
)
from paperscope.rag.embeddings import CachedEmbedder, make_embedder
from paperscope.rag.filters import SearchFilter
from paperscope.rag.store import PaperStore, StoredChunk
from tests.markdown_papers import markdown

# No overlap and paragraphs of 25-45 tokens: one chunk per paragraph, so chunk_index is predictable.
OPTIONS = ChunkOptions(chunk_size=48, overlap=0)


def doc_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"paperscope-test-context/{name}"))


@cache
def embedder() -> CachedEmbedder:
    return make_embedder("local")


KELP = markdown(
    "Counting Kelp Forests from Drone Imagery",
    2023,
    [
        (
            "## Abstract",
            [
                "We count kelp canopy from drone images with a segmentation network and track it over time. "
                "Canopy maps from one flight per month follow the seasonal growth of whole forests."
            ],
        ),
        (
            "## 1 Introduction",
            [
                "Kelp forests shelter fish and protect coasts, yet their extent is measured by divers at a few sites. "
                "Those surveys are slow and miss most of the coastline.",
                "Drones photograph whole bays in an hour, but the images must still be turned into canopy maps. "
                "Drawing those maps by hand takes an ecologist a full day per flight.",
                "We ask whether a segmentation network trained on few labels can map kelp canopy across seasons, "
                "and whether its maps agree with what divers measure underwater.",
            ],
        ),
        (
            "## 2 Method",
            [
                "Images are tiled into patches of 512 pixels and corrected for glint with a polarizing filter model. "
                "Patches that are mostly land are dropped before training.",
                "A U-Net with a small encoder labels every pixel as kelp, water, foam or rock from the red edge band. "
                "The encoder is pretrained on aerial farmland imagery.",
                "Labels come from forty hand-drawn canopy maps that two ecologists checked independently. "
                "Pixels on which the two ecologists disagree are ignored by the loss.",
                "Tides change how much canopy floats at the surface, so each flight is normalized to mean sea level "
                "with a tide table and the slope of the seabed.",
            ],
        ),
        (
            "## 3 Results",
            [
                "On held-out bays the network reaches an intersection over union of 0.83 for the kelp class, "
                "against 0.61 for thresholding a vegetation index.",
                "Canopy area estimated from drones agrees with diver transects within nine percent on average. "
                "The agreement holds in summer and in winter.",
                "Errors concentrate in foam near the shore, where breaking waves look like floating fronds. "
                "A foam class in the labels halves those errors.",
            ],
        ),
        (
            "## 4 Conclusion",
            [
                "Cheap drone flights can replace most diver surveys for tracking kelp canopy extent. "
                "We will release the labelled maps and the trained network."
            ],
        ),
    ],
)

BEES = markdown(
    "Acoustic Monitoring of Honeybee Colonies",
    2021,
    [
        (
            "## Abstract",
            [
                "We detect queenless honeybee colonies from the hum of the hive recorded by a cheap microphone. "
                "A day of sound is enough to raise an alarm."
            ],
        ),
        (
            "## 1 Introduction",
            [
                "Beekeepers open hives to check the queen, which disturbs the colony and costs hours every week. "
                "Large apiaries cannot inspect every hive often enough.",
                "A colony that loses its queen changes its sound within a day, long before the beekeeper notices. "
                "Experienced beekeepers say a queenless hive roars.",
            ],
        ),
        (
            "## 2 Method",
            [
                "A microphone under the frames records one minute of sound every hour and stores a mel spectrogram. "
                "Raw audio is never kept, which saves memory.",
                "A small convolutional classifier predicts whether the queen is present from each spectrogram. "
                "It runs on the recorder's own microcontroller.",
                "Predictions are smoothed over a day with a hidden Markov model that rarely switches state, "
                "because a colony gains or loses a queen only a few times a year.",
            ],
        ),
        (
            "## 3 Results",
            [
                "Across thirty hives the smoothed classifier finds queen loss with 94 percent recall in one day. "
                "Precision is 88 percent over the whole season.",
                "False alarms happen mostly during swarming, when the hive sound also changes sharply. "
                "Beekeepers said these alarms were still useful.",
                "Battery life of the recorder is eight months, enough for a full beekeeping season, "
                "and a recorder costs less than a single hive box.",
            ],
        ),
        (
            "## 4 Conclusion",
            [
                "Listening to hives tells beekeepers when to open them and saves many inspections. "
                "Next we will detect swarming before it happens."
            ],
        ),
    ],
)

# No Introduction (its Abstract stands in) and no year.
DUNES = markdown(
    "Dune Migration Measured with Satellite Radar",
    None,
    [
        (
            "## Abstract",
            [
                "Sand dunes move a few metres a year; we measure their speed from radar image pairs. "
                "Radar sees through the dust storms that hide dunes from optical satellites."
            ],
        ),
        (
            "## 1 Method",
            [
                "Pairs of radar images a year apart are matched by normalized cross correlation over dune crests. "
                "Windows of 64 pixels give one displacement each.",
                "Displacements are filtered by coherence so that vegetated areas do not produce false motion. "
                "Isolated vectors that disagree with their neighbours are removed.",
            ],
        ),
        (
            "## 2 Results",
            [
                "Dunes in the study area move 4.2 metres per year toward the south west, driven by winter winds. "
                "Small dunes move faster than large ones.",
                "Speeds agree with field surveys of marked crests within half a metre per year. "
                "The survey stakes were measured with a differential receiver.",
            ],
        ),
    ],
)

# Neither Introduction nor Abstract.
NOTES = markdown(
    "Field Notes on Lichen Growth",
    2020,
    [
        (
            "## 1 Method",
            [
                "Lichen patches on granite were photographed every spring for twelve years at the same angle. "
                "A tripod mark chiselled into the rock fixed the camera position.",
                "Patch areas were traced by hand and converted to square millimetres with a reference scale. "
                "Each patch was traced twice and the mean was kept.",
            ],
        )
    ],
)

PAPERS = {"kelp": KELP, "bees": BEES, "dunes": DUNES, "notes": NOTES}
# chunk_index -> category name, one chunk per paragraph.
LAYOUT = {
    "kelp": ["ABSTRACT"] + ["INTRODUCTION"] * 3 + ["METHOD"] * 4 + ["EVALUATION"] * 3 + ["CONCLUSION"],
    "bees": ["ABSTRACT"] + ["INTRODUCTION"] * 2 + ["METHOD"] * 3 + ["EVALUATION"] * 3 + ["CONCLUSION"],
    "dunes": ["ABSTRACT"] + ["METHOD"] * 2 + ["EVALUATION"] * 2,
    "notes": ["METHOD"] * 2,
}


def kelp_page(index: int) -> int:
    """Kelp's chunks are spread over pages (Markdown has one page): three chunks a page."""
    return 1 + index // 3


def with_pages(chunks: list[Chunk]) -> list[Chunk]:
    """Kelp chunks on pages 1..4; chunk 4 runs over to the next page (metadata page_end)."""
    out = []
    for c in chunks:
        page = kelp_page(c.chunk_index)
        end = page + 1 if c.chunk_index == 4 else page
        out.append(c.model_copy(update={"page_number": page, "metadata": {**c.metadata, "page_end": end}}))
    return out


@cache
def parsed(name: str) -> Paper:
    return parse_markdown(PAPERS[name])


class Flat:
    """A token counter where every chunk costs 10 tokens: budgets in whole chunks."""

    max_tokens = 256

    def count(self, text: str) -> int:
        return 10


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PaperStore]:
    settings = Settings(home=tmp_path_factory.mktemp("context"))
    with PaperStore.open(settings, embedder()) as s:
        for name in PAPERS:
            chunks = chunk_paper(parsed(name), s.embedder.token_counter, options=OPTIONS)
            if name == "kelp":
                chunks = with_pages(chunks)
            sha = hashlib.sha256(name.encode()).hexdigest()
            s.insert_paper_chunks(parsed(name), chunks, doc_id(name), sha, f"{name}.md")
        yield s


@cache
def _rows(store: PaperStore, name: str) -> tuple[StoredChunk, ...]:
    return tuple(store.get_chunks(doc_id(name)))


def rows(store: PaperStore, name: str) -> list[StoredChunk]:
    """The paper's body chunks as stored (read once per paper)."""
    return list(_rows(store, name))


def hit(store: PaperStore, name: str, index: int, score: float = 0.5) -> StoredChunk:
    """A search hit on chunk `index` of a paper."""
    return rows(store, name)[index].model_copy(update={"score": score})


def spans(evidence: list[Evidence]) -> list[tuple[str, int, int, list[int]]]:
    """(paper, lo, hi, hits) of each evidence, papers by short name."""
    names = {doc_id(n): n for n in PAPERS}
    return [(names[e.doc_id], e.lo, e.hi, e.hits) for e in evidence]


def test_papers_chunk_one_paragraph_each(store: PaperStore) -> None:
    """The layout every other test relies on."""
    for name, layout in LAYOUT.items():
        assert [c.section_category.name for c in rows(store, name)] == layout, name
        assert [c.chunk_index for c in rows(store, name)] == list(range(len(layout)))


# --- windows ------------------------------------------------------------------------------------


def test_window_at_the_start_is_clipped(store: PaperStore) -> None:
    [e] = expand_windows(store, [hit(store, "kelp", 0, 0.9)])
    assert (e.lo, e.hi, e.hits, e.rank, e.score) == (0, 1, [0], 0, 0.9)
    assert [c.chunk_index for c in e.chunks] == [0, 1]
    assert e.doc_id == doc_id("kelp") and e.title == "Counting Kelp Forests from Drone Imagery" and e.year == 2023


def test_window_in_the_middle(store: PaperStore) -> None:
    [e] = expand_windows(store, [hit(store, "kelp", 5)])
    assert (e.lo, e.hi) == (4, 6)
    texts = [c.text for c in rows(store, "kelp")[4:7]]
    assert e.text == "\n\n".join(texts)
    [wide] = expand_windows(store, [hit(store, "kelp", 5)], window=2)
    assert (wide.lo, wide.hi) == (3, 7)
    [alone] = expand_windows(store, [hit(store, "kelp", 5)], window=0)
    assert (alone.lo, alone.hi, alone.hits) == (5, 5, [5])


def test_window_at_the_end_is_clipped(store: PaperStore) -> None:
    last = len(LAYOUT["kelp"]) - 1
    [e] = expand_windows(store, [hit(store, "kelp", last)], window=2)
    assert (e.lo, e.hi) == (last - 2, last)


def test_a_window_wider_than_one_read_is_fetched_whole(store: PaperStore) -> None:
    [e] = expand_windows(store, [hit(store, "kelp", 6)], window=60)
    assert [c.chunk_index for c in e.chunks] == list(range(len(LAYOUT["kelp"])))


def test_the_hit_object_stands_in_for_its_row(store: PaperStore) -> None:
    [e] = expand_windows(store, [hit(store, "kelp", 5, 0.42)])
    assert [c.score for c in e.chunks] == [None, 0.42, None]


# --- merging ------------------------------------------------------------------------------------


def test_touching_windows_merge_with_both_hits_in_rank_order(store: PaperStore) -> None:
    # 4..6 and 7..9 touch (6 + 1 == 7).
    evidence = expand_windows(store, [hit(store, "kelp", 8, 0.7), hit(store, "kelp", 5, 0.9)])
    assert spans(evidence) == [("kelp", 4, 9, [8, 5])]
    [e] = evidence
    assert e.rank == 0 and e.score == 0.9  # the highest score, even when it is not the best rank
    assert e.citation == f"{doc_id('kelp')}:8"
    assert e.section_category is SectionCategory.EVALUATION  # of the best-ranked hit (8), not of chunk 5


def test_overlapping_windows_merge(store: PaperStore) -> None:
    evidence = expand_windows(store, [hit(store, "kelp", 5), hit(store, "kelp", 6)])
    assert spans(evidence) == [("kelp", 4, 7, [5, 6])]


def test_windows_with_a_gap_stay_apart(store: PaperStore) -> None:
    # 1..3 and 5..7: chunk 4 between them is nobody's neighbour.
    evidence = expand_windows(store, [hit(store, "kelp", 6), hit(store, "kelp", 2)])
    assert spans(evidence) == [("kelp", 5, 7, [6]), ("kelp", 1, 3, [2])]
    assert [e.rank for e in evidence] == [0, 1]


def test_hits_of_two_papers_stay_apart_in_rank_order(store: PaperStore) -> None:
    hits = [hit(store, "bees", 5), hit(store, "kelp", 5), hit(store, "bees", 1)]
    evidence = expand_windows(store, hits)
    assert spans(evidence) == [("bees", 4, 6, [5]), ("kelp", 4, 6, [5]), ("bees", 0, 2, [1])]
    assert [e.rank for e in evidence] == [0, 1, 2]
    assert evidence[0].title == "Acoustic Monitoring of Honeybee Colonies"


def test_derived_and_repeated_hits(store: PaperStore) -> None:
    question = hit(store, "kelp", 2).model_copy(update={"kind": "question"})
    parent = hit(store, "bees", 0).model_copy(update={"kind": "parent"})
    hits = [question, parent, hit(store, "kelp", 9), hit(store, "kelp", 9, 0.1)]
    evidence = expand_windows(store, hits)
    assert spans(evidence) == [("kelp", 8, 10, [9])]
    assert evidence[0].rank == 2  # ranks are positions in the input, skipped hits included
    assert evidence[0].score == 0.5  # the repeat does not count
    assert expand_windows(store, [question, parent]) == []
    assert expand_windows(store, []) == []


def test_bad_arguments(store: PaperStore) -> None:
    with pytest.raises(ValueError, match="window"):
        expand_windows(store, [hit(store, "kelp", 1)], window=-1)
    with pytest.raises(ValueError, match="token_budget"):
        expand_windows(store, [hit(store, "kelp", 1)], token_budget=0)
    with pytest.raises(ValueError, match="max_papers"):
        assemble(store, [hit(store, "kelp", 1)], max_papers=0)
    with pytest.raises(ValueError, match="start"):
        format_context([], start=0)


# --- token budget -------------------------------------------------------------------------------


def budget(
    store: PaperStore, hits: list[StoredChunk], tokens: int, window: int = 1
) -> list[tuple[str, int, int, list[int]]]:
    return spans(expand_windows(store, hits, window=window, token_budget=tokens, counter=Flat()))


def test_budget_drops_neighbours_before_evidence(store: PaperStore) -> None:
    hits = [hit(store, "kelp", 5), hit(store, "bees", 5)]
    assert budget(store, hits, 60) == [("kelp", 4, 6, [5]), ("bees", 4, 6, [5])]
    # Neighbours go first, the lower-ranked evidence's first.
    assert budget(store, hits, 50) == [("kelp", 4, 6, [5]), ("bees", 4, 5, [5])]
    assert budget(store, hits, 40) == [("kelp", 4, 6, [5]), ("bees", 5, 5, [5])]
    assert budget(store, hits, 30) == [("kelp", 4, 5, [5]), ("bees", 5, 5, [5])]
    assert budget(store, hits, 20) == [("kelp", 5, 5, [5]), ("bees", 5, 5, [5])]
    # Then the lower-ranked evidence as a whole.
    assert budget(store, hits, 19) == [("kelp", 5, 5, [5])]


def test_budget_drops_the_furthest_neighbours_first(store: PaperStore) -> None:
    hits = [hit(store, "kelp", 5)]
    assert budget(store, hits, 50, window=2) == [("kelp", 3, 7, [5])]
    assert budget(store, hits, 40, window=2) == [("kelp", 3, 6, [5])]
    assert budget(store, hits, 30, window=2) == [("kelp", 4, 6, [5])]


def test_of_two_neighbours_the_one_sharing_the_questions_words_is_kept(store: PaperStore) -> None:
    """With room for one neighbour of a hit, the one that shares the question's words stays (the rest of a
    table's rows, the sentence with the figure), not simply the one before it."""
    hits = [hit(store, "kelp", 5)]
    assert budget(store, hits, 20) == [("kelp", 4, 5, [5])]  # no question: the one before
    after = rows(store, "kelp")[6].text
    kept = expand_windows(store, hits, token_budget=20, counter=Flat(), query=after)
    assert spans(kept) == [("kelp", 5, 6, [5])]


def test_budget_keeps_hits_as_a_prefix_of_the_ranking(store: PaperStore) -> None:
    hits = [hit(store, "kelp", 2), hit(store, "bees", 5), hit(store, "kelp", 8), hit(store, "bees", 1)]
    assert budget(store, hits, 25) == [("kelp", 2, 2, [2]), ("bees", 5, 5, [5])]
    # The chunks between two merged hits belong to them: kept (or dropped) with the evidence.
    merged = [hit(store, "kelp", 5), hit(store, "kelp", 7), hit(store, "bees", 5)]
    assert budget(store, merged, 35) == [("kelp", 5, 7, [5, 7])]


def test_budget_always_keeps_the_top_hit(store: PaperStore) -> None:
    hits = [hit(store, "kelp", 5), hit(store, "kelp", 7), hit(store, "bees", 5)]
    # The best evidence's own hits (5..7) do not fit: it shrinks around its top hit.
    assert budget(store, hits, 25) == [("kelp", 4, 5, [5])]
    assert budget(store, hits, 1) == [("kelp", 5, 5, [5])]
    [e] = expand_windows(store, hits, token_budget=1)  # the store's real token counter
    assert (e.lo, e.hi, e.hits) == (5, 5, [5])


def test_real_token_budget(store: PaperStore) -> None:
    count = store.embedder.token_counter.count
    hits = [hit(store, "kelp", 5), hit(store, "bees", 5)]
    full = expand_windows(store, hits)
    total = sum(count(c.text) for e in full for c in e.chunks)
    assert spans(expand_windows(store, hits, token_budget=total)) == spans(full)
    cut = expand_windows(store, hits, token_budget=total - 1)
    assert sum(count(c.text) for e in cut for c in e.chunks) <= total - 1
    assert spans(cut) != spans(full) and [e.hits for e in cut] == [[5], [5]]


# --- introductions ------------------------------------------------------------------------------


def test_introduction_chunks_within_max_tokens(store: PaperStore) -> None:
    count = store.embedder.token_counter.count
    intro = introduction(store, doc_id("kelp"))
    assert [c.chunk_index for c in intro] == [1, 2, 3]
    assert all(c.section_category is SectionCategory.INTRODUCTION for c in intro)
    two = count(intro[0].text) + count(intro[1].text)
    assert [c.chunk_index for c in introduction(store, doc_id("kelp"), max_tokens=two)] == [1, 2]
    assert [c.chunk_index for c in introduction(store, doc_id("kelp"), max_tokens=1)] == [1]
    assert [c.chunk_index for c in introduction(store, doc_id("bees"))] == [1, 2]


def test_introduction_falls_back_to_the_abstract(store: PaperStore) -> None:
    intro = introduction(store, doc_id("dunes"))
    assert [(c.chunk_index, c.section_category) for c in intro] == [(0, SectionCategory.ABSTRACT)]
    assert introduction(store, doc_id("notes")) == []


def test_assemble_groups_by_paper_and_attaches_introductions(store: PaperStore) -> None:
    hits = [hit(store, "bees", 7), hit(store, "kelp", 9), hit(store, "bees", 4), hit(store, "kelp", 1)]
    papers = assemble(store, hits)
    assert [(p.doc_id, p.title, p.year) for p in papers] == [
        (doc_id("bees"), "Acoustic Monitoring of Honeybee Colonies", 2021),
        (doc_id("kelp"), "Counting Kelp Forests from Drone Imagery", 2023),
    ]
    bees, kelp = papers
    assert spans(bees.evidence) == [("bees", 3, 8, [7, 4])]
    assert spans(kelp.evidence) == [("kelp", 8, 10, [9]), ("kelp", 0, 2, [1])]
    assert [c.chunk_index for c in bees.introduction] == [1, 2]
    assert [c.chunk_index for c in kelp.introduction] == [3]  # 1 and 2 are already in the evidence
    assert all(c.doc_id == doc_id("kelp") for c in kelp.introduction)


def test_assemble_adds_the_first_papers_abstract_as_read_evidence(store: PaperStore) -> None:
    hits = [hit(store, "bees", 7), hit(store, "bees", 6), hit(store, "kelp", 9)]
    bees, kelp = assemble(store, hits, window=0, with_abstract=True)
    # The first paper's Abstract (chunk 0) joins its evidence last, read rather than found, in the place the two
    # touching hits left free; the second paper's does not.
    assert spans(bees.evidence) == [("bees", 6, 7, [7, 6]), ("bees", 0, 0, [0])]
    assert [e.read for e in bees.evidence] == [False, True]
    assert bees.evidence[1].chunks[0].section_category == SectionCategory.ABSTRACT
    assert [e.read for e in kelp.evidence] == [False]
    # Evidence that holds the Abstract already is not given it twice.
    [bees] = assemble(store, [hit(store, "bees", 1)], window=1, with_abstract=True)
    assert spans(bees.evidence) == [("bees", 0, 2, [1])] and not bees.evidence[0].read
    # A paper without an Abstract gets nothing.
    [notes] = assemble(store, [hit(store, "notes", 0)], window=0, with_abstract=True)
    assert [e.read for e in notes.evidence] == [False]
    assert all(not e.read for p in assemble(store, hits) for e in p.evidence)  # off by default
    # As many windows as hits: no place is free, and an answer never has more sources than hits.
    apart = assemble(store, [hit(store, "bees", 7), hit(store, "kelp", 9)], window=0, with_abstract=True)
    assert [e.read for p in apart for e in p.evidence] == [False, False]


def test_assemble_options(store: PaperStore) -> None:
    hits = [hit(store, "dunes", 3), hit(store, "notes", 0), hit(store, "kelp", 6)]
    [dunes, notes, _] = assemble(store, hits)
    assert [c.section_category for c in dunes.introduction] == [SectionCategory.ABSTRACT]
    assert dunes.year is None and notes.introduction == []
    assert all(p.introduction == [] for p in assemble(store, hits, with_introduction=False))
    short = assemble(store, hits, intro_tokens=1)
    assert [c.chunk_index for c in short[2].introduction] == [1]
    assert assemble(store, []) == []


def test_max_papers_keeps_the_budget_for_the_kept_papers(store: PaperStore) -> None:
    count = store.embedder.token_counter.count
    hits = [hit(store, "kelp", 5), hit(store, "bees", 5), hit(store, "kelp", 9)]
    room = sum(count(c.text) for c in rows(store, "kelp")[4:7]) + sum(count(c.text) for c in rows(store, "kelp")[8:11])
    [kelp] = assemble(store, hits, token_budget=room, max_papers=1)
    assert spans(kelp.evidence) == [("kelp", 4, 6, [5]), ("kelp", 8, 10, [9])]
    assert [e.rank for e in kelp.evidence] == [0, 2]
    both = assemble(store, hits, token_budget=room)
    assert [p.doc_id for p in both] == [doc_id("kelp"), doc_id("bees")]
    assert sum(len(e.chunks) for e in both[0].evidence) < 6


def test_assemble_from_a_real_search(store: PaperStore) -> None:
    hits = store.search_bm25("queen loss recall hives", SearchFilter(doc_ids=[doc_id("bees")]), k=1)
    [paper] = assemble(store, hits)
    [e] = paper.evidence
    assert e.citation == hits[0].citation == f"{doc_id('bees')}:6"
    assert (e.lo, e.hi) == (5, 7) and e.score == hits[0].score


# --- evidence and formatting -------------------------------------------------------------------


def test_evidence_properties(store: PaperStore) -> None:
    [e] = expand_windows(store, [hit(store, "kelp", 3), hit(store, "kelp", 4)], window=1)
    assert (e.lo, e.hi) == (2, 5)
    assert e.section_titles == ["1 Introduction", "2 Method"]
    assert e.section_category is SectionCategory.INTRODUCTION
    assert e.pages == (1, 3)  # chunk 5 is on page 2, chunk 4 ends on page 3
    assert e.citation == f"{doc_id('kelp')}:3"


def test_evidence_must_be_one_contiguous_span(store: PaperStore) -> None:
    kelp = rows(store, "kelp")
    base = {"doc_id": doc_id("kelp"), "title": "t", "year": None, "score": 0.0, "rank": 0}
    with pytest.raises(ValidationError, match="contiguous"):
        Evidence(chunks=[kelp[1], kelp[3]], hits=[1], **base)
    with pytest.raises(ValidationError, match="within"):
        Evidence(chunks=[kelp[1], kelp[2]], hits=[3], **base)
    with pytest.raises(ValidationError, match="body chunks of paper"):
        Evidence(chunks=[rows(store, "bees")[1]], hits=[1], **base)
    with pytest.raises(ValidationError):
        Evidence(chunks=[kelp[1]], hits=[], **base)


def test_format_context_exact_shape(store: PaperStore) -> None:
    kelp, dunes = rows(store, "kelp"), rows(store, "dunes")
    hits = [hit(store, "kelp", 6), hit(store, "dunes", 3), hit(store, "kelp", 10)]
    papers = assemble(store, hits)
    text, numbered = format_context(papers)

    def joined(chunks: list[StoredChunk]) -> str:
        return "\n\n".join(c.text for c in chunks)

    intro = " ".join(c.text for c in kelp[1:4])
    expected = "\n".join(
        [
            "[Paper: Counting Kelp Forests from Drone Imagery (2023)]",
            f"Context (Introduction): {intro}",
            f"Evidence [1] (2 Method, p. 2-3): {joined(kelp[5:8])}",
            f"Evidence [2] (3 Results / 4 Conclusion, p. 4): {joined(kelp[9:12])}",
            "",
            "[Paper: Dune Migration Measured with Satellite Radar]",
            f"Context (Introduction): {dunes[0].text}",
            f"Evidence [3] (1 Method / 2 Results, p. 1): {joined(dunes[2:5])}",
        ]
    )
    assert text == expected
    assert [(e.doc_id, e.hits) for e in numbered] == [
        (doc_id("kelp"), [6]),
        (doc_id("kelp"), [10]),
        (doc_id("dunes"), [3]),
    ]
    assert [e.citation for e in numbered] == [f"{doc_id('kelp')}:6", f"{doc_id('kelp')}:10", f"{doc_id('dunes')}:3"]


def test_format_context_numbering_and_omissions(store: PaperStore) -> None:
    hits = [hit(store, "notes", 1), hit(store, "bees", 0)]
    papers = assemble(store, hits, window=0)
    text, numbered = format_context(papers, start=4)
    notes, bees = rows(store, "notes"), rows(store, "bees")
    assert text == (
        "[Paper: Field Notes on Lichen Growth (2020)]\n"
        f"Evidence [4] (1 Method, p. 1): {notes[1].text}\n"
        "\n"
        "[Paper: Acoustic Monitoring of Honeybee Colonies (2021)]\n"
        f"Context (Introduction): {bees[1].text} {bees[2].text}\n"
        f"Evidence [5] (Abstract, p. 1): {bees[0].text}"
    )
    assert numbered == [papers[0].evidence[0], papers[1].evidence[0]]
    assert format_context([]) == ("", [])
    bare = PaperContext(doc_id=doc_id("notes"), title="Untitled", year=None)
    assert format_context([bare]) == ("[Paper: Untitled]", [])


def test_one_read_for_all_windows(store: PaperStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The windows of all the hits of all the papers are read in one call, whatever the number of spans."""
    calls: list[dict[str, list[int]]] = []
    read = store.get_windows

    def counting(wanted: Mapping[str, Sequence[int]]) -> dict[str, list[StoredChunk]]:
        calls.append({d: sorted(i) for d, i in wanted.items()})
        return read(wanted)

    monkeypatch.setattr(store, "get_windows", counting)
    hits = [hit(store, "kelp", 2), hit(store, "kelp", 7), hit(store, "bees", 2)]
    assert spans(expand_windows(store, hits)) == [("kelp", 1, 3, [2]), ("kelp", 6, 8, [7]), ("bees", 1, 3, [2])]
    assert calls == [{doc_id("kelp"): [1, 2, 3, 6, 7, 8], doc_id("bees"): [1, 2, 3]}]


def test_body_chunks_by_index(store: PaperStore) -> None:
    doc = doc_id("kelp")
    assert [c.chunk_index for c in store.get_body_chunks(doc, [3, 1, 3, 999])] == [1, 3]
    assert store.get_body_chunks(doc, []) == []
    with pytest.raises(ValueError, match="chunk indexes"):
        store.get_body_chunks(doc, [-1])
