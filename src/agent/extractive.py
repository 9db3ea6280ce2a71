"""The answer without a language model: the evidence's most relevant sentences, each cited."""

from __future__ import annotations

import math
import re
from collections import Counter

from ..rag.context import Evidence

HEADER = "Extracted from the retrieved papers (no language model configured; quoted sentences, best first):"
# The same, when a model is configured but failed (or was set aside) for this answer.
HEADER_WITHOUT_MODEL = "Extracted from the retrieved papers (without the language model; quoted sentences, best first):"

# A sentence ends at . ! ? followed by space and a capital, digit or bracket; "e.g. x", "Fig. 3", "36.1" stay whole.
_SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bet al\.)(?<!\bFig\.)(?<!\bEq\.)(?<!\bSec\.)(?<=[.!?])\s+(?=[A-Z0-9(\[“\"])"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|\d+(?:\.\d+)?")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "into",
        "is",
        "it",
        "its",
        "many",
        "much",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "paper",
        "papers",
        "should",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "use",
        "used",
        "uses",
        "using",
        "was",
        "we",
        "were",
        "what",
        "when",
        "which",
        "who",
        "why",
        "with",
        "would",
        "you",
        "your",
        "about",
    ]
)
_NUMBER_QUESTION = re.compile(r"\b(how (much|many|large|long|fast|big)|what (size|number|percentage))\b", re.I)
_HAS_NUMBER = re.compile(r"\d")
_CAPTION = re.compile(r"^(Table|Figure|Fig\.)\s*[\dIVX]+[:.]")
# The paper's own numbered references ("[1]", "[2, 5]", "[12–14]", "[3; 7-9]"): next to our "[n]" they
# would read as citations of our sources. Decimals ("[0.5, 1]") and zero ("[0, 1]") are intervals, kept.
_REFERENCE = re.compile(r"\s?\[(?:[1-9]\d{0,2})(?:\s*(?:[,;]|[-–—])\s*(?:[1-9]\d{0,2}))*\]")


def _stem(word: str) -> str:
    """A light stemmer, enough for "trained"/"training"/"trains" to meet."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """Lower-cased, lightly stemmed content words of `text`."""
    return [_stem(w) for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP and len(w) > 1]


def _looks_like_table(sentence: str) -> bool:
    """Table cells flattened into text: mostly numbers and short tokens."""
    tokens = sentence.split()
    numeric = sum(1 for t in tokens if any(ch.isdigit() for ch in t))
    return len(tokens) >= 8 and numeric / len(tokens) > 0.35


def sentences(text: str) -> list[str]:
    """Split a passage into sentences (keeps decimals and common abbreviations intact)."""
    return [s.strip() for s in _SENTENCE_END.split(text.replace("\n", " ")) if len(s.strip()) > 20]


def extract(query: str, evidence: list[Evidence], max_sentences: int = 6, per_source: int = 3) -> list[tuple[str, int]]:
    """(sentence, citation number) pairs, best first; numbers count from 1 in `evidence` order."""
    candidates: list[tuple[str, int, bool]] = []  # sentence, number, from a hit chunk (not its window)
    for n, ev in enumerate(evidence, start=1):
        for chunk in ev.chunks:
            for s in sentences(chunk.text):
                if not _looks_like_table(s):
                    candidates.append((s, n, chunk.chunk_index in ev.hits))
    if not candidates:
        return []
    docs = [Counter(terms(s)) for s, _, _ in candidates]
    df = Counter(t for d in docs for t in d)
    avg_len = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    q = set(terms(query))
    wants_number = bool(_NUMBER_QUESTION.search(query))

    def score(i: int) -> float:
        # BM25 over the evidence's own sentences: short sentences that state the fact beat long ones that mention it.
        s, _, in_hit = candidates[i]
        d = docs[i]
        norm = 1.2 * (0.25 + 0.75 * sum(d.values()) / avg_len)
        base = sum(math.log(1 + len(docs) / df[t]) * d[t] * 2.2 / (d[t] + norm) for t in q if t in d)
        if wants_number and _HAS_NUMBER.search(s):
            base *= 1.5
        if _CAPTION.match(s):
            base *= 0.6  # a caption names what a table shows, rarely the answer itself
        return base * (1.25 if in_hit else 1.0)

    ranked = sorted(range(len(candidates)), key=lambda i: (-score(i), candidates[i][1], i))
    if score(ranked[0]) == 0:
        # Nothing shares a word with the query (e.g. a question in another language): lead sentences of the hits.
        ranked = [i for i in range(len(candidates)) if candidates[i][2]] or list(range(len(candidates)))
    picked: list[tuple[str, int]] = []
    seen: set[str] = set()
    used: Counter[int] = Counter()
    for i in ranked:
        s, n, _ = candidates[i]
        key = s.casefold()
        if key in seen or used[n] >= per_source:
            continue
        picked.append((s, n))
        seen.add(key)
        used[n] += 1
        if len(picked) == max_sentences:
            break
    return picked


def strip_references(sentence: str) -> str:
    """`sentence` without the paper's own bracketed reference numbers."""
    return _REFERENCE.sub("", sentence).strip()


def extractive_answer(query: str, evidence: list[Evidence], max_sentences: int = 6, header: str = HEADER) -> str:
    """The cited sentences as a short list under a header that says they are extracted; the paper's own
    reference numbers are stripped, so every [n] is one of our sources."""
    picked = extract(query, evidence, max_sentences)
    if not picked:
        return "No passage in the knowledge base answers this question."
    return "\n".join([header, *(f"- {strip_references(s)} [{n}]" for s, n in picked)])
