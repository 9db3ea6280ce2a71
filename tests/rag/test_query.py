import pytest

from paperscope.rag.query import inflect


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
