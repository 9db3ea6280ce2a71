"""What every command shares: the Typer app, the consoles, settings and store opening, doc_id prefixes.

Every text from a document, a model, a user or an error goes through `terminal` (see terminal.py).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import terminal
from ..backend_logs import quiet_backend_loggers
from ..errors import ConfigError, PaperscopeError
from ..terminal import markup

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..config import Settings
    from ..rag.store import PaperStore

app = typer.Typer(
    help="Ask questions of a pile of research papers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


# Every text from a document, a model, a user or an error goes through `terminal` (see terminal.py).
console = terminal.make_console()


err_console = terminal.make_console(stderr=True)


MIN_PREFIX = 4  # doc_id characters a prefix needs, like a short git hash


class _Warnings(logging.Handler):
    """paperscope's logged warnings as one line each on stderr, e.g. a bypassed embedding cache."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(f"[yellow]warning:[/yellow] {markup(record.getMessage())}", soft_wrap=True)


@app.callback()
def _root() -> None:
    """paperscope: parse papers, store them in Milvus, ask questions."""
    log = logging.getLogger("paperscope")
    if not any(isinstance(h, _Warnings) for h in log.handlers):
        log.addHandler(_Warnings(logging.WARNING))


def fail(exc: Exception | str) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {markup(exc)}", soft_wrap=True)
    return typer.Exit(code=1)


def write_json(data: str) -> None:
    """JSON on stdout, with what JSON leaves raw (C1 controls, bidi) escaped."""
    sys.stdout.write(terminal.json_text(data) + "\n")


def open_kb(settings: Settings, *, create: bool = False, warn: bool = False) -> PaperStore:
    """The knowledge base of `settings`; reading commands never create one (create=False). `warn`: say in one line
    when papers listed as ready are missing chunks (see `warn_damaged`)."""
    quiet_backend_loggers()
    from ..rag.store import PaperStore

    try:
        store = PaperStore.open(settings, create=create)
        if warn:
            warn_damaged(store)
    except PaperscopeError as exc:
        raise fail(exc) from None
    return store


def warn_damaged(store: PaperStore, papers: Iterable[Any] | None = None) -> dict[str, int]:
    """One warning line when papers listed as ready are missing chunks; returns {doc_id: chunks stored} of them."""
    listed = list(papers) if papers is not None else None
    damaged = store.damaged(listed)
    if damaged:
        records = listed if listed is not None else store.list_papers(brief=True)
        names = [repr(p.title) for p in records if p.doc_id in damaged]
        shown = "; ".join(names[:3]) + (" ..." if len(names) > 3 else "")
        lost = "its chunks collection was missing (made again, empty); " if store.chunks_recreated else ""
        err_console.print(
            f"[yellow]warning:[/yellow] knowledge base {markup(repr(store.kb))}: {markup(lost)}{len(damaged)} "
            f"paper(s) listed as ready are missing chunks ({markup(shown)}): run `paperscope check --repair` "
            f"or ingest them again",
            soft_wrap=True,
        )
    return damaged


SHORT_ID = 8  # doc_id characters shown in tables


NO_STRUCTURE = "no headings were found; the text is kept as one section and is still searched"


KbOption = Annotated[str | None, typer.Option("--kb", help="Knowledge base name (default: papers).")]


def progress_bars(quiet: bool) -> Progress:
    """Progress bars on stderr, only on a terminal (and never under --json)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),  # the ETA of a stage with a total (embedding, enrichment's model calls)
        console=err_console,
        transient=True,
        disable=quiet or not err_console.is_terminal,
    )


def settings_for(kb: str | None, *, store_optional: bool = False, **parts: dict[str, Any]) -> Settings:
    """Settings of every layer for knowledge base `kb`: these flags (`parts`) > the kb's own settings > the user
    file > the environment > defaults. `store_optional`: an unreachable store leaves out the kb layer (doctor)."""
    from ..rag.kb_settings import load_kb_layers

    quiet_backend_loggers()
    try:
        return load_kb_layers({"store": {"kb": kb}, **parts}, ignore_store_errors=store_optional).settings
    except PaperscopeError as exc:
        raise fail(exc) from None


def check_doc_id_arg(given: str, option: str) -> None:
    """A doc_id or prefix as typed: well formed and long enough, checked before anything is opened."""
    from ..rag.filters import validate_doc_id

    try:
        validate_doc_id(given)
    except ValueError as exc:
        raise ConfigError(f"{option}{exc}") from None
    if len(given) < MIN_PREFIX:
        raise ConfigError(
            f"{option}doc_id prefix {given!r} is too short: give at least {MIN_PREFIX} characters "
            "(see `paperscope papers`)"
        )


def matching_doc_ids(doc_ids: Iterable[str], given: str) -> list[str]:
    """The doc_id equal to `given`, else those it is a prefix of (4+ characters, like a short git hash)."""
    doc_ids = list(doc_ids)
    if given in doc_ids:
        return [given]
    return [d for d in doc_ids if len(given) >= MIN_PREFIX and d.startswith(given)]


def resolve_doc_ids(store: PaperStore, given: list[str], kb: str) -> list[str]:
    """Full doc_ids for the given doc_ids or unambiguous prefixes (4+ characters)."""
    papers = [p.doc_id for p in store.list_papers(brief=True) if p.ready]
    out = []
    for raw in given:
        check_doc_id_arg(raw, "--paper: ")
        matches = matching_doc_ids(papers, raw)
        if len(matches) != 1:
            problem = "matches several papers" if matches else f"is not a paper in knowledge base {kb!r}"
            raise ConfigError(f"--paper {raw} {problem} (see `paperscope papers`)")
        out.append(matches[0])
    return out


def check_scope(question: str, paper: list[str] | None, section: list[str] | None) -> None:
    """Refuse a wordless question and bad --paper/--section values before the store or a model is loaded."""
    from ..rag.filters import parse_category
    from ..rag.question import check_question

    try:
        check_question(question)
        for raw in section or []:
            parse_category(raw)
        for raw in paper or []:
            check_doc_id_arg(raw, "--paper: ")
    except (ConfigError, ValueError) as exc:
        raise fail(exc) from None


def llm_warning(line: str) -> None:
    """The one line that says the model failed, on stderr (stdout stays the answer or clean JSON)."""
    err_console.print(f"[yellow]warning:[/yellow] {markup(line)}", highlight=False, soft_wrap=True)


def mode_of(settings: Settings) -> str:
    if not settings.llm.model:
        return "single-shot, no LLM"
    how = "agent" if settings.agent.enable_agentic_rag else "single-shot"
    return f"{how} with {settings.llm.model}"


def say_mode(settings: Settings) -> None:
    if not settings.llm.model:
        err_console.print(
            "[dim]No LLM configured (PAPERSCOPE_LLM_MODEL, OPENAI_BASE_URL): answering with extracted sentences.[/dim]"
        )


def print_table(table: Any) -> None:
    """A table at the terminal's width; piped, at the width it needs (no column squeezed to nothing)."""
    from rich.console import Console
    from rich.measure import Measurement

    if console.is_terminal:
        console.print(table)
        return
    width = Measurement.get(console, console.options.update(width=1000), table).maximum
    Console(file=console.file, width=max(width, console.width), emoji=False, highlight=False).print(table)
