"""The one way text from documents, models and users reaches the terminal.

Titles, chunk texts, answers, file names, questions and error messages can carry Rich markup
("[link=...]", "[/i]"), terminal escape sequences (clear screen, window title, OSC 8 hyperlinks,
colours) and bidi overrides that reorder what the reader sees. Every command prints such text
through this module:

- `clean`: C0 and C1 control characters (except newline and tab), DEL, bidi overrides and isolates
  and lone surrogates are shown visibly (`\\x1b`, `\\u202e`), so the terminal never acts on them;
- `one_line`: `clean`, and newline and tab shown visibly too: for what must stay on its line (a file
  name in a progress bar);
- `markup`: `clean`, then Rich markup escaped, for splicing into our own markup strings;
- `text`: a Rich `Text`, never parsed as markup;
- `answer`: an answer as a renderable: extracted document text as plain text, a model's answer as
  Markdown with links shown as "text (url)" and images as their alt text, never a live link;
- `json_text`: JSON for stdout with the characters JSON leaves raw (C1, bidi) escaped as `\\uXXXX`;
- `Indented`: a Text wrapped at word boundaries at the console's width, its lines indented (a description under
  its name, a numbered source whose next lines start under its title), piped as on a terminal.

`make_console` never lays out at width 0 (COLUMNS=0 made Rich print nothing at all), and
`reported_columns` says what width the terminal itself reports, so a table that cannot fit (or a
terminal that reports no size) is printed as plain lines instead of columns squeezed to nothing.
"""

from __future__ import annotations

import os
import re

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markup import escape
from rich.text import Text

__all__ = [
    "Indented",
    "answer",
    "clean",
    "json_text",
    "make_console",
    "markup",
    "one_line",
    "reported_columns",
    "text",
]

# C0 but \t and \n, DEL and C1, bidi embeddings/overrides (U+202A-202E) and isolates (U+2066-2069),
# and lone surrogates (undecodable bytes of a file name), which no terminal encoding can print.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LINE_BREAKS = re.compile("[\t\n]")
# What json.dumps(ensure_ascii=False) leaves raw inside strings: DEL, C1, bidi, lone surrogates.
_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object) -> str:
    """`value` as text with every control, bidi and undecodable character shown as an escape."""
    return _UNSAFE.sub(_visible, str(value))


def one_line(value: object) -> str:
    """`clean`, with newlines and tabs shown as `\\x0a`, `\\x09` too: text that must stay on one line."""
    return _LINE_BREAKS.sub(_visible, clean(value))


def markup(value: object) -> str:
    """`value` cleaned and markup-escaped: safe inside a Rich markup string."""
    return escape(clean(value))


def text(value: object, style: str = "") -> Text:
    """`value` cleaned, as a Rich Text (a table cell, a line): never read as markup."""
    return Text(clean(value), style=style)


def answer(body: str, *, extractive: bool) -> RenderableType:
    """An answer to print: extracted document text as it is, a model's Markdown without live links."""
    if extractive:
        return text(body)
    from rich.markdown import Markdown  # here: it loads markdown-it and Pygments, which a quoted answer never needs

    return Markdown(clean(body), hyperlinks=False)


def json_text(data: str) -> str:
    """JSON text with C1 controls and bidi characters escaped (JSON encoders escape only C0)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", data)


def _env_size(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def make_console(*, stderr: bool = False) -> Console:
    """A console for paperscope's own markup: no emoji codes or automatic highlighting of our output.

    COLUMNS=0 or LINES=0 (what a terminal that reports no size passes on) would make Rich lay everything out
    at width 0 and print nothing; such a console lays out at 80x25, as Rich does for a 0x0 terminal.
    """
    width = 80 if _env_size("COLUMNS") == 0 else None
    height = 25 if _env_size("LINES") == 0 else None
    return Console(stderr=stderr, emoji=False, highlight=False, width=width, height=height)


def reported_columns(console: Console) -> int | None:
    """The width the terminal itself reports (COLUMNS, else its own size), 0 when it reports none; None piped.

    Rich lays out at 80 columns when the terminal reports 0x0; this tells such a terminal from a real one.
    """
    if not console.is_terminal:
        return None
    if (columns := _env_size("COLUMNS")) is not None:
        return columns
    try:
        return os.get_terminal_size(console.file.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


class Indented:
    """`body` wrapped at word boundaries to the console's width less `indent`, every line indented by `indent`
    spaces, or with `hanging` every line but the first (whose own text starts it: "[1] Title ...").

    Rich's Padding would pad each line with spaces to the full width, which a pipe or a copied line keeps; a word
    longer than a line is folded, never cut.
    """

    def __init__(self, body: Text, indent: int, *, hanging: bool = False) -> None:
        self.body, self.indent, self.hanging = body, indent, hanging

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width - self.indent, 20)
        for n, line in enumerate(self.body.wrap(console, width, overflow="fold")):
            line.rstrip()
            pad = "" if self.hanging and n == 0 else " " * self.indent
            yield Text(pad) + line
