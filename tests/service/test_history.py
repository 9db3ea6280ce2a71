"""A conversation's assistant messages name their sources by citation id, in `sources` or in their text."""

from __future__ import annotations

from paperscope.service.history import HistoryMessage, citations

DOC = "2df1e510-c87d-51ac-8cbd-6a95185e4569"
OTHER = "b57ab6a5-74da-5fa9-bc8c-a7375b1346a0"


def test_citations_from_the_sources_field_then_the_text() -> None:
    message = HistoryMessage(
        role="assistant",
        content=f"It used 1.2M queries [1].\n\nSources:\n[1] FlashRank · p. 3 · {DOC}:13\n[2] BlendIR · {OTHER}:4",
        sources=[f"{DOC}:36"],
    )
    assert citations(message) == [(DOC, 36), (DOC, 13), (OTHER, 4)]


def test_text_without_citation_ids_names_no_source() -> None:
    plain = HistoryMessage(role="assistant", content="It used 1.2M queries [1] (see 2df1e510 and 13:4).")
    assert citations(plain) == []
