"""ask and chat without a chat model: the notice that answers are extracted sentences is said once, not per question."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.cli.common import NO_MODEL, NO_MODEL_NOTED
from tests.markdown_papers import markdown

QUESTION = "How fast did ferns grow in the shade?"


def said(stderr: str) -> int:
    """How many times stderr says no model is configured (wrapped at the terminal's width)."""
    return " ".join(stderr.split()).count(NO_MODEL)


def test_no_model_is_said_once_per_data_directory_by_ask_and_once_per_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.upper().startswith(("PAPERSCOPE_", "MILVUS_", "OPENAI_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    paper = tmp_path / "ferns.md"
    sections = [
        ("## Abstract", ["We study ferns and report what we found about ferns in three experiments."]),
        ("## 1 Results", ["Ferns grew two millimetres a day in the shade and one in open plots."]),
    ]
    paper.write_text(markdown("A Paper On Ferns", 2024, sections))
    runner = CliRunner(env={"COLUMNS": "80"})
    assert runner.invoke(app, ["ingest", str(paper)]).exit_code == 0

    asks = [runner.invoke(app, ["ask", QUESTION]) for _ in range(3)]
    assert all(a.exit_code == 0 and "[1]" in a.stdout for a in asks), [a.stderr for a in asks]
    assert [said(a.stderr) for a in asks] == [1, 0, 0]  # the first ask of this data directory says it
    assert (home / NO_MODEL_NOTED).exists()

    chat = runner.invoke(app, ["chat"], input=f"{QUESTION}\nAnd in open plots?\n{QUESTION}\n/quit\n")
    assert chat.exit_code == 0, chat.stderr
    assert chat.stdout.count("Track ") == 3  # three answers...
    assert said(chat.stderr) == 1  # ...one notice, at the session's start
    again = runner.invoke(app, ["chat"], input=f"{QUESTION}\n/quit\n")
    assert said(again.stderr) == 1  # a new session: said again
