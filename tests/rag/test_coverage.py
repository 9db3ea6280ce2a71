"""Does the knowledge base cover the question? Absent topic words, weak coverage, untranslated Chinese."""

from __future__ import annotations

import pytest

from paperscope.rag.coverage import check_coverage, forms, is_topical, topic_words, unread_chinese
from paperscope.rag.query import expand
from paperscope.rag.store import PaperStore

CORPUS = {"label", "labeled", "drive", "sequence", "image", "images", "retrieval", "passage", "reranking"}


def contains(words: list[list[str]]) -> list[bool]:
    return [any(w in CORPUS for w in forms) for forms in words]


@pytest.mark.parametrize(
    ("word", "form"),
    [("labelled", "labeled"), ("drove", "drive"), ("sequences", "sequence"), ("images", "image")],
)
def test_the_forms_of_a_word_find_it_in_another_spelling_or_tense(word: str, form: str) -> None:
    assert form in forms(word)


def test_verbs_say_nothing_of_a_topic_nouns_and_unknown_words_do() -> None:
    assert not is_topical("consist") and not is_topical("surpass")
    assert is_topical("atari") and is_topical("caffeine") and is_topical("battery") and is_topical("urban")


def test_topic_words_leave_out_survey_phrasing_and_generic_research_words() -> None:
    assert topic_words("Which papers evaluate RL agents on Atari games, and what results do they report?") == [
        "agents",
        "atari",
        "games",
    ]


def test_a_topic_word_no_chunk_holds_means_the_topic_is_not_covered() -> None:
    found = check_coverage("q", "Which papers study caffeine and sleep?", [], contains)
    assert found.absent == ["caffeine", "sleep"] and not found.covered
    assert found.note().startswith("No paper in the knowledge base mentions 'caffeine', 'sleep'")
    spelled = check_coverage("q", "Which papers use labelled data for passage reranking?", [], contains)
    assert spelled.absent == []  # "labelled" is "labeled" in the papers: covered


def test_the_words_that_named_the_papers_are_no_topic() -> None:
    """ "by ReVerb (Fader et al., 2011)": an author's name held only by the catalogue's metadata says which paper,
    not what the question asks; the papers it named are compared, not called absent."""
    asked = "Compare the passage reranking of Downey et al. and of Fader et al."
    assert check_coverage("q", asked, [], contains).absent == ["downey", "fader"]
    named = check_coverage("q", asked, [], contains, naming=["Downey et al", "Fader"])
    assert named.absent == []


def test_chinese_the_glossary_cannot_translate_is_unread() -> None:
    question = "哪些论文研究了量子纠错码？它们报告的容错阈值是多少？"
    assert "纠错码" in "".join(unread_chinese(question))
    found = check_coverage(question, expand(question), [], lambda words: [True] * len(words))
    assert found.unread and not found.covered and "no English equivalent" in found.note()
    # A Chinese question that carries its topic in English is read.
    named = "哪些论文研究 dense passage retrieval？"
    assert not check_coverage(named, expand(named), [], lambda words: [True] * len(words)).unread


def test_surveys_nothing_covers_are_none_and_covered_ones_stay_surveys(sample_kb: PaperStore) -> None:
    from paperscope.rag.engine import Engine

    engine = Engine(sample_kb)
    none = engine.retrieve("Which papers evaluate reinforcement learning agents on Atari games?")
    assert none.track == "NONE" and any("'atari'" in n for n in none.notes) and none.chunks
    assert ("postprocessor", "coverage") in [(o.kind, o.name) for o in none.operators]
    survey = engine.retrieve("Which papers improve retrieval-augmented generation?")
    assert survey.track == "B" and len(survey.doc_ids) >= 2


def test_words_the_passages_found_hold_are_not_searched_again() -> None:
    from types import SimpleNamespace

    asked: list[list[str]] = []

    def counting(words: list[list[str]]) -> list[bool]:
        asked.extend(words)
        return contains(words)

    hits = [SimpleNamespace(text="Caffeine intake was logged for 40 nights."), SimpleNamespace(text="No ferns.")]
    found = check_coverage("q", "Which papers study caffeine and sleep?", hits, counting)  # type: ignore[arg-type]
    assert found.absent == ["sleep"]  # caffeine is in a passage: held, though the search would not find it
    assert len(asked) == 1 and "sleep" in asked[0]
    check_coverage("q", "Which papers study caffeine?", hits, counting)  # type: ignore[arg-type]
    assert len(asked) == 1  # nothing left to search: no request at all
