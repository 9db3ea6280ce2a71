"""What the papers catalogue stores of a paper's identity: its alias rows and the text BM25 paper search reads."""

from __future__ import annotations

from paperscope.rag.identity import alias_rows, identity_of, search_text
from paperscope.rag.store import PaperAlias

DPR = identity_of(
    "Dense Passage Retrieval for Open-Domain Question Answering",
    "We present DPR, a retriever.",
    ["Vladimir Karpukhin", "Barlas Oguz"],
    2020,
    "2004.04906",
)


def test_alias_rows_are_what_the_catalogue_reads_back_as_paper_aliases() -> None:
    rows = alias_rows(DPR)
    assert rows[0] == ["Dense Passage Retrieval for Open-Domain Question Answering", "title", 1.0]
    aliases = [PaperAlias(text=str(t), kind=str(k), weight=float(w)) for t, k, w in rows]
    assert [(a.text, a.kind, a.weight) for a in aliases] == [(a.text, a.kind, a.weight) for a in DPR.aliases]
    # "We present DPR": what the paper says it introduces is its name (stronger than the initials).
    assert ["DPR", "name", 0.8] in rows and ["Karpukhin et al", "first_author", 0.8] in rows


def test_search_text_holds_title_aliases_and_abstract_but_not_the_year() -> None:
    title, names, abstract = search_text("Dense Passage Retrieval", DPR, "We present DPR.").split("\n")
    assert (title, abstract) == ("Dense Passage Retrieval", "We present DPR.")
    assert {"DPR", "Vladimir Karpukhin", "Oguz", "arXiv:2004.04906"} <= set(names.split(" ; "))
    assert "2020" not in names


def test_the_name_a_paper_says_it_introduces_is_an_alias() -> None:
    """Sentence-initial "We", and the apposition "a new ... architecture, the Transformer"."""
    transformer = identity_of(
        "Attention Is All You Need",
        "We propose a new simple network architecture, the Transformer, based solely on attention mechanisms.",
        [],
    )
    assert ("Transformer", "name") in [(a.text, a.kind) for a in transformer.aliases]
    pasa = identity_of("An Agent for Paper Search", "We present PaSa, an advanced Paper Search agent.", [])
    assert ("PaSa", "name") in [(a.text, a.kind) for a in pasa.aliases]
