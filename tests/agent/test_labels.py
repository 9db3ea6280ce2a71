"""Short paper labels of one run (P1, P2, ...) and the paper list the prompt shows."""

from __future__ import annotations

from paperscope.agent.labels import PaperLabels, paper_line

A = "0f0f0f0f-0000-0000-0000-000000000001"
B = "0f0f0f0f-0000-0000-0000-000000000002"


def test_labels_are_given_in_order_and_map_back_both_ways() -> None:
    labels = PaperLabels([A])
    assert labels.label(A) == "P1" and labels.label(B) == "P2" and labels.label(A) == "P1"
    assert labels.citation(B, 17) == "P2:17"
    assert [labels.doc_id(r) for r in ("P2", "p2", "[P2]", " P2 ", "P2:17", B)] == [B] * 6
    assert labels.doc_id("P9") is None  # label-shaped but unknown
    assert labels.doc_id("FlashRank") == "FlashRank"  # not a label: the caller validates it as a doc_id


def test_citations_in_either_form_resolve_to_full_ids() -> None:
    labels = PaperLabels([A, B])
    assert labels.resolve("P2:17") == labels.resolve("[p2:017]") == labels.resolve(f"{B}:17") == f"{B}:17"
    assert labels.resolve("P7:1") is None and labels.resolve("not a citation") is None


def test_summary_node_citations_are_shortened_and_resolved() -> None:
    labels = PaperLabels([A])
    assert labels.short(f"{A}:raptor:2.0") == "P1:raptor:2.0" and labels.short(f"{A}:12") == "P1:12"
    assert labels.resolve("P1:raptor:2.0") == labels.resolve(f"[{A}:raptor:02.0]") == f"{A}:raptor:2.0"
    assert labels.resolve("P5:raptor:1.0") is None


def test_expand_replaces_only_known_labels() -> None:
    labels = PaperLabels([A])
    assert labels.expand("[P1:3] and P1 but not P2 or AP1") == f"[{A}:3] and {A} but not P2 or AP1"


def test_paper_line_shows_year_and_the_names_a_paper_goes_by() -> None:
    line = paper_line("P3", "ChunkSage: Structure-Aware Chunking", 2024, ["ChunkSage", "arXiv 2406.11873", ""])
    assert line == "- P3: ChunkSage: Structure-Aware Chunking (2024; also: arXiv 2406.11873)"
    assert paper_line("P1", "A Title", None, ["AT", "Smith et al.", "AT"]) == "- P1: A Title (also: AT, Smith et al.)"
    assert paper_line("P2", "Plain", None) == "- P2: Plain"
