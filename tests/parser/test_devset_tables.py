"""Tables, boxes and titles on real dev papers (../shared/devset): results tables read as rows under their
column headers, chunks that know where their text stands on the page, titles of unusual layouts."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from paperscope.parser import Paper, Table, parse_pdf
from paperscope.parser.text import unscripted
from paperscope.rag.chunking import Chunk, chunk_paper
from paperscope.rag.tokens import local_token_counter
from tests.pdf_text import PageWords

DEVSET = Path(__file__).resolve().parents[3] / "shared" / "devset"
_cache: dict[str, Paper] = {}


def _paper(name: str) -> Paper:
    """A dev PDF parsed once per test session (pdfs/ or samples/)."""
    if not (DEVSET / "pdfs").is_dir():
        pytest.skip(f"the development set {DEVSET} is absent (it sits beside the repository)")
    if name not in _cache:
        path = DEVSET / ("samples" if name.startswith("sample_") else "pdfs") / name
        _cache[name] = parse_pdf(path)
    return _cache[name]


def _table(paper: Paper, label: str) -> Table:
    return next(t for t in paper.tables if t.label == label)


def _find(table: Table, cells: dict[str, str]) -> dict[str, str]:
    """The row whose cells under the named columns hold these values, as {column name: cell}."""
    for row in table.rows:
        named = dict(zip(table.header, row, strict=True))
        if all(named.get(k) == v for k, v in cells.items()):
            return named
    raise AssertionError(f"no row with {cells} in {table.label}: {table.header} {table.rows}")


def _row(table: Table, **cells: str) -> dict[str, str]:
    return _find(table, {k.replace("_", " "): v for k, v in cells.items()})


def test_results_table_reads_cell_by_cell_under_its_headers() -> None:
    """DPR's Table 2 (booktabs, full width, two-level header, group labels set once per block)."""
    dpr = _paper("emnlp2020_dense_passage_retrieval.pdf")
    table = _table(dpr, "Table 2")
    assert table.caption.startswith("Table 2: Top-20 & Top-100 retrieval accuracy on test sets")
    assert table.page == 5
    assert table.header[:3] == ["Training", "Retriever", "Top-20 NQ"] and "Top-100 SQuAD" in table.header
    assert _row(table, Training="None", Retriever="BM25")["Top-20 NQ"] == "59.1"
    assert _row(table, Training="Multi", Retriever="BM25 + DPR")["Top-100 TREC"] == "94.1"
    # End-to-end QA: "Single" is printed once beside its rows, and still labels each of them.
    e2e = _table(dpr, "Table 4")
    assert _row(e2e, Training="Single", Model="DPR")["NQ"] == "41.5"
    assert _row(e2e, Training="Multi", Model="BM25+DPR")["TriviaQA"] == "57.9"
    # The block's text: the caption, then one line per row with its column headers.
    block = next(p for p in dpr.paragraphs if p.table is table)
    lines = block.text.split("\n")
    assert lines[0] == table.caption and len(lines) == 1 + len(table.rows)
    assert "Table 2 | Training: None | Retriever: BM25 | Top-20 NQ: 59.1 | Top-20 TriviaQA: 66.9" in lines[1]
    # The cells are no longer loose paragraphs of their own.
    loose = [p.text for p in dpr.paragraphs if p.kind == "body" and p.page in (5, 8)]
    assert not [t for t in loose if re.fullmatch(r"[\d. ]+", t)], "numbers left as paragraphs"
    assert not any("59.1" in t and "66.9" in t for t in loose)


