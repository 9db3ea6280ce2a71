"""Text as printed: ligatures, spacing accents put on their letters, degree signs."""

from __future__ import annotations

import pytest

from paperscope.parser.text import normalize


@pytest.mark.parametrize(
    ("printed", "read"),
    [
        ("heat stress (35:28 ± 0.08˚C)", "heat stress (35:28 ± 0.08°C)"),  # a spacing ring before a unit
        ("incubated at 37 ˚C for", "incubated at 37 °C for"),
        ("at 451˚F", "at 451°F"),
        ("a 45˚ angle", "a 45° angle"),  # after a figure, before no letter
        ("a 10 ˚A resolution", "a 10 Å resolution"),  # a ring over a letter: Ångström
        ("Zolt´an Gy¨ongyi", "Zoltán Gyöngyi"),
        ("the ﬁrst ﬂow", "the first flow"),
    ],
)
def test_text_reads_as_printed(printed: str, read: str) -> None:
    assert normalize(printed) == read
