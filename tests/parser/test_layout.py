"""Reading order of two-column pages, on PDFs written here line by line with PyMuPDF."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from paperscope.parser import Paper, parse_pdf

LEFT, RIGHT = 54.0, 317.0
FILLER = "Structured retrieval finds the passages"


def _column(page: pymupdf.Page, x: float, y: float, lines: list[str], size: float = 10) -> float:
    for text in lines:
        page.insert_text((x, y), text, fontsize=size, fontname="helv")
        y += 1.2 * size
    return y


def _fill(n: int, tag: str) -> list[str]:
    return [f"{FILLER} {tag}{i}." for i in range(n)]


def _first_page(doc: pymupdf.Document) -> None:
    page = doc.new_page(width=612, height=792)
    page.insert_text((150, 80), "Balanced Columns Above a Reference List", fontsize=16, fontname="hebo")
    page.insert_text((LEFT, 120), "1 Introduction", fontsize=12, fontname="hebo")
    _column(page, LEFT, 140, _fill(45, "a"))
    _column(page, RIGHT, 140, _fill(45, "b"))


def _parse(doc: pymupdf.Document, tmp_path: Path) -> Paper:
    path = tmp_path / "two-column.pdf"
    doc.save(path)
    return parse_pdf(path)


def _text(paper: Paper) -> str:
    return " ".join(p.text for p in paper.paragraphs)


def test_balanced_columns_read_before_a_two_column_list_below_them(tmp_path: Path) -> None:
    """The last section's two columns end level, a blank follows, then a reference list in two columns:
    the sentence that runs from the left column into the right one reads whole, before the references."""
    doc = pymupdf.open()
    _first_page(doc)
    page = doc.new_page(width=612, height=792)
    page.insert_text((LEFT, 72), "2 Conclusions", fontsize=12, fontname="hebo")
    _column(page, LEFT, 96, [*_fill(14, "c"), "We need at least a value of the optical depth"])
    _column(page, RIGHT, 96, ["of 0.07 to agree with the observations.", *_fill(14, "d")])
    # The section's columns end at y ~ 276; the lists start 60 pt (6 body sizes) lower, level.
    _column(page, LEFT, 340, [f"[{i}] Author A., Journal of Examples {i}, 100 (2000)." for i in range(1, 25)], 9)
    _column(page, RIGHT, 340, [f"[{i}] Author B., Review of Samples {i}, 200 (2001)." for i in range(25, 31)], 9)
    paper = _parse(doc, tmp_path)
    text = _text(paper)
    assert "value of the optical depth of 0.07 to agree with the observations" in text
    assert text.index("d13.") < text.index("[1] Author A.")


def test_a_figure_in_one_column_does_not_cut_the_page(tmp_path: Path) -> None:
    """A figure in the left column and a caption at the foot of the right one leave blanks at the same
    height, but the columns do not end level: the left column's text below the figure still comes before
    the right column's."""
    doc = pymupdf.open()
    _first_page(doc)
    page = doc.new_page(width=612, height=792)
    page.insert_text((LEFT, 72), "2 Results", fontsize=12, fontname="hebo")
    _column(page, LEFT, 96, [*_fill(20, "e"), "The measured recall rises with the depth of the"])
    page.draw_rect(pymupdf.Rect(LEFT, 350, 299, 500), color=(0, 0, 0))  # the figure: no text inside
    _column(page, LEFT, 520, ["structure that the parser recovers from every page.", *_fill(10, "f")])
    _column(page, RIGHT, 96, _fill(24, "g"))
    _column(page, RIGHT, 700, ["Figure 2: Recall against the depth of the structure."], 8)
    paper = _parse(doc, tmp_path)
    text = _text(paper)
    assert "depth of the structure that the parser recovers" in text
    assert text.index("f9.") < text.index("g0.")


