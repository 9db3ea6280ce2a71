"""Hostile text from documents, models and users reaches the terminal only through paperscope.terminal.

The end-to-end tests run every command over a paper whose title and text carry Rich markup, escape
sequences (clear screen, window title, OSC 8 hyperlinks, colours), C1 controls and bidi overrides:
once on a real terminal (a pty, in a subprocess) and once piped.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from paperscope import terminal
from paperscope.cli import app

ESC = "\x1b"
# What a document may try: a window title (OSC 0), a hidden hyperlink (OSC 8), clear screen, colours,
# an 8-bit CSI, a bidi override, Rich markup that would close a tag never opened or add a link.
TITLE = (
    f"Dense [/i] Study {ESC}]0;pwned\x07 {ESC}]8;;https://osc.example/{ESC}\\click{ESC}]8;;{ESC}\\ "
    f"[link=https://x.example]Hidden[/link] {ESC}[2J{ESC}[38;5;196mred \u202eevil\u202c \x9b5m end"
)
BODY = (
    f"Dense retrieval encodes queries and passages as vectors {ESC}[2J{ESC}]8;;https://osc.example/{ESC}\\here"
    f"{ESC}]8;;{ESC}\\ with [link=https://x.example]markup[/link] and a [model card](https://evil.example/card) "
    "and ![diagram](https://evil.example/x.png) \u202eevil\u202c."
)
# Byte sequences that must never reach a terminal from a document.
FORBIDDEN = [b"\x1b]", b"\x1b[2J", b"\x1b[38;5;196m", b"\x07", "\x9b".encode(), "\u202e".encode()]


def hostile_paper(folder: Path) -> Path:
    """A Markdown paper with the hostile title and text, in a folder whose name holds `[i]`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hostile.md"
    intro = "Dense retrieval [1] finds passages by meaning [2, 5], unlike sparse retrieval [12–14] over words."
    path.write_text(
        f"# {TITLE}\n\n## Abstract\n\n{BODY}\n\n## 1 Introduction\n\n{intro}\n\n"
        "## 2 Method\n\nWe encode passages with a dual encoder trained on question answer pairs.\n",
        encoding="utf-8",
    )
    return path


