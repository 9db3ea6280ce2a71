"""What every command shares: the Typer app, the consoles, settings and store opening, doc_id prefixes.

Every text from a document, a model, a user or an error goes through `terminal` (see terminal.py).
"""

from __future__ import annotations

import logging
import re
import sys
import typing
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import CommandFunctionType

from .. import terminal
from ..backend_logs import quiet_backend_loggers
from ..errors import ConfigError, PaperscopeError, StoreError
from ..terminal import markup

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..config import Settings
    from ..rag.store import PaperStore
    from .remote import Remote

# --- help without Python types ---------------------------------------------------------------------------
# Typer's help shows each parameter's Python type as its metavar (`--kb <str>`, `--json <bool>`, `--paper
# <list[str]>`, `--k <int range>`): noise for a researcher, and a column that narrows every description at 80
# columns. Our parameters show none for flags and arguments (the name says it) and a plain word for a value
# (TEXT, N, NUMBER, PATH, the choices), or the metavar a command gives its option.


class _PlainArgument(TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class _PlainOption(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        if self.metavar is not None:
            return self.metavar
        if self.is_flag or self.count:
            return None
        return value_metavar(self)


def value_metavar(param: Any) -> str:
    """The word help shows for an option's value, from its type: TEXT, N, NUMBER, PATH or its choices."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None:
        return "TEXT"
    if desc.is_choice and desc.choices:
        return "|".join(str(getattr(c, "value", c)) for c in desc.choices)
    if desc.is_path or desc.is_file:
        return "PATH"
    annotation = desc.annotation
    if desc.is_list:  # a repeatable option: the word of one value (its help says "repeatable")
        annotation = next(iter(typing.get_args(annotation)), str)
    return {int: "N", float: "NUMBER"}.get(annotation, "TEXT")


def _plain(params: list[Any]) -> list[Any]:
    """The parameters of a command, shown without types (see above). Typer builds them itself from the function's
    annotations (and click adds --help when asked for), so each is given our class where it is handed out: the
    class only changes how help shows it, nothing of how it parses."""
    for param in params:
        if type(param) is TyperArgument:
            param.__class__ = _PlainArgument
        elif type(param) is TyperOption:
            param.__class__ = _PlainOption
    return params


class PlainCommand(TyperCommand):
    """Every paperscope command: its help without Python types."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))


class PlainGroup(TyperGroup):
    """`paperscope` itself: its help without Python types."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))


class _App(typer.Typer):
    """A Typer app whose commands are PlainCommand unless they name their own class (a subclass of it)."""

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or PlainCommand, **kwargs)


app = _App(
    cls=PlainGroup,
    help="Ask questions of a pile of research papers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


# `{retrievers}` in an option's help: the registered operators of that kind, filled in when the help is shown.
_LISTED = re.compile(r"\{(chunker|retriever|reranker|transform|enricher)s\}")


class OperatorHelp(PlainCommand):
    """A command whose options' help lists operators from the registry (`help="... {retrievers}."`).

    Filled in only when the help is shown: listing operators imports their modules and the plugins, which the
    command itself may never need (`paperscope --help` and `papers` start without them).
    """

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from rich.markup import escape

        from ..rag import registry

        for param in self.params:  # typer's own click (typer._click): its options have `help`, arguments too
            text = getattr(param, "help", None)
            if isinstance(text, str) and _LISTED.search(text):
                param.help = _LISTED.sub(lambda m: escape(registry.forms(m.group(1))), text)  # type: ignore[attr-defined,arg-type]
        super().format_help(ctx, formatter)


# Every text from a document, a model, a user or an error goes through `terminal` (see terminal.py).
console = terminal.make_console()


err_console = terminal.make_console(stderr=True)


class _Warnings(logging.Handler):
    """paperscope's logged warnings as one line each on stderr, e.g. a bypassed embedding cache."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(f"[yellow]warning:[/yellow] {markup(record.getMessage())}", soft_wrap=True)


@app.callback()
def _root(ctx: typer.Context) -> None:
    """paperscope: parse papers, store them in Milvus, ask questions."""
    log = logging.getLogger("paperscope")
    if not any(isinstance(h, _Warnings) for h in log.handlers):
        log.addHandler(_Warnings(logging.WARNING))
    ctx.call_on_close(_release_warm)  # a Lite server kept for a store the command never opened stops with it


def _release_warm() -> None:
    # Only when the store package was imported at all: importing it here would cost pymilvus' import.
    connection = sys.modules.get(__name__.rsplit(".", 2)[0] + ".rag.store.connection")
    if connection is not None:
        connection.release_warm()


def fail(exc: Exception | str) -> typer.Exit:
    """Say what went wrong in one line on stderr; the Exit to raise (code 1).

    A store locked by another process that is this home's `paperscope serve` is said as such, with how to use it.
    """
    if isinstance(exc, StoreError) and "another process" in str(exc):
        from .running import server_hint

        exc = server_hint() or exc
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


KbOption = Annotated[str | None, typer.Option("--kb", metavar="NAME", help="Knowledge base name (default: papers).")]
CollectionOption = Annotated[
    str | None,
    typer.Option(
        "--collection",
        metavar="NAME",
        help="Only the papers filed in this library collection (and those below it).",
    ),
]


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
        # Commands open the store right after: the Milvus Lite server started to read the kb's settings serves it.
        layered = load_kb_layers({"store": {"kb": kb}, **parts}, ignore_store_errors=store_optional, keep_warm=True)
        return layered.settings
    except PaperscopeError as exc:
        raise fail(exc) from None


def check_doc_id_arg(given: str, option: str) -> None:
    """A doc_id or prefix as typed: well formed and long enough, checked before anything is opened."""
    from ..operations import check_doc_id

    check_doc_id(given, option)


def check_scope(question: str, paper: list[str] | None, section: list[str] | None) -> None:
    """Refuse a wordless question and bad --paper/--section values before the store or a model is loaded."""
    from ..rag.question import check_question

    try:
        check_question(question)
        if section:
            from ..rag.filters import parse_category

            for raw in section:
                parse_category(raw)
        for raw in paper or []:
            check_doc_id_arg(raw, "--paper: ")
    except (ConfigError, ValueError) as exc:
        raise fail(exc) from None


TransformOption = Annotated[
    str | None,
    typer.Option(
        "--transform",
        metavar="NAMES",
        help="Query transforms with the chat model, comma-separated: {transforms}.",
    ),
]


def transform_names(given: str | None) -> list[str] | None:
    """`--transform a,b` as the names it lists (None when not given)."""
    if given is None:
        return None
    return [name.strip() for name in given.split(",") if name.strip()]


def check_model_needs(settings: Settings) -> None:
    """Query transforms and reflection call the chat model: without one configured, one line and stop."""
    wants = []
    if names := settings.retrieval.transforms:
        wants.append(f"query transform{'s' if len(names) > 1 else ''} {', '.join(names)}")
    if settings.reflection.enabled:
        wants.append("reflection")
    if wants and not settings.llm.model:
        raise fail(
            f"{' and '.join(wants)} need{'s' if len(wants) == 1 and len(names) <= 1 else ''} a chat model: set "
            "PAPERSCOPE_LLM_MODEL (and OPENAI_BASE_URL for a local server)"
        )


def llm_warning(line: str) -> None:
    """The one line that says the model failed, on stderr (stdout stays the answer or clean JSON)."""
    err_console.print(f"[yellow]warning:[/yellow] {markup(line)}", highlight=False, soft_wrap=True)


#: Under the data directory: there since `ask` said no chat model is configured, until a model is configured again.
NO_MODEL_NOTED = "no-llm-noticed"
NO_MODEL = "No LLM configured (PAPERSCOPE_LLM_MODEL, OPENAI_BASE_URL): answering with extracted sentences."


def say_mode(settings: Settings, *, once_per_home: bool = False, quiet: bool = False) -> None:
    """Say on stderr that answers are extracted sentences, when no chat model is configured.

    A chat says it once, at its start (then every question of the session is answered so). A one-shot `ask` says it
    once per data directory: a researcher who works without a model knows it after the first answer (each answer's
    title says "extracted" too) and reads the same line on every question as noise. Once a model has been
    configured for this home, the first `ask` without one says it again: a new shell that lost
    PAPERSCOPE_LLM_MODEL is then not mistaken for the model answering. `quiet` (--json): nothing said, the
    configured model still noted.
    """
    marker = Path(settings.home).expanduser() / NO_MODEL_NOTED
    if settings.llm.model:
        if once_per_home:
            with suppress(OSError):  # best effort: a read-only home says it every time instead
                marker.unlink(missing_ok=True)
        return
    if quiet:
        return
    if once_per_home:
        if marker.exists():
            return
        if marker.parent.is_dir():  # never creates the data directory: a home that does not exist fails anyway
            with suppress(OSError):
                marker.touch()
    err_console.print(f"[dim]{NO_MODEL}[/dim]", highlight=False)


def print_table(table: Any) -> None:
    """A table at the terminal's width; piped, at the width it needs (no column squeezed to nothing)."""
    from rich.console import Console
    from rich.measure import Measurement

    if console.is_terminal:
        console.print(table)
        return
    width = Measurement.get(console, console.options.update(width=1000), table).maximum
    Console(file=console.file, width=max(width, console.width), emoji=False, highlight=False).print(table)


ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        metavar="URL",
        envvar="PAPERSCOPE_SERVER",
        help="Ask this running `paperscope serve` (URL) instead of opening the store; or PAPERSCOPE_SERVER. ask, "
        "retrieve, papers and chat use the server running on this data directory by themselves.",
    ),
]


@contextmanager
def remote_client(url: str) -> Iterator[Remote]:
    """A client of the server at `url`; its errors (unreachable, an error answer) end the command in one line."""
    from .remote import Remote

    try:
        with Remote(url) as remote:
            yield remote
    except PaperscopeError as exc:
        raise fail(exc) from None


M = TypeVar("M", bound=BaseModel)


def build(model: type[M], **fields: Any) -> M:
    """A request model of these options (None = not given), or the command ends with one line naming the field."""
    from pydantic import ValidationError

    from ..operations import validation_message

    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise fail(validation_message(exc.errors())) from None
