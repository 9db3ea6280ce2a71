"""Does the knowledge base cover the question at all? The check that turns a survey with no paper on its
topic into NONE instead of Track B with unrelated papers.

Three signals, each about the question's *topic* words (content words of the question without its survey
phrasing and without the generic words every research question uses: method, results, number, ...):
- absent: a topic word that no chunk of the knowledge base contains in any of its forms ("atari", "statins",
  "smartwatches") means no paper is about it; the forms come from an English lemmatizer (`lemminflect`), so
  "labelled" finds "labeled", "drove" finds "drive", "sequences" finds "sequence";
- weak: the passages found share few of the topic words (the share below `WEAK_COVERAGE`);
- unread: a question in Chinese whose topic the glossary could not put into English (at most one English topic
  word, Chinese content left over): the papers' words cannot be matched to it without a model that translates.
Only words a lemmatizer knows as verbs or adverbs are left out of `absent` (a verb a corpus happens not to use
says nothing of its topic); nouns, adjectives and unknown words (names, jargon) count.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .cues import STOPWORDS, content_words, survey_focus
from .query import glossary_keys
from .registry import register
from .store import StoredChunk

# Below this share of the question's topic words in what was found, the papers do not seem to answer it.
WEAK_COVERAGE = 0.35
# Words every research question may use whatever its topic (also what the glossary makes of 方法, 分析, 多少).
GENERIC = frozenset(
    str.split(
        """method methods approach approaches analysis analyses number numbers result results experiment experiments
        experimental conclusion conclusions respectively data study studies research work works performance
        evaluation evaluate evaluated model models propose proposed paper papers technique techniques system systems
        problem problems question questions effect effects role impact value values measure measured measures"""
    )
)
_CJK = re.compile(r"[\u4e00-\u9fff]+")
# Chinese function words and question scaffolding: what a topic is not made of.
_ZH_FUNCTION = re.compile(
    r"[的了是在和与或及其中里内对于把被将从以并而且也都还就又再这那些个哪什么怎么如何多少吗呢吧啊有没关]"
)


@dataclass
class Coverage:
    """What the check found for a question."""

    topic: list[str] = field(default_factory=list)  # the question's topic words (English)
    absent: list[str] = field(default_factory=list)  # topic words no chunk contains in any form
    share: float = 1.0  # share of the topic words in the passages found
    unread: list[str] = field(default_factory=list)  # Chinese content the glossary left untranslated

    @property
    def covered(self) -> bool:
        """False when the knowledge base does not seem to hold the question's topic."""
        return not self.absent and self.share >= WEAK_COVERAGE and not self.unread

    def note(self) -> str:
        """One line for the reader saying why the passages that follow are not an answer."""
        if self.absent:
            words = ", ".join(repr(w) for w in self.absent[:4])
            return f"No paper in the knowledge base mentions {words}; the closest passages follow, not as an answer."
        if self.unread:
            return (
                f"Part of the question ({'、'.join(self.unread[:3])}) has no English equivalent here and matches no "
                "paper's words (a language model or a multilingual embedder would translate it); the closest "
                "passages follow, not as an answer."
            )
        return "The papers in the knowledge base do not seem to answer this; the closest passages follow."


def _words(asked: str) -> list[str]:
    """Content words (4+ letters) of the question's topic, hyphenated ones in their parts ("Chinese-language")."""
    parts = (p for w in content_words(survey_focus(asked)) for p in w.split("-"))
    return [w for w in dict.fromkeys(parts) if len(w) >= 4 and w not in STOPWORDS]


def topic_words(asked: str) -> list[str]:
    """The question's topic words: its content words without the generic ones."""
    return [w for w in _words(asked) if w not in GENERIC]


def forms(word: str) -> list[str]:
    """`word` and the other forms of its lemmas ("labelled" -> label, labels, labeled, labeling, ...)."""
    from lemminflect import getAllInflections, getAllLemmas

    out = [word]
    for lemmas in getAllLemmas(word).values():
        for lemma in lemmas:
            out.append(lemma)
            out += [f for group in getAllInflections(lemma).values() for f in group]
    if word.endswith("s") and len(word) > 4:
        out.append(word[:-1])  # plurals the lemmatizer does not know ("smartwatches" -> "smartwatche" is harmless)
    return list(dict.fromkeys(f.lower() for f in out))


def is_topical(word: str) -> bool:
    """False for a word the lemmatizer knows only as a verb or an adverb (it says nothing of a topic)."""
    from lemminflect import getAllLemmas

    kinds = set(getAllLemmas(word))
    return not kinds or bool(kinds & {"NOUN", "PROPN", "ADJ"})


def unread_chinese(query: str) -> list[str]:
    """Runs of Chinese content the glossary does not translate (function words and glossary terms removed)."""
    rest = query
    for key in glossary_keys():
        rest = rest.replace(key, " ")
    runs = [r for chunk in _CJK.findall(rest) for r in _ZH_FUNCTION.split(chunk)]
    return [r for r in runs if len(r) >= 2]


@register("postprocessor", "coverage")
def word_share(asked: str, hits: Sequence[StoredChunk]) -> float:
    """The share of the question's content words that occur in the passages found (1.0 for a question of none)."""
    found = " ".join(h.text.lower() for h in hits)
    # Every content word counts (generic ones too), as calibrated on ../shared/devset.
    words = _words(asked)
    return sum(1 for w in words if w in found) / len(words) if words else 1.0


def check_coverage(
    query: str,
    asked: str,
    hits: Sequence[StoredChunk],
    contains: Callable[[list[list[str]]], list[bool]],
    naming: Sequence[str] = (),
) -> Coverage:
    """Whether the knowledge base covers the question (see the module docstring); `contains([forms, ...])` tells,
    for each word, whether any chunk holds one of its forms (all the topic words in one search). The words of
    `naming` (what named the papers the question is about: "Fader et al.") are no topic of it."""
    names = {w.lower() for name in naming for w in re.findall(r"\w+", name)}
    topic = [w for w in topic_words(asked) if w.lower() not in names]
    share = word_share(asked, hits)
    checked = [w for w in topic if is_topical(w)]
    # A word the passages found hold is held by the knowledge base: only the others are searched (at 100k
    # chunks that search costs 0.3 s, and a covered survey's passages usually hold every topic word).
    seen = set(re.findall(r"\w+", " ".join(h.text.lower() for h in hits)))
    spelled = {w: forms(w) for w in checked}  # the lemmatizer once per word
    unseen = [w for w, f in spelled.items() if seen.isdisjoint(f)]
    held = dict(zip(unseen, contains([spelled[w] for w in unseen]) if unseen else [], strict=True))
    absent = [w for w in checked if not held.get(w, True)]
    unread: list[str] = []
    if _CJK.search(query) and len(set(topic)) <= 1:
        unread = unread_chinese(query)
    return Coverage(topic=topic, absent=absent, share=share, unread=unread)
