"""The terminal chat loop of `paperscope chat`: questions with follow-ups, and commands to inspect answers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from . import terminal
from .errors import PaperscopeError
from .terminal import markup as escape  # every document, model and user text is cleaned, then escaped

if TYPE_CHECKING:
    from .answer.claims import Claim
    from .answer.model import Answer, Source
    from .rag.store import PaperRecord, StoredChunk

__all__ = ["PROMPT", "Runner", "chat_loop"]

PROMPT = "you> "
SHORT_ID = 8  # doc_id characters shown in /papers
SOURCE_WINDOW = 2  # chunks either side of the cited one shown by /sources
OBSERVATION_CHARS = 100
_BREAKS = re.compile("([ \t\n])")  # where streamed text may wrap (a no-break space keeps its words together)

#: Each claim's verdict as the terminal marks it after its sentence: what the passage it cites holds of it.
VERDICTS = {"supported": ("✓", "green"), "partial": ("◐", "yellow"), "unsupported": ("✗", "bold red")}
LEGEND = "✓ supported · ◐ partly supported · ✗ not supported: what the passage a sentence cites holds of it"

HELP: list[tuple[str, str]] = [
    ("/sources N", "source N of the last answer in full, with the chunks around it"),
    ("/trace", "how the last answer came: tool calls, generated queries, reflection, timings, tokens"),
    ("/papers", "the papers of the knowledge base"),
    ("/help", "this list"),
    ("/quit, /exit", "leave (Ctrl-C and Ctrl-D too)"),
]


class ChatStore(Protocol):
    """What the chat loop reads of a store (the banner, /papers, /sources): a PaperStore, or a server's."""

    kb: str

    def list_papers(self, brief: bool = False) -> list[PaperRecord]: ...

    def get_context_window(self, doc_id: str, center_chunk_index: int, window_size: int = 1) -> list[StoredChunk]: ...