@pytest.mark.parametrize(
    ("name", "label", "cells", "column", "value"),
    [
        # a caption flush left over a table wider than its column; a group label over numbered columns
        ("jhydrol2005_flow_duration_afforestation.pdf", "Table 3", {"Site": "Biesievlei"}, "Percentile 100", "0.81"),
        # booktabs groups with cmidrules, tiny type the running text leaves out, a vertical rule in the middle
        (
            "acl2022_tableformer_table_text.pdf",
            "Table 1",
            {"": "TABLEFORMERLARGE inter"},
            "Before Perturb SEQ",
            "47.5",
        ),
        # ruled all over, cells wrapping onto several lines
        (
            "arxiv2201.07525_educational_timetabling.pdf",
            "Table 8",
            {"Reference": "Rudová et al. [2011]"},
            "Format",
            "XML",
        ),
        # rules drawn as one-pixel images (a Word conversion)
        ("conll2009_syntactic_semantic_dependency_parsing.pdf", "Table 3", {"System": "LAS"}, "(3)", "0.88"),
        # IEEE's small capitals, Roman numbering
        ("sample_revtex4-2-aps.pdf", "TABLE I", {"Lefta": "100"}, "Decimal", "300.0"),
    ],
)
def test_table_layouts(name: str, label: str, cells: dict[str, str], column: str, value: str) -> None:
    table = _table(_paper(name), label)
    row = _find(table, cells)
    assert row[column] == value, (table.header, row)


def test_two_column_text_is_not_taken_for_a_table() -> None:
    """A full-width caption under a table with two columns of running text below: the table is above it,
    and the running text stays paragraphs."""
    smt = _paper("acl2012_joint_feature_selection_smt.pdf")
    table = _table(smt, "Table 3")
    assert table.header[:2] == ["Alg.", "Tuning set"] and len(table.rows) < 10
    body = " ".join(p.text for p in smt.paragraphs if p.kind == "body")
    assert "Since inference for SMT (unlike many other learning problems) is very expensive" in body
    for paper in (smt, _paper("naacl2013_narrative_retelling_assessment.pdf")):
        for t in paper.tables:
            assert max(len(c.split()) for r in t.rows for c in r) <= 12, (t.label, t.rows)


def test_an_unsure_table_is_read_as_before() -> None:
    """DPR's Table 7 holds passages of prose, not cells: it is not forced into a grid, its caption stays a
    caption (as the parser read it before tables were read)."""
    dpr = _paper("emnlp2020_dense_passage_retrieval.pdf")
    assert "Table 7" not in [t.label for t in dpr.tables]
    assert any(p.kind == "caption" and p.text.startswith("Table 7: Examples of passages") for p in dpr.paragraphs)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower())}


def _chunks(name: str) -> list[Chunk]:
    return [c for c in chunk_paper(_paper(name), local_token_counter()) if c.kind == "chunk"]


@pytest.mark.parametrize("name", ["emnlp2020_dense_passage_retrieval.pdf", "jallcom2014_al4cu_tio2_composites.pdf"])
def test_chunk_boxes_hold_the_chunk_text(name: str) -> None:
    """Each chunk's boxes lie on its pages and the text inside them is the chunk's text."""
    chunks = _chunks(name)  # first: it skips when the dev set is absent
    words = PageWords(DEVSET / "pdfs" / name)
    headers = _words(" ".join(h for t in _paper(name).tables for h in t.header)) | {"table"}
    for c in chunks:
        boxes = c.metadata["boxes"]
        assert boxes, c.chunk_index
        pages = {b["page"] for b in boxes}
        assert pages <= set(range(c.page_number, c.metadata["page_end"] + 1)), (c.chunk_index, pages)
        for b in boxes:
            assert len(b["rect"]) == 4 and all(round(v, 1) == v for v in b["rect"])
        inside = " ".join(words.inside(b["page"], b["rect"]) for b in boxes)
        inside = re.sub(r"(\w)-\s+(\w)", r"\1\2", inside)  # words hyphenated at a line break, as the chunk has them
        # The chunk sets superscripts and subscripts as such ("Pᵀ", "wₛ"): the text layer reads them plain.
        want = _words(unscripted(c.text))
        if re.match(r"Table \d+ \|", c.text):  # rows of a table: the column names stand over the first row only
            want -= headers
        assert len(want & _words(inside)) >= 0.9 * len(want), (c.chunk_index, sorted(want - _words(inside))[:10])


