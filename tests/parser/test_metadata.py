"""Paper metadata read from page 1: names in the case people write them."""

from __future__ import annotations

import pytest

from paperscope.parser.layout import Line, Span
from paperscope.parser.metadata import authors_from, byline, natural_case
from paperscope.parser.text import normalize


@pytest.mark.parametrize(
    ("printed", "name"),
    [
        ("TAL AUGUST", "Tal August"),  # ACM's small capitals, read as capitals
        ("MARTI A. HEARST", "Marti A. Hearst"),
        ("JEAN-PIERRE O'NEIL", "Jean-Pierre O'Neil"),
        ("LUDWIG VAN BEETHOVEN", "Ludwig van Beethoven"),
        ("JOHN SMITH III", "John Smith III"),
        ("ÉMILE ZOLA", "Émile Zola"),
        ("J.-P. SARTRE", "J.-P. Sartre"),
        ("Daniel S. Weld", "Daniel S. Weld"),  # mixed case: as printed
        ("Greg MacDonald", "Greg MacDonald"),
    ],
)
def test_a_name_printed_in_capitals_reads_in_its_natural_case(printed: str, name: str) -> None:
    assert natural_case(printed) == name


def _line(text: str, x0: float, y0: float, size: float = 12.0) -> Line:
    return Line(1, x0, y0, x0 + 6 * len(text), y0 + size, [Span(text, size, False)])


def test_a_grid_of_names_reads_row_by_row_under_the_title() -> None:
    title = [_line("A Title of the Paper", 150, 60, 17)]
    lines = [
        _line("An IOP and SISSA journal", 80, 20, 9),  # a banner above the title
        _line("Aditya Gupta Shyam Upadhyay", 250, 107),
        _line("Jingfeng Yang", 160, 110),  # the first name of the row, a little lower on the page
        _line("Luheng He", 190, 125),
        _line("Dan Klein", 400, 140),  # the next row
        _line("Aria Haghighi", 170, 141),
        _line("Abstract", 160, 200),
        _line("We study how the text of a paper is read and what it says to its readers", 80, 220, 10),
        _line("Edited by: Ernst-Joachim Hossner", 40, 230, 7),  # a box beside the text, below where it starts
    ]
    assert [ln.text for ln in byline(lines, title)] == [
        "Jingfeng Yang",
        "Aditya Gupta Shyam Upadhyay",
        "Luheng He",
        "Aria Haghighi",
        "Dan Klein",
    ]


def test_a_name_cut_by_the_end_of_a_line_is_joined() -> None:
    lines = [
        _line("Geemi P. Wellawatte, Heta A. Gandhi,", 80, 100),
        _line("Aditi Seshadri, and", 350, 100),
        _line("Andrew", 490, 101),
        _line("D. White", 270, 130),
        _line("Department of Chemistry, University of Rochester, Rochester, NY, 14627", 100, 160),
        _line("Institute of Physics, Heidelberg, Germany", 100, 180),  # an address ends with a word too
        _line("Poland", 100, 195),
    ]
    assert authors_from(None, lines) == ["Geemi P. Wellawatte", "Heta A. Gandhi", "Aditi Seshadri", "Andrew D. White"]


@pytest.mark.parametrize(
    "byline_text",
    ["Departamento de Física, Centro de Investigación y de Estudios Avanzados del IPN", "Ann Arbor, Michigan"],
)
def test_an_address_in_any_language_is_no_author(byline_text: str) -> None:
    lines = [_line("Ivan Rodriguez Montoya and Ann Chia", 100, 100), _line(byline_text, 80, 115)]
    assert authors_from(None, lines) == ["Ivan Rodriguez Montoya", "Ann Chia"]


def test_spacing_accents_of_polish_and_hungarian_names_compose() -> None:
    assert (
        normalize("J\u02dbedrzej Kowalczuk, Paul Erd\u02ddos, \u02d9Zaneta") == "Jędrzej Kowalczuk, Paul Erdős, Żaneta"
    )
