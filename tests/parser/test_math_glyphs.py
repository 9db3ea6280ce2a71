"""Glyphs of TeX's math fonts read off their character codes; nothing unprintable reaches a chunk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paperscope.parser import parse_pdf
from paperscope.parser.math_glyphs import decode, table_for
from paperscope.parser.text import normalize
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.tokens import local_token_counter

SHARED = Path(__file__).resolve().parents[3] / "shared"
SPECTER = SHARED / "papers" / "acl2020_specter_2020.acl-main.207.pdf"
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")


@pytest.mark.parametrize(
    ("font", "text", "codes", "read"),
    [
        ("ABCDEF+CMEX10", "\ufffd\ufffd", "\x6e\x10", "{("),  # a \Big brace and a \big paren
        ("CMEX10", "\ufffd", "\x50", "∑"),
        ("CMEX10", "(\ufffd", "\x00\x01", "()"),  # a glyph the font names keeps its name
        ("CMSY10", "\x14", "\x14", "≤"),  # an identity ToUnicode map gives the code itself
        ("LMMathSymbols10-Regular", "\ufffd", "\x00", "−"),
        ("CMMI10", "\ufffd", "\x0b", "α"),
        ("CMEX10", "\ufffd", "", ""),  # codes that do not line up: the glyph is dropped, not guessed
    ],
)
def test_codes_read_as_what_they_draw(font: str, text: str, codes: str, read: str) -> None:
    assert decode(font, text, codes) == read


def test_only_tex_fonts_have_tables() -> None:
    assert table_for("NimbusRomNo9L-Regu") is None
    assert table_for("CambriaMath") is None  # a TrueType font's codes are its own: nothing to read them by
    assert table_for("XYZABC+CMSY7") is not None


def test_normalize_drops_what_cannot_be_printed() -> None:
    assert normalize("a\x00b\ufffd c\x7f\x85d") == "ab cd"


def _all_pdfs() -> list[Path]:
    devset = SHARED / "devset"
    return sorted(
        [*(devset / "pdfs").glob("*.pdf"), *(devset / "samples").rglob("*.pdf"), *(SHARED / "papers").glob("*.pdf")]
    )


def test_no_chunk_of_a_real_paper_holds_an_unprintable_character() -> None:
    pdfs = _all_pdfs()
    if not pdfs:
        pytest.skip(f"the real papers under {SHARED} are absent (they sit beside the repository)")
    counter = local_token_counter()
    bad = {
        pdf.name: found
        for pdf in pdfs
        for chunk in chunk_paper(parse_pdf(pdf), counter)
        if (found := _UNPRINTABLE.findall(chunk.text))
    }
    assert not bad


def test_a_display_equation_keeps_its_big_delimiters() -> None:
    if not SPECTER.is_file():
        pytest.skip(f"{SPECTER} is absent (../shared sits beside the repository)")
    chunks = chunk_paper(parse_pdf(SPECTER), local_token_counter())
    text = next(c.text for c in chunks if "triplet margin loss function" in c.text)
    # The loss, L = max{(d(PQ, P+) − d(PQ, P−) + m), 0}: cmex has no ToUnicode map in this PDF.
    equation = text[text.index("triplet margin loss function") :]
    assert "\ufffd" not in equation
    assert all(ch in equation for ch in "{}()")


def test_a_display_equation_reads_as_one_line_in_order() -> None:
    if not SPECTER.is_file():
        pytest.skip(f"{SPECTER} is absent (../shared sits beside the repository)")
    chunks = chunk_paper(parse_pdf(SPECTER), local_token_counter())
    text = next(c.text for c in chunks if "triplet margin loss function" in c.text)
    # Its big delimiters stand on baselines of their own: read by baseline alone, the pieces came out jumbled.
    equation = re.sub(r"\s+", "", text[text.index("triplet margin loss function") :])
    assert "L=max{(d(PQ,P⁺)−d(PQ,P⁻)+m),0}(2)" in equation  # no superscript Q in Unicode


def test_superscripts_and_footnote_marks_are_set_as_such_in_running_text() -> None:
    if not SPECTER.is_file():
        pytest.skip(f"{SPECTER} is absent (../shared sits beside the repository)")
    chunks = chunk_paper(parse_pdf(SPECTER), local_token_counter())
    text = " ".join(c.text for c in chunks)
    assert "SPECTER,²" in text  # a footnote mark stuck to a word
    assert "∥vA −vB∥₂" in text  # subscripts in math (Unicode has no subscript capitals)
    assert "SPECTER,2" not in text
    # What is searched reads them plain, as the PDF's text layer (and a passage pasted from it) has them.
    searched = " ".join(c.index_text for c in chunks)
    assert "SPECTER,2" in searched and "∥vA −vB∥2" in searched
