import pytest

from paperscope.parser.numbering import parse_heading


@pytest.mark.parametrize(
    ("text", "number", "depth", "name", "style"),
    [
        ("3 FlashRank", "3", 0, "FlashRank", "arabic"),
        ("3.2 Weight Predictor", "3.2", 1, "Weight Predictor", "arabic"),
        ("4.1.2 Deeper", "4.1.2", 2, "Deeper", "arabic"),
        ("1.Introduction", "1", 0, "Introduction", "arabic"),
        ("3.1Encoding module", "3.1", 1, "Encoding module", "arabic"),
        ("IV. EXPERIMENTS", "IV", 0, "EXPERIMENTS", "roman"),
        ("A.1 More Results", "A.1", 1, "More Results", "appendix"),
        ("Appendix B: Proofs", "B", 0, "Proofs", "appendix"),
        ("A. Query Features", "A", 0, "Query Features", "letter"),
        ("Introduction", None, 0, "Introduction", "none"),
        # "Appendix i..." is a word, not appendix I
        ("Appendix information", None, 0, "Appendix information", "none"),
        ("Appendix one text goes here.", None, 0, "Appendix one text goes here.", "none"),
        ("APPENDIX", None, 0, "APPENDIX", "appendix"),
        ("Appendix: Proofs", None, 0, "Proofs", "appendix"),
    ],
)
def test_parse_heading(text: str, number: str | None, depth: int, name: str, style: str) -> None:
    got = parse_heading(text)
    assert (got.number, got.depth, got.name, got.style) == (number, depth, name, style)
