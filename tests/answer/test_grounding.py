"""The grounding check on real-looking answers: figures in the answer must be in the evidence that was read."""

from __future__ import annotations

import pytest

from paperscope.answer.grounding import check, mark, notes, numbers

SOURCE = (
    "We train Longformer with a sliding attention window of 4,096 tokens on 1.2 million queries drawn from "
    "MS MARCO. Accuracy reaches 93.4% on the three datasets of Table 3, an 18 x 10^3 speed-up over GPT-3. "
    "The hybrid retriever, called “dense passage retrieval”, follows Karpukhin et al. (2020)."
)


def test_a_window_size_in_no_source_is_unsupported_and_marked() -> None:
    answer = "The model uses a window size of 128 tokens [1]. It was trained on 1.2 million queries [1]."
    report = check(answer, [SOURCE], "What window size does the model use?")
    assert report.figures == 2 and report.found == 1 and report.missing == ["128"]
    assert report.key_unsupported  # the question asks for a number and the answer's number is not there
    assert [c.sentence for c in report.unsupported] == ["The model uses a window size of 128 tokens [1]."]
    marked = mark(answer, report)
    assert marked.startswith("The model uses a window size of 128 tokens [1]. (not in the sources: 128)")
    assert "128" in notes(report)[0] and "sentences the sources hold are given" in notes(report)[0]


@pytest.mark.parametrize(
    "answer",
    [
        "The window is 4096 tokens [1].",  # "4,096" in the source
        "The window is 4,096 tokens.",
        "It uses a 4k window.",  # 4k = 4096
        "It was trained on 1.2M queries.",  # "1.2 million"
        "Accuracy is about 93% [2].",  # rounded from 93.4%
        "Accuracy is 0.934.",  # the fraction of 93.4%
        "It was evaluated on 3 datasets.",  # "three datasets"
        "As Karpukhin et al. (2020) propose, “Dense Passage Retrieval” helps.",  # case and author-year
    ],
)
def test_figures_in_other_forms_are_found(answer: str) -> None:
    report = check(answer, [SOURCE], "What does the model use?")
    assert report.figures >= 1 and report.found == report.figures and not report.unsupported


@pytest.mark.parametrize(
    "answer",
    [
        "GPT-4 and T5 were compared in Table 7 and Section 4.2.",  # digits in names, labels
        "1. Use the window.\n2. Train it [3].",  # list markers and citations
        "It is a 3D model, 2nd in the ranking.",
    ],
)
def test_labels_names_and_list_markers_are_not_figures(answer: str) -> None:
    assert numbers(answer) == [] and check(answer, [SOURCE], "q").figures == 0


def test_invented_names_and_citations_are_unsupported() -> None:
    answer = "The method is called “sparse lexical routing”, as Smith et al. (2019) showed."
    report = check(answer, [SOURCE], "What is the method called?")
    assert set(report.missing) == {"sparse lexical routing", "Smith", "2019"} and report.key_unsupported


def test_figures_the_question_states_count_as_given() -> None:
    report = check("With k = 20 the recall rises.", [SOURCE], "What happens with k = 20?")
    assert report.figures == 1 and report.found == 1


def test_one_stray_figure_in_a_supported_answer_is_marked_but_not_key() -> None:
    answer = "Accuracy reaches 93.4% [1]. It uses a window of 4,096 tokens [1]. Training took 12 hours."
    report = check(answer, [SOURCE], "How does the model perform?")  # no number asked for
    assert report.missing == ["12"]
    assert not report.key_unsupported and report.score == pytest.approx(7.0)


def test_an_answer_without_figures_scores_full() -> None:
    report = check("The paper studies retrieval.", [SOURCE], "What is it about?")
    assert report.figures == 0 and report.score == 10.0 and mark("x", report) == "x" and notes(report) == []


def test_an_answer_in_chinese_is_checked_against_english_sources() -> None:
    found = check("FlashRank 使用了120万个查询 [1]，窗口为4096。", [SOURCE], "FlashRank 用了多少查询？")
    assert found.figures == 2 and found.found == 2  # 120万 = 1.2 million
    invented = check("它使用了300万个查询。", [SOURCE], "FlashRank 用了多少查询？")
    assert invented.missing == ["300万"] and invented.key_unsupported
    # A name the answer translated cannot be looked up in English papers: it is not held against it.
    assert check("它被称为“密集段落检索”。", [SOURCE], "它叫什么？").figures == 0
