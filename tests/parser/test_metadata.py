"""Paper metadata read from page 1: names in the case people write them."""

from __future__ import annotations

import pytest

from paperscope.parser.metadata import natural_case


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
