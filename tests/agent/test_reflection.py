"""Reading a model's scores of an answer: JSON or prose, out-of-range and junk values dropped."""

from __future__ import annotations

import pytest

from paperscope.agent.reflection import parse_scores


def test_json_scores_and_what_is_missing_are_read() -> None:
    scores = '{"accuracy": 8, "completeness": "6", "relevance": 9.5, "support": 7, "missing": "the dataset"}'
    reply = f"Sure!\n```json\n{scores}\n```"
    scored = parse_scores(reply)
    assert scored.scores == {"accuracy": 8, "completeness": 6, "relevance": 9.5, "support": 7}
    assert scored.missing == "the dataset" and scored.note == ""


def test_scores_written_as_prose_are_read() -> None:
    scored = parse_scores("Accuracy: 9/10\nCompleteness - 4\nRelevance: 8\nSupport: 12")
    assert scored.scores == {"accuracy": 9, "completeness": 4, "relevance": 8}  # 12 is out of range


@pytest.mark.parametrize(
    "reply",
    [
        "Looks great to me!",
        '{"accuracy": "high", "completeness": true, "relevance": null, "support": 0}',
        '{"accuracy": 85, "completeness": -3}',
        "[8, 7, 9, 6]",
        "",
    ],
)
def test_junk_gives_no_scores_and_says_so(reply: str) -> None:
    scored = parse_scores(reply)
    assert scored.scores == {} and scored.note == "the model wrote no usable scores"