class Runner(Protocol):
    """What the chat loop asks questions of: the single-shot Searcher, the agent, or a server (`--server`)."""

    @property
    def store(self) -> ChatStore: ...

    def run(
        self,
        query: str,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        """Answer `query`, given the earlier answers; stream text pieces to `on_token` if it can."""
        ...


class _Quit(Exception):
    """Raised by a command that ends the loop."""


def chat_loop(
    runner: Runner,
    console: Console,
    read: Callable[[str], str] = input,
    *,
    mode: str = "",
) -> list[Answer]:
    """Read questions and commands until /quit, Ctrl-C or end of input; return the answers given."""
    answers: list[Answer] = []
    legend = [False]  # the verdicts' legend is printed once, under the first answer with claims
    _banner(runner, console, mode)
    while True:
        try:
            line = read(PROMPT).strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            break
        if not line:
            continue
        try:
            if line.startswith("/"):
                _command(line, runner, console, answers)
            else:
                answer = _ask(line, runner, console, answers, legend)
                if answer is not None:
                    answers.append(answer)
        except (_Quit, KeyboardInterrupt):
            console.print()
            break
    console.print("[dim]bye[/dim]")
    return answers


# --- questions -----------------------------------------------------------------------------------------


def _ask(question: str, runner: Runner, console: Console, answers: list[Answer], legend: list[bool]) -> Answer | None:
    """Run one question; print the answer (streamed or whole, each claim's verdict marked) and its sources. None on
    a reported error."""
    streamed = False
    stream = WordStream(console)

    def on_token(piece: str) -> None:
        nonlocal streamed
        streamed = True
        stream.write(piece)

    # Every line below is wrapped by rich at word boundaries at the console's width; printed as one long line
    # (soft_wrap), the terminal cut it wherever the edge fell: "(METHO" / "D)".
    try:
        answer = runner.run(question, history=list(answers), on_token=on_token)
    except (PaperscopeError, ValueError) as exc:
        if streamed:
            stream.end()
            console.print()
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return None
    if streamed:
        stream.end()
        console.print()
        for claim in answer.claims:  # streamed as written: the verdicts the text could not carry follow it
            if claim.verdict != "supported":
                console.print(claim_line(claim), highlight=False)
    else:
        console.print(with_verdicts(answer))
    if answer.claims and not legend[0]:
        console.print(f"[dim]{LEGEND}[/dim]", highlight=False)
        legend[0] = True
    if answer.llm_error:
        console.print(f"[yellow]warning:[/yellow] {terminal.markup(answer.llm_error)}", highlight=False)
    _print_sources(answer, console)
    return answer


class WordStream:
    """Streamed text written at word boundaries: a word that would cross the console's right edge starts the next
    line, where the terminal would have cut it anywhere. A word is held back until what follows shows where it
    ends, and the spaces before it until it is known to fit (a line never ends in spaces); `end()` writes the last
    word. A word longer than a line is left to the terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.column = 0
        self.word = ""
        self.spaces = ""

    def write(self, piece: str) -> None:
        *done, self.word = _BREAKS.split(self.word + terminal.clean(piece))
        out: list[str] = []
        for i in range(0, len(done), 2):  # word, break, word, break, ...
            self._word(done[i], out)
            if done[i + 1] == "\n":
                out.append("\n")
                self.column, self.spaces = 0, ""
            else:
                self.spaces += done[i + 1]
        self._out(out)

    def end(self) -> None:
        out: list[str] = []
        self._word(self.word, out)
        self.word, self.spaces = "", ""
        self._out(out)

    def _word(self, word: str, out: list[str]) -> None:
        if not word:
            return
        width, size = self.console.width, cell_len(word)
        spaces = self.spaces.expandtabs(8)  # a tab as 8 columns at most: close enough for a model's text
        self.spaces = ""
        if self.column and self.column + len(spaces) + size > width:
            out.append("\n")  # the spaces before a wrapped word are dropped, its line's own indent kept
            self.column = 0
        else:
            out.append(spaces)
            self.column += len(spaces)
        out.append(word)
        self.column += size
        if self.column > width:  # a word longer than a line: the terminal folds it
            self.column %= width

    def _out(self, out: list[str]) -> None:
        if out:
            self.console.print(Text("".join(out)), end="", highlight=False, soft_wrap=True)


def with_verdicts(answer: Answer) -> RenderableType:
    """The answer to print, each claim's verdict mark after its sentence (extracted text as it is, a model's
    Markdown rendered)."""
    located = sorted((c for c in answer.claims if c.at is not None), key=lambda c: c.at[0] if c.at else 0)
    if not answer.extractive:
        body = answer.answer
        for claim in reversed(located):
            if claim.at is not None:
                body = f"{body[: claim.at[1]]} {VERDICTS[claim.verdict][0]}{body[claim.at[1] :]}"
        return terminal.answer(body, extractive=False)
    out, pos = Text(), 0
    for claim in located:
        if claim.at is None or claim.at[0] < pos:
            continue
        out.append_text(terminal.text(answer.answer[pos : claim.at[1]]))
        mark, style = VERDICTS[claim.verdict]
        out.append(f" {mark}", style=style)
        pos = claim.at[1]
    out.append_text(terminal.text(answer.answer[pos:]))
    return out


def claim_line(claim: Claim) -> str:
    """One claim that is not supported, as rich markup: its mark, its sentence, what nothing read holds."""
    mark, style = VERDICTS[claim.verdict]
    missing = f" [dim](not in the sources: {escape(', '.join(claim.missing))})[/dim]" if claim.missing else ""
    sentence = claim.text if len(claim.text) <= 160 else claim.text[:159] + "…"
    return f"[{style}]{mark}[/{style}] {escape(sentence)}{missing}"


def pages_label(pages: tuple[int, int]) -> str:
    return f"p. {pages[0]}" if pages[0] == pages[1] else f"p. {pages[0]}-{pages[1]}"


def source_row(s: Source, *, chunks: bool = False) -> RenderableType:
    """A numbered source as printed: wrapped at word boundaries, its next lines starting under its title."""
    return terminal.Indented(Text.from_markup(source_line(s, chunks=chunks)), len(f"[{s.n}] "), hanging=True)


def source_line(s: Source, *, chunks: bool = False) -> str:
    """One numbered source as rich markup: paper · section (CATEGORY) · pages [· chunk range] · citation id."""
    span = f"chunks {s.chunk_range[0]}-{s.chunk_range[1]} · " if chunks else ""
    return (
        f"[bold]\\[{s.n}][/bold] {escape(s.title)} [dim]· {escape(s.section_title)} ({s.section_category}) · "
        f"{pages_label(s.pages)} · {span}{escape(s.citation)}[/dim]"
    )


def how_answered(answer: Answer) -> str:
    """Which way the answer came: the agent, single-shot retrieval, or single-shot after the agent gave up."""
    if answer.mode == "agent":
        return "agent"
    if answer.mode == "fallback":
        return "single-shot fallback" + (", extracted" if answer.extractive else "")
    return "single-shot" + (", extracted" if answer.extractive else "")


def _print_sources(answer: Answer, console: Console) -> None:
    for s in answer.sources:
        # Wrapped at word boundaries: the citation id stays whole for copying (a line of its own if need be).
        console.print(source_row(s), highlight=False)
    track = answer.track_label
    total = answer.timings.get("total")
    took = f" · {total:.2f} s" if total is not None else ""
    console.print(f"[dim]Track {answer.track} · {track} · {how_answered(answer)}{took}[/dim]", highlight=False)
    console.print()


# --- commands ------------------------------------------------------------------------------------------


def _command(line: str, runner: Runner, console: Console, answers: list[Answer]) -> None:
    name, _, rest = line.partition(" ")
    name, rest = name.lower(), rest.strip()
    if name in ("/quit", "/exit", "/q"):
        raise _Quit
    if name == "/help":
        _help(console)
    elif name == "/sources":
        _sources(rest, runner, console, answers)
    elif name == "/trace":
        _trace(console, answers)
    elif name == "/papers":
        _papers(runner, console)
    else:
        console.print(f"[yellow]unknown command {escape(name)}[/yellow]; /help lists the commands", highlight=False)


def _banner(runner: Runner, console: Console, mode: str) -> None:
    kb = runner.store.kb
    try:
        count = f"{sum(1 for p in runner.store.list_papers() if p.ready)} papers"
    except PaperscopeError as exc:
        count = f"papers unavailable ({exc})"
    parts = [f"knowledge base [bold]{escape(repr(kb))}[/bold]", escape(count)]
    if mode:
        parts.append(escape(mode))
    console.print("[bold]paperscope chat[/bold] · " + " · ".join(parts), highlight=False)
    console.print("[dim]Ask a question; follow-ups remember earlier answers. /help for commands.[/dim]")


def _help(console: Console) -> None:
    table = Table(show_header=False, box=None, padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for cmd, what in HELP:
        table.add_row(cmd, what)
    console.print(table)


def _sources(arg: str, runner: Runner, console: Console, answers: list[Answer]) -> None:
    if not answers:
        console.print("[yellow]no answer yet[/yellow]: ask a question first", highlight=False)
        return
    last = answers[-1]
    if not last.sources:
        console.print("[yellow]the last answer has no sources[/yellow]", highlight=False)
        return
    usage = f"usage: /sources N with N from 1 to {len(last.sources)}"
    if not arg.isdigit():
        console.print(f"[yellow]{usage}[/yellow]", highlight=False)
        return
    n = int(arg)
    source = next((s for s in last.sources if s.n == n), None)
    if source is None:
        console.print(f"[yellow]no source {n} in the last answer[/yellow]; {usage}", highlight=False)
        return
    _print_source(source, runner, console, [c for c in last.claims if c.n == n and c.span is not None])


def _print_source(s: Source, runner: Runner, console: Console, claims: Sequence[Claim] = ()) -> None:
    year = f" ({s.year})" if s.year else ""
    console.print(f"[bold]\\[{s.n}] {escape(s.title)}{year}[/bold]", highlight=False)
    console.print(
        f"[dim]section {escape(s.section_title)} ({s.section_category}) · {pages_label(s.pages)} · "
        f"chunks {s.chunk_range[0]}-{s.chunk_range[1]} · cited chunk {s.chunk_index} · {escape(s.citation)}[/dim]",
        highlight=False,
    )
    if ":raptor:" in s.citation:  # a summary node written at ingest: no neighbours to read, its text is all
        console.print("[dim](a summary written at ingest by a language model, over the chunks above)[/dim]")
        console.print(terminal.text(s.text), highlight=False)
        return
    try:
        chunks = runner.store.get_context_window(s.doc_id, s.chunk_index, window_size=SOURCE_WINDOW)
    except (PaperscopeError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        chunks = []
    if not chunks:
        console.print("[dim](the store returned no text; showing the text the answer saw)[/dim]")
        console.print(terminal.text(s.text), highlight=False)
        return
    for c in chunks:
        cited = c.chunk_index == s.chunk_index
        spans = [claim.span for claim in claims if claim.citation == c.citation and claim.span is not None]
        mark = "[bold green]▶ cited[/bold green] " if cited else ""
        quoted = f" [dim]· the answer's sentence{'s' if len(spans) > 1 else ''} underlined[/dim]" if spans else ""
        console.print()
        console.print(
            f"{mark}[cyan]chunk {c.chunk_index}[/cyan] [dim]· {escape(c.section_title)} "
            f"({c.section_category.name}) · p. {c.page_number}[/dim]{quoted}",
            highlight=False,
        )
        console.print(_with_spans(c.text, spans, "bold" if cited else ""), highlight=False)


def _with_spans(text: str, spans: Sequence[tuple[int, int]], style: str) -> Text:
    """A chunk's text with the spans the answer's claims quote underlined (the rest in `style`)."""
    out, pos = Text(), 0
    for start, end in sorted(spans):
        if start < pos:
            continue
        out.append_text(terminal.text(text[pos:start], style))
        out.append_text(terminal.text(text[start:end], f"{style} underline reverse".strip()))
        pos = end
    out.append_text(terminal.text(text[pos:], style))
    return out


def _trace(console: Console, answers: list[Answer]) -> None:
    from .agent.tools import shorten  # here: the agent's tools are slow to import, and a server's chat needs none

    if not answers:
        console.print("[yellow]no answer yet[/yellow]: ask a question first", highlight=False)
        return
    last = answers[-1]
    console.print(escape(_path(last)), highlight=False)
    for line in generated_lines(last.model_dump(include=set(GENERATED_FIELDS))):
        console.print(escape(line), highlight=False)
    for line in _checks(last):
        console.print(escape(line), highlight=False)
    if not last.trace:
        if last.mode == "single-shot":
            console.print("no tool calls (single-shot answer)", highlight=False)
    else:
        table = Table(title=f"trace of {escape(repr(last.query))}", title_justify="left")
        table.add_column("step", justify="right", no_wrap=True)
        table.add_column("turn", justify="right", no_wrap=True)
        table.add_column("tool", no_wrap=True)
        table.add_column("args", overflow="fold")
        table.add_column("s", justify="right", no_wrap=True)
        table.add_column("observation", overflow="fold")
        table.add_column("error", no_wrap=True)
        from .agent.tools import shorten  # the agent's tools (and langgraph) only for a trace that has steps

        for i, step in enumerate(last.trace, start=1):
            args = json.dumps(step.args, ensure_ascii=False, separators=(",", ":"), default=str)
            table.add_row(
                str(i),
                str(step.turn or ""),
                escape(step.tool) + (" [dim](text)[/dim]" if step.from_text else ""),
                escape(args),
                f"{step.seconds:.2f}",
                escape(shorten(step.observation, OBSERVATION_CHARS)),
                "[red]error[/red]" if step.error else "",
            )
        console.print(table)
    if last.timings:
        # Only seconds here; the agent's turns are a count, said above.
        timings = " · ".join(f"{k} {v:.2f} s" for k, v in last.timings.items() if k != "turns")
        console.print(f"[dim]timings: {escape(timings)}[/dim]", highlight=False)
    if last.usage:
        usage = " · ".join(f"{k} {v}" for k, v in last.usage.items())
        console.print(f"[dim]tokens: {escape(usage)}[/dim]", highlight=False)


GENERATED_FIELDS = ("generated_queries", "hyde_queries", "semantic_query", "parsed_filters")


def generated_lines(fields: dict[str, Any]) -> list[str]:
    """What the query transforms generated, a line each (nothing when none ran)."""
    lines = [f"generated query: {q}" for q in fields.get("generated_queries") or []]
    lines += [f"HyDE passage: {p if len(p) <= 300 else p[:299] + '…'}" for p in fields.get("hyde_queries") or []]
    if fields.get("semantic_query"):
        lines.append(f"self-query topic: {fields['semantic_query']}")
    if fields.get("parsed_filters"):
        lines.append(f"self-query filters: {json.dumps(fields['parsed_filters'], ensure_ascii=False)}")
    return lines


def _checks(answer: Answer) -> list[str]:
    """The grounding check and the reflection rounds of an answer, a line each."""
    lines: list[str] = []
    g = answer.grounding
    if g is not None and g.figures:
        missing = f"; not in the sources: {', '.join(g.missing)}" if g.missing else ""
        lines.append(f"grounding: {g.found} of {g.figures} figures found in the sources{missing}")
    if answer.reflection is not None:
        for r in answer.reflection.rounds:
            scores = ", ".join(f"{k} {v:g}" for k, v in r.scores.items())
            kept = " (kept)" if r.round == answer.reflection.kept else ""
            searched = f", searched {r.query!r}" if r.retry != "initial" else ""
            lines.append(f"reflection round {r.round} [{r.retry}{searched}]: {r.score:g} ({scores}){kept}")
        if answer.reflection.stopped:
            lines.append(f"reflection stopped: {answer.reflection.stopped}")
    return lines


def _path(answer: Answer) -> str:
    """One line: which way the answer came, the agent's turns and calls, and the track it took."""
    track = f"Track {answer.track} ({'one paper' if answer.track == 'A' else 'across papers'})"
    calls = len(answer.trace)
    as_text = sum(1 for s in answer.trace if s.from_text)
    written = f", {as_text} written as text" if as_text else ""
    turns = f"{answer.turns} turn{'s' if answer.turns != 1 else ''}, {calls} tool call{'s' if calls != 1 else ''}"
    if answer.mode == "agent":
        return f"agent: {turns}{written} · {track}, decided by the agent"
    routed = f"{track}, routed by the {'LLM router' if answer.route.source == 'llm' else 'rules'}"
    if answer.mode == "fallback":
        why = answer.notes[0] if answer.notes else "the agent gave no usable answer"
        return f"single-shot fallback after the agent ({turns}{written}): {why} · {routed}"
    return f"{how_answered(answer)} · {routed}"


def _papers(runner: Runner, console: Console) -> None:
    try:
        records = [p for p in runner.store.list_papers() if p.ready]
    except PaperscopeError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return
    if not records:
        console.print("the knowledge base holds no papers; add some with `paperscope ingest PATH`", highlight=False)
        return
    table = Table(title=f"{len(records)} papers in {escape(repr(runner.store.kb))}", title_justify="left")
    table.add_column("doc_id", no_wrap=True)
    table.add_column("year", justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    for p in records:
        table.add_row(p.doc_id[:SHORT_ID], str(p.year or ""), escape(p.title))
    console.print(table)