def gold_file(folder: Path) -> Path:
    """Gold queries with a hostile id and a question that fails (only punctuation), so eval prints an error."""
    path = folder / "gold.jsonl"
    rows = [
        {"id": f"q[/i]{ESC}[2J", "query": "How does dense retrieval work?", "expected_titles": [TITLE]},
        {"id": f"bad[/i]{ESC}]0;x\x07", "query": "?!"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- the module -----------------------------------------------------------------------------------------


def _render(renderable: object, terminal_codes: bool) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=terminal_codes, width=200, highlight=False).print(renderable)
    return out.getvalue()


def test_clean_shows_controls_and_bidi_visibly_and_keeps_newlines_and_tabs() -> None:
    assert (
        terminal.clean(f"a{ESC}[2Jb\tc\nd\x9be\u202ef\u2066g\x7f\x00")
        == "a\\x1b[2Jb\tc\nd\\x9be\\u202ef\\u2066g\\x7f\\x00"
    )
    assert terminal.clean("café – 数据 [1]") == "café – 数据 [1]"  # ordinary text is untouched
    assert terminal.clean("name\udcff.pdf") == "name\\udcff.pdf"  # an undecodable byte of a file name


def test_markup_is_printed_literally() -> None:
    text = _render(f"[bold]{terminal.markup('[/i] [link=https://x.example]x[/link]')}[/bold]", terminal_codes=True)
    assert "[/i] [link=https://x.example]x[/link]" in text and "\x1b]8" not in text


def test_a_model_answer_shows_links_as_text_and_never_as_hyperlinks() -> None:
    body = "See the [model card](https://evil.example/card) and ![diagram](https://evil.example/x.png) **now** [1]."
    text = _render(terminal.answer(body, extractive=False), terminal_codes=False)
    assert "model card (https://evil.example/card)" in text and "now [1]." in text  # the URL is shown
    assert "diagram" in text and "](" not in text  # the image is its alt text; Markdown is rendered
    codes = _render(terminal.answer(body, extractive=False), terminal_codes=True)
    assert "\x1b]8" not in codes and "\x1b[" in codes  # styled, but no live link (OSC 8), not even the image


def test_extracted_document_text_is_not_rendered_as_markdown() -> None:
    text = _render(terminal.answer("a [card](https://e.x/c) **b**", extractive=True), terminal_codes=True)
    assert "a [card](https://e.x/c) **b**" in text and "\x1b]8" not in text


def test_json_text_escapes_what_json_leaves_raw() -> None:
    data = json.dumps({"t": "a\x9bb\u202ec\udcffd"}, ensure_ascii=False)
    safe = terminal.json_text(data)
    assert json.loads(safe) == {"t": "a\x9bb\u202ec\udcffd"}
    assert "\x9b" not in safe and "\u202e" not in safe


def test_indented_text_wraps_at_words_without_padding() -> None:
    body = terminal.text("Sentences packed up to chunk_size tokens; overlap repeats the last sentences of a paragraph.")
    out = io.StringIO()
    Console(file=out, width=40, highlight=False).print(terminal.Indented(body, 4))
    assert out.getvalue().splitlines() == [
        "    Sentences packed up to chunk_size",
        "    tokens; overlap repeats the last",
        "    sentences of a paragraph.",
    ]
    out = io.StringIO()
    Console(file=out, width=40, highlight=False).print(
        terminal.Indented(terminal.text("[1] " + "x" * 50), 4, hanging=True)
    )
    assert out.getvalue().splitlines() == ["[1]", "    " + "x" * 36, "    " + "x" * 14]  # a long word folded


# --- every command, piped -------------------------------------------------------------------------------


def test_every_command_prints_hostile_text_literally_when_piped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # wide enough that no checked string is wrapped
    folder = tmp_path / "lib[i]"
    paper = hostile_paper(folder)
    runner = CliRunner()

    def run(*args: str, code: int = 0, stdin: str | None = None) -> str:
        result = runner.invoke(app, list(args), input=stdin)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert result.exit_code == code, (args, result.stdout, result.stderr)
        out = result.stdout + result.stderr
        for bad in FORBIDDEN:
            assert bad.decode() not in out, (args, bad)
        return out

    out = run("ingest", str(folder), str(folder / "missing.pdf"), code=1)
    # The parser drops a document's control characters (what is left of an escape sequence is shown as text);
    # markup and bidi overrides reach the terminal layer, which shows them literally.
    assert "Dense [/i] Study ]0;pwned " in out and "[link=https://x.example]Hidden[/link]" in out
    assert "lib[i]/missing.pdf: no such file" in out
    listed = run("papers")
    assert "Dense [/i] Study" in listed and "\\u202eevil" in listed and "\\x1b" not in listed
    doc_id = json.loads(run("papers", "--json"))[0]["doc_id"]
    answer = run("ask", "Does dense retrieval encode queries and passages as vectors?", "--no-agent")
    assert "[link=https://x.example]markup[/link]" in answer and "[1]" in answer
    assert "[model card](https://evil.example/card)" in answer  # document text: shown as written
    assert "[2, 5]" not in answer and "[12–14]" not in answer  # the paper's own reference numbers are gone
    chat = run(
        "chat",
        "--no-agent",
        stdin="Does dense retrieval encode queries and passages as vectors?\n/sources 1\n/papers\n/quit\n",
    )
    assert "Dense [/i] Study" in chat and "with [link=https://x.example]markup[/link]" in chat
    evaluated = run("eval", str(gold_file(tmp_path)), "--no-agent", code=1)
    assert "bad[/i]\\x1b]0;x\\x07" in evaluated and "no words" in evaluated
    narrow = runner.invoke(app, ["eval", str(gold_file(tmp_path)), "--no-agent"], env={"COLUMNS": "60"}).stdout
    overall = next(line for line in narrow.splitlines() if "overall" in line)
    assert "…" not in overall and "1.000" in overall  # piped: no column squeezed away
    assert "Dense [/i] Study" in run("parse", str(paper))
    assert "invalid doc_id '[/i]'" in run("remove", "[/i]", code=1)
    assert "unknown section category '[/i]'" in run("ask", "x", "--section", "[/i]", code=1)
    assert "invalid doc_id '[/i]'" in run("ask", "x", "--paper", "[/i]", code=1)
    assert "Dense [/i] Study" in run("remove", doc_id[:8])


# --- every command, on a real terminal ------------------------------------------------------------------

# One process runs the commands one after another with stdin, stdout and stderr on a pty: one model load.
DRIVER = """
import sys
from paperscope.cli import app
for args in COMMANDS:
    print("<<run " + args[0] + ">>", flush=True)
    try:
        app(args)
    except SystemExit as exc:
        print("<<rc=%s>>" % (exc.code or 0), flush=True)
"""


def _run_on_pty(
    commands: list[list[str]], stdin: str, env: dict[str, str], size: tuple[int, int] | None = None
) -> bytes:
    master, slave = pty.openpty()
    if size is not None:  # (rows, columns) the terminal reports, as a terminal window sets them
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    code = f"COMMANDS = {commands!r}\n{DRIVER}"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
    )
    os.close(slave)
    os.write(master, stdin.encode())  # typed ahead: the chat reads it when its turn comes
    out = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 240)
            if not ready:
                raise AssertionError(f"no output for 240 s; so far: {bytes(out[-2000:])!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            out.extend(chunk)
    finally:
        proc.wait(timeout=60)
        os.close(master)
    return bytes(out)


def test_every_command_on_a_real_terminal_writes_no_document_control_sequence(tmp_path: Path) -> None:
    folder = tmp_path / "lib[i]"
    paper = hostile_paper(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERSCOPE_", "MILVUS_", "OPENAI_"))}
    env.update(PAPERSCOPE_HOME=str(tmp_path / "home"), TERM="xterm-256color", COLUMNS="250", LINES="40")
    question = "Does dense retrieval encode queries and passages as vectors?"
    commands = [
        ["ingest", str(folder), str(folder / "missing.pdf")],
        ["papers"],
        ["ask", question, "--no-agent"],
        ["chat", "--no-agent"],
        ["eval", str(gold_file(tmp_path)), "--no-agent"],
        ["parse", str(paper)],
        ["remove", "[/i]"],
        ["ask", "x", "--section", "[/i]"],
    ]
    out = _run_on_pty(commands, f"{question}\n/sources 1\n/papers\n/quit\n", env)
    text = out.decode("utf-8", errors="replace")
    assert "Traceback" not in text, text[-3000:]
    for bad in FORBIDDEN:
        assert bad not in out, (bad, text[-3000:])
    codes = re.findall(r"<<rc=(\d+)>>", text)
    assert codes == ["1", "0", "0", "0", "1", "0", "1", "1"], text[-3000:]
    assert "\x1b[" in text  # it is a terminal: Rich writes its own colours...
    assert text.count("Dense [/i] Study") >= 4  # ...and the title, literally, in ingest, papers, ask and chat
    assert "Study ]0;pwned " in text  # a document's control characters are dropped at parsing
    assert "\\x1b]0;x\\x07" in text and "\\u202eevil" in text  # a gold file's controls shown, not obeyed
    assert "[link=https://x.example]" in text
    assert "lib[i]/missing.pdf: no such file" in text  # the path, literally, in the failed row
    assert "unknown section category '[/i]'" in text and "invalid doc_id '[/i]'" in text


# --- the ingest report at any terminal size -------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BROKEN = "broken-download-of-a-paper-with-a-long-file-name.pdf"
REASON = f"{BROKEN}: not a PDF (no %PDF header)"
GOOD = "a-rather-long-file-name-for-a-paper-about-tidal-energy-final-v2.md"


def _ingest_folder(tmp_path: Path) -> Path:
    """A folder with a .pdf that is text and a good paper, both with long names."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / BROKEN).write_text("Sorry, the download failed. Please try again later.\n")
    intro = "Tidal energy is predictable. We measure what turbines in three straits deliver over a year."
    (folder / GOOD).write_text(f"# Tidal Energy Without Tears\n\n## Abstract\n\n{intro}\n\n## 1 Method\n\n{intro}\n")
    return folder


def _pty_env(home: Path, **extra: str) -> dict[str, str]:
    drop = ("PAPERSCOPE_", "MILVUS_", "OPENAI_", "COLUMNS", "LINES")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "PAPERSCOPE_HOME": str(home), "TERM": "xterm-256color", **extra}


@pytest.mark.parametrize(
    ("size", "extra"),
    [((24, 80), {}), ((0, 0), {}), ((24, 80), {"COLUMNS": "0", "LINES": "0"})],
    ids=["80 columns", "a 0x0 terminal", "COLUMNS=0 LINES=0"],
)
def test_the_ingest_report_says_why_a_file_failed_at_any_terminal_size(
    tmp_path: Path, size: tuple[int, int], extra: dict[str, str]
) -> None:
    folder = _ingest_folder(tmp_path)
    out = _run_on_pty([["ingest", str(folder)]], "", _pty_env(tmp_path / "home", **extra), size=size)
    text = ANSI.sub("", out.decode("utf-8", errors="replace"))
    assert "Traceback" not in text, text[-3000:]
    assert re.findall(r"<<rc=(\d+)>>", text) == ["1"], text[-3000:]
    assert REASON in text, text[-3000:]  # whole, on one line
    assert "1 ingested, 0 replaced, 0 unchanged, 1 failed" in text
    if size == (24, 80) and not extra:  # a table that fits 80 columns: every column shown
        assert re.search(r"┃ file +┃ status +┃ pages ┃ chunks ┃ seconds ┃ title +┃", text), text[-3000:]
        assert re.search(r"│ ingested  │ +1 │ +\d+ │", text) and "Tidal Energy" in text
    else:  # no usable size: plain lines, no column squeezed to nothing
        # A line starts after a newline, or after the carriage return that took the progress bar away.
        assert re.search(rf"(^|\r)failed +{re.escape(BROKEN)} +0 pages +0 chunks .*{re.escape(REASON)}", text, re.M)
        assert re.search(rf"(^|\r)ingested +{re.escape(GOOD)} +1 pages +\d+ chunks .* Tidal Energy Without", text, re.M)


def test_a_newline_in_a_file_name_is_shown_escaped_in_the_progress_bar(
    tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    named = folder / "a\nb.pdf"
    named.write_bytes(sample_pdfs["marten"].read_bytes())
    out = _run_on_pty([["ingest", str(folder)]], "", _pty_env(tmp_path / "home", COLUMNS="200", LINES="40"))
    text = ANSI.sub("", out.decode("utf-8", errors="replace"))
    assert re.findall(r"<<rc=(\d+)>>", text) == ["0"], text[-3000:]
    assert re.search(r"a\\x0ab\.pdf: (reading|parsing|chunking|embedding)", text), text[-3000:]  # the progress bar
    assert b"a\nb.pdf" not in out and b"a\r\nb.pdf" not in out  # never a raw newline inside the name


def test_a_newline_in_a_file_name_is_shown_escaped_by_parse(tmp_path: Path) -> None:
    named = tmp_path / "a\nb.pdf"
    named.write_text("not a PDF")
    result = CliRunner().invoke(app, ["parse", str(named)])
    assert result.exit_code == 1 and result.stderr == "error: a\\x0ab.pdf: not a PDF (no %PDF header)\n"