def test_a_split_paragraph_gives_each_chunk_its_own_lines() -> None:
    paper = _paper("emnlp2020_dense_passage_retrieval.pdf")
    chunks = _chunks("emnlp2020_dense_passage_retrieval.pdf")
    table = next(p for p in paper.paragraphs if p.table is not None and p.table.label == "Table 4")
    parts = [c for c in chunks if "Table 4 |" in c.text]
    assert len(parts) >= 2  # the table is larger than one chunk: it is cut between rows
    for c in parts:
        assert len(c.metadata["boxes"]) < len(table.boxes)
    row = next(c for c in parts if "Model: ORQA" in c.text)
    doc = pymupdf.open(DEVSET / "pdfs" / "emnlp2020_dense_passage_retrieval.pdf")
    inside = " ".join(doc[b["page"] - 1].get_textbox(pymupdf.Rect(b["rect"])) for b in row.metadata["boxes"])
    assert "ORQA" in inside and "33.3" in inside
    doc.close()


def test_a_table_cut_between_chunks_keeps_one_row_per_line() -> None:
    """The rows of a table larger than a chunk stay one per line in each part, so an answer can quote one row
    (its model, its test score) rather than the run of rows the part holds."""
    chunks = _chunks("acl2022_tableformer_table_text.pdf")
    parts = [c for c in chunks if "Table 3 | Model:" in c.text]
    assert len(parts) >= 2  # the table is larger than one chunk
    for c in parts:
        rows = [line for line in c.text.split("\n") if "Table 3 | Model:" in line]
        assert rows and all(line.count("Table 3 |") == 1 for line in rows), c.text[:300]
    row = re.compile(r"^Table 3 \| Model: TABLEFORMERLARGE inter-sqa \|.*test: 52\.6$", re.M)
    assert any(row.search(c.text) for c in parts)


def test_rows_continued_in_a_later_chunk_are_searched_with_their_caption() -> None:
    """The chunk that holds the rest of a table's rows is searched (and embedded) with the table's caption, so a
    question in the caption's words ("denotation accuracy on WTQ") finds those rows; within the model's window."""
    counter = local_token_counter()
    chunks = _chunks("acl2022_tableformer_table_text.pdf")
    parts = [c for c in chunks if "Table 3 | Model:" in c.text]
    later = [c for c in parts if not c.text.startswith("Table 3:")]
    assert later  # the table continues in a chunk without its caption
    for c in later:
        assert "Table 3: Denotation accuracy on WTQ" in c.index_text and "Denotation" not in c.text
    for c in chunks:
        assert counter.count(c.index_text) <= counter.max_tokens


@pytest.mark.parametrize(
    ("name", "title"),
    [
        # bold, in the body's size (no larger type on the page), a footnote mark after it
        ("sample_aastex631.pdf", "Template AASTEXArticle with Examples: v6.31"),
        # bold capitals over two lines, the second partly in typewriter type
        ("sample_amsart.pdf", "SAMPLE PAPER FOR THE AMSMATH PACKAGE FILE NAME: TESTMATH.TEX"),
        # the journal appended to the metadata title
        ("ieeetcsvt1997_disk_storage_scalable_video.pdf", "Disk-Based Storage for Scalable Video"),
        # \thanks marks closing the title
        ("sample_achemso.pdf", "A demonstration of the achemso LATEX class"),
        ("sample_revtex4-2-aps.pdf", "Manuscript Title: with Forced Linebreak"),
    ],
)
def test_titles_of_unusual_layouts(name: str, title: str) -> None:
    assert _paper(name).title == title


def test_conclusion_reads_whole_above_a_two_column_reference_list() -> None:
    """The last page of a REVTeX paper: both columns of the conclusions end level, then the references
    run in two columns below, without a heading. The sentence crossing the columns stays one."""
    paper = _paper("arxiv0908.0054_ultralight_bosonic_dark_matter.pdf")
    whole = "To get in concordance between the model and the observations, it is needed at least a value of τ ≳0.07."
    assert any(whole in p.text for p in paper.paragraphs)
