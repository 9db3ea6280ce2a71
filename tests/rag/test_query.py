import pytest

from paperscope.rag.dictionary import english_words
from paperscope.rag.query import expand, inflect, translate


@pytest.mark.parametrize(
    ("query", "form"),
    [
        ("which analyses were run", "analysis"),  # Greek plurals both ways
        ("an analysis of prior studies", "analyses"),
        ("the hypotheses they test", "hypothesis"),
        ("how was the model trained", "train"),
    ],
)
def test_inflect_adds_the_other_forms(query: str, form: str) -> None:
    assert form in inflect(query).split()


def test_inflect_leaves_names_alone() -> None:
    assert inflect("What does BERT do?") == "What does BERT do?"


def test_translate_reads_chinese_the_glossary_does_not_cover() -> None:
    """收回 (take back) and 录制 (record) are in no glossary: CC-CEDICT gives their English for a passage search;
    the glossary's own terms keep the glossary's English, and routing (`expand`) sees the glossary alone."""
    question = "一条 trace 要执行多少次才能收回录制和编译的开销？"
    searched = translate(question).split()
    assert {"regain", "record", "compile", "overhead"} <= set(searched)
    assert "translate" not in searched  # 编译 is the glossary's "compile", not the dictionary's first sense
    assert "record" not in expand(question).split()


def test_translate_leaves_english_and_unknown_text_alone() -> None:
    assert translate("How large is the dataset?") == "How large is the dataset?"
    assert english_words("的了是") == ""  # single characters are not translated
    assert english_words("血红蛋白") == "hemoglobin"


def test_translate_adds_the_plain_forms_a_pdfs_text_layer_prints() -> None:
    """ "χ²" is "χ2" in most text layers, "ﬁne" is "fine": both forms are searched; Chinese punctuation adds nothing."""
    assert translate("Which χ² value does model 3 reach?").split()[-1] == "χ2"
    assert "fine" in translate("How is the ﬁne-tuning done?").split()
    assert translate("这个模型（BERT）的准确率是多少？").count("准确率") == 1  # not the question again


def test_a_questions_chinese_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from paperscope.rag import dictionary

    scans: list[int] = []
    real = dictionary._entries
    monkeypatch.setattr(dictionary, "_entries", lambda heads: scans.append(1) or real(heads))
    question = "这篇论文用了哪些录制方法？"
    first = english_words(question)
    assert english_words(question) == first and "record" in first.split()
    assert len(scans) == 1  # the second ask (passage search, then the extracted answer) reads no entry
