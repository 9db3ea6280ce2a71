"""Citations in a model's answer: every one shown maps to a passage that was read, the rest go cleanly."""

from __future__ import annotations

import pytest

from paperscope.answer.citations import (
    UNSUPPORTED,
    CitationStream,
    Resolver,
    ground,
    grounding_notes,
    passage_id,
)
from paperscope.answer.model import Source

READ = {"1", "2", "3", "4", "5"}  # single-shot: the numbers of the sources the model was given


def by_number(ref: str) -> str | None:
    return ref if ref in READ else None


@pytest.mark.parametrize(
    ("written", "shown", "order"),
    [
        # the probe's case: an invented short id, a number past the sources, a shortened doc_id in parentheses
        ("The answer is 42 [P9:999] [1] [7] (see doc 1111...:7)", "The answer is 42 [1]", ["1"]),
        ("It reaches 90.9 F1 as shown in [P9:9] and [12].", "It reaches 90.9 F1.", []),
        ("This is described in [8]. Next [2].", "This is described. Next [1].", ["2"]),
        (
            "see [2, 3] and [5-6]; also [sic] and [Table 1].",
            "see [1][2][3]; also [sic] and [Table 1].",
            ["2", "3", "5"],
        ),
        ("- first [1]\n- second [9]\n- third [P1:2], [2]", "- first [1]\n- second\n- third [2]", ["1", "2"]),
        # ratios, times, years and equation numbers are not citations
        ("A 1:2 ratio (1:2) at (10:30), eq. (3) [4].", "A 1:2 ratio (1:2) at (10:30), eq. (3) [1].", ["4"]),
        ("In order of use: [5] then [3] then [5].", "In order of use: [1] then [2] then [1].", ["5", "3"]),
    ],
)
def test_citations_are_kept_renumbered_or_removed_with_their_punctuation(
    written: str, shown: str, order: list[str]
) -> None:
    grounded = ground(written, by_number)
    assert grounded.text == shown
    assert grounded.order == order


def test_nothing_that_survives_means_unsupported_and_says_so() -> None:
    grounded = ground("The answer is 42 [P9:999] [7].", by_number)
    assert not grounded.supported and grounded.claimed and grounded.dropped == ["P9:999", "7"]
    assert grounding_notes(grounded) == ["Removed 2 citations that point at no passage that was read.", UNSUPPORTED]


def test_an_answer_citing_nothing_is_not_supported_either() -> None:
    grounded = ground("The answer is 42.", by_number)
    assert not grounded.supported and not grounded.claimed
    assert grounding_notes(grounded) == ["The model cited none of the sources: its answer is not tied to them."]


def test_the_agents_listed_sources_are_numbered_after_the_inline_ones() -> None:
    seen = {"doc-a:3": "doc-a:3", "P1:3": "doc-a:3", "P1:4": "doc-a:4", "doc-a:4": "doc-a:4"}
    grounded = ground("Tokens [P1:4].", seen.get, listed=["P1:3", "P2:9", "P1:4"])
    assert grounded.text == "Tokens [1]." and grounded.order == ["doc-a:4", "doc-a:3"]
    assert grounded.dropped == ["P2:9"]


def test_summary_node_ids_are_citations_in_every_form() -> None:
    seen = {"P1:raptor:1.2": "doc-a:raptor:1.2", "P1:3": "doc-a:3"}
    grounded = ground("Overall [P1:raptor:1.2], in detail [P1:3, P1:raptor:1.2]; see P1:raptor:1.2.", seen.get)
    assert grounded.text == "Overall [1], in detail [2][1]; see [1]."
    assert grounded.order == ["doc-a:raptor:1.2", "doc-a:3"]
    assert ground("Not read [P1:raptor:2.0].", seen.get).dropped == ["P1:raptor:2.0"]


def test_bare_passage_ids_outside_brackets_are_citations_too() -> None:
    seen = {"P1:3": "doc-a:3"}
    grounded = ground("As P1:3 shows, and P2:7 claims, it works.", seen.get)
    assert grounded.text == "As [1] shows, and claims, it works." and grounded.order == ["doc-a:3"]


def test_a_stream_shows_the_same_text_as_the_final_answer() -> None:
    written = "First claim [P9:1]. Second claim [3] and [3].\n- a bullet (see doc 1f3a...:2)\n- another [1]."
    pieces: list[str] = []
    stream = CitationStream(by_number, pieces.append)
    for i in range(0, len(written), 3):  # three characters at a time, as a model streams
        stream.feed(written[i : i + 3])
    stream.close()
    assert "".join(pieces) == ground(written, by_number).text
    assert "".join(pieces) == "First claim. Second claim [1].\n- a bullet\n- another [2]."


# --- the one resolver -----------------------------------------------------------------------------------------


def _source(n: int, doc_id: str, first: int, last: int, citation: str | None = None) -> Source:
    return Source(
        n=n,
        citation=citation or f"{doc_id}:{first}",
        doc_id=doc_id,
        title="t",
        section_title="s",
        section_category="METHOD",
        chunk_index=first,
        chunk_range=(first, last),
        page=1,
        pages=(1, 1),
        text="x",
    )


def test_numbered_sources_resolve_by_number_or_by_a_passage_inside_their_range() -> None:
    resolve = Resolver.of_sources(
        [_source(1, "a", 3, 5), _source(2, "b", 7, 7), _source(3, "a", 0, 0, citation="a:raptor:1.2")]
    )
    assert [resolve(r) for r in ("1", "02", "3", "4")] == ["1", "2", "3", None]  # numbers shown, no others
    assert [resolve(r) for r in ("a:4", "a:04", "b:7", "a:raptor:1.2")] == ["1", "1", "2", "3"]
    assert resolve("a:6") is None and resolve("c:3") is None  # outside every source read


def test_an_agent_run_resolves_what_it_was_shown_by_label_or_full_id() -> None:
    seen: dict[str, object] = {"doc-a:12": object()}
    resolve = Resolver.of_seen(seen, lambda paper: "doc-a" if paper.upper() == "P1" else paper.strip())
    assert resolve("P1:12") == resolve("[p1:012]") == resolve("doc-a:12") == "doc-a:12"
    assert resolve("P1:13") is None and resolve("P2:12") is None and resolve("3") is None
    seen["doc-a:13"] = object()  # shown by a later tool call of the same run: citable from then on
    assert resolve("P1:13") == "doc-a:13"
    assert passage_id("P1:raptor:2.0", lambda p: "doc-a") == "doc-a:raptor:2.0"
