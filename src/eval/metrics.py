"""Per-query scores. Text matching normalises case, whitespace and hyphenation, so a parser fix that
re-joins a hyphenated word or changes line breaks does not silently change a score."""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections.abc import Sequence

_HYPHEN_BREAK = re.compile(r"(\w)-\s+(\w)")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """NFKC, lower case, words split at a line-end hyphen re-joined, hyphens and whitespace runs made single
    spaces (ligatures and full-width characters compare equal to their plain forms)."""
    text = _HYPHEN_BREAK.sub(r"\1\2", unicodedata.normalize("NFKC", text).casefold())
    text = text.replace("\u00ad", "").replace("-", " ")
    return _SPACE.sub(" ", text).strip()


def contains(text: str, needle: str) -> bool:
    """`needle` occurs in `text` after normalising both; a joined hyphenation also matches its hyphenated form."""
    hay, pin = normalize(text), normalize(needle)
    return pin in hay or pin.replace(" ", "") in hay.replace(" ", "")


def _title_key(title: str) -> str:
    folded = "".join(c for c in unicodedata.normalize("NFKD", title) if not unicodedata.combining(c))
    return re.sub(r"[^a-z0-9]+", "", folded.lower())


def same_title(expected: str, found: str) -> bool:
    """Titles match when equal up to case, accents and punctuation, when one holds the other (12+ characters),
    or when they are very similar (a parser's title may drop a subtitle or mis-read a character)."""
    e, f = _title_key(expected), _title_key(found)
    if not e or not f:
        return False
    if e == f or (len(f) >= 12 and f in e) or (len(e) >= 12 and e in f):
        return True
    return difflib.SequenceMatcher(None, e, f).ratio() >= 0.85


def relevant(text: str, evidence: Sequence[str]) -> bool:
    """A passage is relevant when it contains any evidence string."""
    return any(contains(text, e) for e in evidence)


def recall_at_k(texts: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence strings found in the top-k passages."""
    top = texts[:k]
    return sum(1 for e in evidence if any(contains(t, e) for t in top)) / len(evidence)


def reciprocal_rank(texts: Sequence[str], evidence: Sequence[str]) -> float:
    """1 / rank of the first relevant passage (0 when none is)."""
    for rank, t in enumerate(texts, start=1):
        if relevant(t, evidence):
            return 1.0 / rank
    return 0.0


def ndcg_at_k(texts: Sequence[str], evidence: Sequence[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k over passages, in [0, 1].

    Gains are counted per relevant passage, so the ideal is too: the ideal ranking puts on top as many
    relevant passages as there are evidence strings, or as the list holds if that is more (several
    passages may contain the same evidence), capped at k.
    """
    hits = [rank for rank, t in enumerate(texts[:k], start=1) if relevant(t, evidence)]
    dcg = sum(1.0 / math.log2(rank + 1) for rank in hits)
    n_ideal = min(max(len(evidence), len(hits)), k)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, n_ideal + 1))
    return dcg / ideal if ideal else 0.0


def precision(found: Sequence[str], wanted: Sequence[str]) -> float:
    """Share of `found` items that are in `wanted`."""
    return sum(1 for f in found if f in wanted) / len(found)


def coverage(answer: str, facts: Sequence[str]) -> float:
    """Share of the facts the answer states."""
    return sum(1 for f in facts if contains(answer, f)) / len(facts)