def test_a_sidebar_and_two_columns_right_of_it(tmp_path: Path) -> None:
    """BMJ's first page: affiliations in small type down a narrow left sidebar, then two columns that split
    the rest of the page, not the page, in half. Lines on one baseline in different blocks stay apart."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=792)
    page.insert_text((147, 70), "Helicobacter Eradication and Iron Deficiency", fontsize=16, fontname="hebo")
    _column(page, 42, 150, [f"{i}Hospital, City {i}" for i in range(1, 40)], 8)
    middle = [*_fill(30, "m"), "The pooled analysis of eight studies showed"]
    _column(page, 147, 150, middle, 9)
    _column(page, 356, 150, ["that eradication therapy improves anaemia.", *_fill(30, "r")], 9)
    paper = _parse(doc, tmp_path)
    text = _text(paper)
    assert "analysis of eight studies showed that eradication therapy improves anaemia." in text
    assert "Hospital" not in " ".join(p.text for p in paper.paragraphs if "m0." in p.text)
    assert text.index("m29.") < text.index("r0.")


@pytest.mark.parametrize("columns", [1, 2])
def test_a_box_down_the_right_margin_is_read_after_the_text_beside_it(tmp_path: Path, columns: int) -> None:
    """A publisher's box of notes in small type down the right margin, beside one column of text or two that
    split what is left of the page: the text reads through, and the box reads after it, not woven in."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((60, 70), "Helicobacter Eradication and Iron Deficiency", fontsize=16, fontname="hebo")
    if columns == 2:
        _column(page, 60, 150, [*_fill(30, "m"), "The pooled analysis of eight studies showed"], 8)
        _column(page, 262, 150, ["that eradication therapy improves anaemia.", *_fill(30, "r")], 8)
    else:
        wide = [f"{FILLER} and ranks them by what the question asks m{i}." for i in range(30)]
        _column(page, 60, 150, [*wide, "The pooled analysis of eight studies showed"], 9)
        _column(page, 60, 150 + 31 * 10.8, ["that eradication therapy improves anaemia.", *_fill(5, "r")], 9)
    _column(page, 470, 150, [f"Received {i} May; note {i}" for i in range(1, 30)], 7)
    paper = _parse(doc, tmp_path)
    text = _text(paper)
    assert "analysis of eight studies showed that eradication therapy improves anaemia." in text
    assert "Received" not in " ".join(p.text for p in paper.paragraphs if "m0." in p.text or "r0." in p.text)
    assert text.index("m29.") < text.index("r0.") < text.index("Received 1 May")


def test_a_box_down_the_right_margin_stays_out_of_the_abstract(tmp_path: Path) -> None:
    """The box holds more lines than the short abstract and introduction beside it, but fewer characters: it is
    still the box, and neither the abstract nor the authors take from it."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((60, 70), "Helicobacter Eradication and Iron Deficiency", fontsize=16, fontname="hebo")
    page.insert_text((60, 100), "Jane Doe, John Smith", fontsize=10, fontname="helv")
    page.insert_text((60, 135), "Abstract", fontsize=10, fontname="hebo")
    wide = [f"{FILLER} and ranks them by what the question asks m{i}." for i in range(8)]
    y = _column(page, 60, 150, wide, 9)
    page.insert_text((60, y + 10), "1 Introduction", fontsize=10, fontname="hebo")
    _column(page, 60, y + 30, wide, 9)
    _column(page, 470, 150, [f"Received {i} May; accepted {i} June" for i in range(1, 30)], 7)
    paper = _parse(doc, tmp_path)
    assert paper.abstract.startswith(f"{FILLER} and ranks them by what the question asks m0. {FILLER}")
    assert "Received" not in paper.abstract
    assert paper.authors == ["Jane Doe", "John Smith"]
    assert "Received 29 May" in _text(paper)


def test_a_row_reads_left_to_right_whatever_its_pieces_baselines() -> None:
    """A section number set a little lower than its heading (whose µ rises above the line) still opens the row,
    and a subscript set under the superscript before it ("ϵ∗_g") continues the row; names a word space apart
    in a byline's grid stay apart."""
    from paperscope.parser.layout import Line, Span, _merge_baselines

    def piece(text: str, x0: float, x1: float, y0: float, y1: float, size: float = 10.0) -> Line:
        return Line(1, x0, y0, x1, y1, [Span(text, size, True)])

    heading = _merge_baselines(
        [piece("3.6", 72.0, 84.7, 220.1, 229.1), piece("First moments of the increment", 94.4, 266.0, 218.0, 229.0)],
        600.0,
    )
    assert [ln.text for ln in heading] == ["3.6 First moments of the increment"]
    stacked = _merge_baselines(
        [
            Line(1, 108.0, 597.4, 203.0, 608.7, [Span("The scaling of ϵ", 10, True), Span("∗", 7, False)]),
            Line(1, 198.9, 598.7, 328.0, 610.7, [Span("g", 7, False), Span(" with L", 10, True)]),
        ],
        600.0,
    )
    assert [ln.text for ln in stacked] == ["The scaling of ϵ∗g with L"]
    byline = _merge_baselines(
        [piece("Aditya Gupta", 251.4, 320.0, 107.7, 120.5, 12), piece("Jingfeng Yang", 163.0, 236.0, 109.7, 120.5, 12)],
        600.0,
    )
    assert sorted(ln.text for ln in byline) == ["Aditya Gupta", "Jingfeng Yang"]
