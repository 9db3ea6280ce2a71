import pytest

from paperscope.parser.categories import HeadingInfo, classify_sections, is_reference_list, match_category
from paperscope.parser.models import SectionCategory as Cat


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Abstract", Cat.ABSTRACT),
        ("Introduction", Cat.INTRODUCTION),
        ("Background and Related Work", Cat.RELATED_WORK),
        ("Prior Work", Cat.RELATED_WORK),
        ("Model Architecture", Cat.METHOD),
        ("Our Approach", Cat.METHOD),
        ("Experimental Results", Cat.EVALUATION),
        ("Results and Discussion", Cat.EVALUATION),
        ("Ablation Study", Cat.EVALUATION),
        ("Discussion and Future Work", Cat.CONCLUSION),
        ("Limitations", Cat.CONCLUSION),
        ("References", Cat.OTHER),
        ("Acknowledgements", Cat.OTHER),
        ("Appendix: Additional Results", Cat.OTHER),
        ("FlashRank", None),
    ],
)
def test_match_category(heading: str, expected: Cat | None) -> None:
    assert match_category(heading) is expected


def test_gap_between_introduction_and_evaluation_is_method() -> None:
    infos = [
        HeadingInfo("Abstract", 0, None),
        HeadingInfo("Introduction", 0, None),
        HeadingInfo("Related Work", 0, None),
        HeadingInfo("Distilling Listwise Rankers", 0, None),
        HeadingInfo("Teacher Permutations", 1, 3),
        HeadingInfo("Experiments", 0, None),
        HeadingInfo("Model Comparison", 1, 5),  # "model" must not pull it into METHOD
        HeadingInfo("Ablation Study", 1, 5),
        HeadingInfo("Use Cases", 0, None),  # after the first evaluation section: no METHOD fill
        HeadingInfo("Conclusion", 0, None),
        HeadingInfo("References", 0, None),
        HeadingInfo("Additional Results", 0, None, appendix=True),
        HeadingInfo("More Results", 1, 11),
    ]
    assert classify_sections(infos) == [
        Cat.ABSTRACT,
        Cat.INTRODUCTION,
        Cat.RELATED_WORK,
        Cat.METHOD,
        Cat.METHOD,
        Cat.EVALUATION,
        Cat.EVALUATION,
        Cat.EVALUATION,
        Cat.OTHER,
        Cat.CONCLUSION,
        Cat.OTHER,
        Cat.OTHER,
        Cat.OTHER,
    ]


def test_sections_after_references_are_other() -> None:
    infos = [
        HeadingInfo("Introduction", 0, None),
        HeadingInfo("Method", 0, None),
        HeadingInfo("References", 0, None),
        HeadingInfo("Experimental Details", 0, None),
    ]
    assert classify_sections(infos)[-1] is Cat.OTHER


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("References", True),
        ("REFERENCES", True),
        ("7. References", True),
        ("Bibliography", True),
        ("参考文献", True),
        ("Literature cited", True),
        ("Reference resolution", False),
        ("Related Work", False),
    ],
)
def test_reference_list_headings(heading: str, expected: bool) -> None:
    assert is_reference_list(heading) is expected
