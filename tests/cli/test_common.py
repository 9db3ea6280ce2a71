"""What every command shares (src/cli/common.py): help without Python types, progress bars with the time left, the
no-model notice said once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.progress import TimeRemainingColumn
from typer.main import get_command
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.cli.common import NO_MODEL, NO_MODEL_NOTED, progress_bars, say_mode
from paperscope.config import Settings

#: What Typer shows as an option's type unless told otherwise: `<str>`, `<bool>`, `<list[str]>`, `<int range>`.
TYPE_PLACEHOLDER = re.compile(r"<(str|bool|int|list|float|path|datetime)\b[^>]*>", re.I)


def commands() -> list[list[str]]:
    """`paperscope` itself and each of its commands, as arguments before --help."""
    group = get_command(app)
    return [[], *([name] for name in group.list_commands(None))]  # type: ignore[attr-defined,arg-type]


@pytest.mark.parametrize("command", commands(), ids=lambda c: " ".join(c) or "paperscope")
def test_help_at_80_columns_shows_no_python_types(command: list[str]) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    result = runner.invoke(app, [*command, "--help"], terminal_width=80, prog_name="paperscope")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Usage: paperscope" in text
    assert not TYPE_PLACEHOLDER.search(text), TYPE_PLACEHOLDER.findall(text)
    for placeholder in ("<str>", "<bool>", "<int", "<list", "<float", "<path"):
        assert placeholder not in text, placeholder
    wide = [line for line in text.splitlines() if len(line.rstrip()) > 80]
    assert not wide, wide


def test_flags_show_nothing_and_values_a_word() -> None:
    text = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["ask", "--help"], terminal_width=80).stdout
    rows = {line.split()[1]: line for line in text.splitlines() if re.match(r"│ --[a-z-]+ ", line)}
    assert re.search(r"--json\s+Print the Answer", rows["--json"])  # a flag: its help right after its name
    assert re.search(r"--no-agent\s+Single-shot", rows["--no-agent"])
    assert re.search(r"--kb\s+NAME\s+Knowledge base", rows["--kb"])
    assert re.search(r"--k\s+N \[1<=x<=50\]\s+Evidence", rows["--k"])
    assert re.search(r"--paper\s+DOC_ID\s+Only this paper", rows["--paper"])
    question = next(line for line in text.splitlines() if "question" in line and "The question" in line)
    assert re.search(r"\*\s+question\s+The question", question)  # an argument: its name, no type
    parsed = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["eval", "--help"], terminal_width=80).stdout
    assert re.search(r"--out\s+PATH\s+Also write", parsed)


def test_progress_bars_show_the_time_left() -> None:
    """Embedding and enrichment take minutes: their bar says how long is left."""
    bars = progress_bars(quiet=False)
    assert any(isinstance(column, TimeRemainingColumn) for column in bars.columns)


def test_the_no_model_notice_of_ask_is_said_once_per_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    without = Settings(home=home)
    with_model = Settings(home=home, llm={"model": "qwen2.5:14b"})

    def said(settings: Settings, **how: bool) -> int:
        say_mode(settings, **how)
        return " ".join(capsys.readouterr().err.split()).count(NO_MODEL)  # wrapped at the terminal's width

    assert said(without, once_per_home=True) == 1
    assert (home / NO_MODEL_NOTED).exists()
    assert said(without, once_per_home=True) == 0  # the next asks: not again
    assert said(without, once_per_home=True, quiet=True) == 0
    assert said(with_model, once_per_home=True, quiet=True) == 0  # --json with a model: nothing said...
    assert not (home / NO_MODEL_NOTED).exists()  # ...but the model is noted
    assert said(without, once_per_home=True) == 1  # the model gone again (a new shell): said once more
    assert said(without, once_per_home=True) == 0
    assert said(without) == 1  # a chat says it at its start, whatever ask said
    missing = Settings(home=tmp_path / "nowhere")
    assert said(missing, once_per_home=True) == 1
    assert not (tmp_path / "nowhere").exists()  # no data directory made for a notice
