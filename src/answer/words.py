"""The words of a text as the answer layer compares them: lower-cased, stemmed, function words left out."""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

# A word, or a number: one with thousands separators ("31,003,946") is one figure, not three.
WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
STOP = frozenset(
    str.split(
        """a an and are as at be by can could did do does for from had has have how in into is it its many much no
        not of on or our paper papers should than that the their then there these they this those to was we were
        what when which who why with would you your about whose where while also been both each other such very
        well between through authors study article show shown report reported et al"""
    )
)
# snowballstemmer hands the work to PyStemmer's C build when it is installed (a dependency): the same stems, ~1 us
# a word instead of ~23 (a new question's words are not in the cache below yet).
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The stem of a lower-cased word; a name's hyphens are dropped ("TableFormer-large" and "TABLEFORMERLARGE",
    "pre-training" and "pretraining" are one word), and a figure's separators ("31,003,946" is "31003946")."""
    stemmed: str = _STEMMER.stemWord(word.replace("-", "").replace(",", "") if len(word) > 2 else word)
    return stemmed


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed content words of `text`."""
    return [stem(w) for w in (m.group(0).lower() for m in WORD.finditer(text)) if w not in STOP and len(w) > 1]
