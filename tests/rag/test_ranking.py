"""The engine's postprocessors on hand-made candidates: section preference, MMR, neighbours giving way."""

from __future__ import annotations

import pytest

from paperscope.parser.models import SectionCategory as Cat
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ranking import diversify, drop_references, section_values, spread, survey_quota
from paperscope.rag.store import StoredChunk


def hit(
    i: int, score: float, vector: list[float], cat: Cat = Cat.METHOD, doc: str = "d", title: str = "3 Method"
) -> StoredChunk:
    return StoredChunk(
        id=i, doc_id=doc, title="T", year=None, score=score, vector=vector, chunk_index=10 * i, text=f"t{i}",
        index_text=f"t{i}", section_title=title, parent_section="", section_category=cat,
        hierarchy_level=0, page_number=1,
    )  # fmt: skip


@pytest.mark.parametrize(("lam", "expected"), [(1.0, [0, 1]), (0.6, [0, 2])])
def test_ranking_gives_way_to_a_different_passage_under_mmr(
    local_embedder: CachedEmbedder, lam: float, expected: list[int]
) -> None:
    hits = [hit(0, 10.0, [1.0, 0.0]), hit(1, 9.5, [0.99, 0.05]), hit(2, 8.0, [0.0, 1.0])]
    ranked = diversify(local_embedder, hits, section_values(hits, []), lam)
    assert [h.id for h in spread(ranked, 2, 1)] == expected


def test_the_asked_section_leads_the_abstract_is_preferred_and_related_work_trails() -> None:
    hits = [
        hit(0, 10.0, [1, 0], Cat.RELATED_WORK),
        hit(1, 9.6, [1, 0], Cat.EVALUATION),
        hit(2, 8.0, [1, 0], Cat.ABSTRACT),
    ]
    values = section_values(hits, [Cat.EVALUATION])
    assert sorted(range(3), key=lambda i: -values[i]) == [1, 2, 0]


def test_an_unclassified_numbered_section_of_the_body_does_not_trail_like_back_matter() -> None:
    """ "3.2 Additional Components" (no category of its own) is the body of the paper; an unnumbered
    "Acknowledgments" or "Author biographies" is back matter and trails."""
    hits = [
        hit(0, 10.0, [1, 0], Cat.OTHER, title="Author biographies"),
        hit(1, 10.0, [1, 0], Cat.OTHER, title="3.2 Additional Components"),
        hit(2, 10.0, [1, 0], Cat.OTHER, title="IV. System Design"),
    ]
    values = section_values(hits, [])
    assert values[1] == values[2] == 1.0 and values[0] < 1.0


def test_neighbours_of_a_pick_give_way() -> None:
    a, b, c = hit(0, 3, [1, 0]), hit(0, 2, [1, 0]).model_copy(update={"chunk_index": 1}), hit(3, 1, [0, 1])
    assert [h.chunk_index for h in spread([a, b, c], 2, window=1)] == [0, 30]
    assert [h.chunk_index for h in spread([a, b, c], 2, window=0)] == [0, 1]


def test_reference_lists_are_dropped_unless_citations_are_asked_about() -> None:
    hits = [hit(0, 3, [1, 0], Cat.OTHER, title="References"), hit(1, 2, [1, 0])]
    assert [h.id for h in drop_references("how does it work", hits, 5)] == [1]
    assert [h.id for h in drop_references("which papers does it cite", hits, 5)] == [0, 1]


def test_a_survey_takes_a_passage_a_paper_and_more_from_one_that_dominates() -> None:
    even = [hit(0, 5, [1, 0], doc="a"), hit(1, 4.8, [1, 0], doc="b"), hit(2, 4.5, [1, 0], doc="c")]
    assert survey_quota(even, {}, papers=5, per_paper=1) == {"a": 1, "b": 1, "c": 1}
    lead = [hit(0, 9, [1, 0], doc="a"), hit(1, 2, [1, 0], doc="b")]
    assert survey_quota(lead, {}, papers=5, per_paper=1) == {"a": 3, "b": 1}
