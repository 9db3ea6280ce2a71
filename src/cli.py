"""The `paperscope` command."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.tree import Tree

from . import terminal
from .errors import ConfigError, PaperscopeError
from .terminal import markup

if TYPE_CHECKING:
    from rich.progress import Progress

    from .agent.answer import Answer
    from .config import Settings
    from .parser.models import Section
    from .rag.ingest import FileResult, IngestReport
    from .rag.store import PaperStore

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


def _quiet_milvus() -> None:
    """pymilvus and Milvus Lite log tracebacks of failures the store reports as one line itself."""
    from .rag import store  # noqa: F401  (pymilvus configures its loggers when imported)

    for name in ("pymilvus", "pymilvus.milvus_client", "pymilvus.bulk_writer", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {markup(exc)}", soft_wrap=True)
    return typer.Exit(code=1)


def _write_json(data: str) -> None:
    """JSON on stdout, with what JSON leaves raw (C1 controls, bidi) escaped."""
    sys.stdout.write(terminal.json_text(data) + "\n")


def _open(settings: Settings, *, create: bool = False) -> PaperStore:
    """The knowledge base of `settings`; reading commands never create one (create=False)."""
    _quiet_milvus()
    from .rag.store import PaperStore

    try:
        return PaperStore.open(settings, create=create)
    except PaperscopeError as exc:
        raise _fail(exc) from None


@app.command()
def parse(
    file: Annotated[Path, typer.Argument(help="A PDF, Markdown or text file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the structure and chunks as JSON.")] = False,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy (default from settings).")] = None,
    title: Annotated[str | None, typer.Option(help="Use this title instead of the detected one.")] = None,
) -> None:
    """Parse a paper and print its structure tree (sections, categories, pages, chunk counts)."""
    from pydantic import ValidationError

    from .config import load_settings
    from .parser import parse_file
    from .rag.chunking import ChunkOptions, chunk_paper
    from .rag.tokens import local_token_counter

    try:
        settings = load_settings(chunking={"strategy": strategy})
        paper = parse_file(file, title=title)
        opts = ChunkOptions(**settings.chunking.model_dump(exclude={"strategy"}))
        chunks = [c for c in chunk_paper(paper, local_token_counter(), settings.chunking.strategy, opts)]
    except (PaperscopeError, ValidationError) as exc:
        raise _fail(exc) from None
    body = [c for c in chunks if c.kind == "chunk"]
    if as_json:

        def section(s: Section) -> dict[str, Any]:
            return {"title": s.title, "level": s.level, "category": s.category.name, "page": s.page}

        out = {
            "title": paper.title,
            "authors": paper.authors,
            "year": paper.year,
            "pages": paper.pages,
            "structure": "found" if paper.structure_found else "none found",
            # Headings printed in the paper; the parser's own sections (an abstract without a heading,
            # the text of a paper without headings) are listed apart.
            "sections": [section(s) for s in paper.sections if s.printed],
            "supplied_sections": [section(s) for s in paper.sections if not s.printed],
            "tables": [
                {"label": t.label, "caption": t.caption, "page": t.page, "header": t.header, "rows": t.rows}
                for t in paper.tables
            ],
            "chunks": [
                {
                    "chunk_index": c.chunk_index,
                    "section_title": c.section_title,
                    "parent_section": c.parent_section,
                    "section_category": c.section_category.name,
                    "hierarchy_level": c.hierarchy_level,
                    "page_number": c.page_number,
                    "text": c.text,
                }
                for c in body
            ],
        }
        _write_json(json.dumps(out, ensure_ascii=False, indent=2))
        return
    per_section: dict[int, int] = {}
    for c in body:
        per_section[c.metadata["section_id"]] = per_section.get(c.metadata["section_id"], 0) + 1
    meta = f"{paper.year or 'year unknown'} · {paper.pages} pages · {len(body)} chunks"
    authors = markup(", ".join(paper.authors) or "authors unknown")
    tree = Tree(f"[bold]{markup(paper.title)}[/bold]\n[dim]{authors} · {meta}[/dim]")
    nodes: dict[int, Tree] = {}
    for s in paper.sections:
        supplied = "" if s.printed else " [dim](no heading printed)[/dim]"
        label = (
            f"{markup(s.title)}{supplied}  [cyan]{s.category.name}[/cyan] "
            f"[dim]p.{s.page} · {per_section.get(s.id, 0)} chunks[/dim]"
        )
        parent = nodes.get(s.parent_id) if s.parent_id is not None else None
        nodes[s.id] = (parent or tree).add(label)
    console.print(tree)
    if not paper.structure_found:
        console.print(f"[yellow]structure: none found[/yellow] in {markup(file.name)}: {NO_STRUCTURE}", highlight=False)


SHORT_ID = 8  # doc_id characters shown in tables
NO_STRUCTURE = "no headings were found; the text is kept as one section and is still searched"
KbOption = Annotated[str | None, typer.Option("--kb", help="Knowledge base name (default: papers).")]


def _progress(quiet: bool) -> Progress:
    """Progress bars on stderr, only on a terminal (and never under --json)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet or not err_console.is_terminal,
    )


def _settings(kb: str | None, **parts: dict[str, Any]) -> Settings:
    from .config import load_settings

    try:
        return load_settings(store={"kb": kb}, **parts)
    except ConfigError as exc:
        raise _fail(exc) from None


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (PDF, Markdown, text).")],
    kb: KbOption = None,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy (default from settings).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-ingest files that are already stored.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Parse, chunk, embed and store papers; files already stored are skipped."""
    from .rag.check import last_failed
    from .rag.chunking import CHUNKERS
    from .rag.ingest import IngestInterrupted, discover
    from .rag.ingest import ingest as run_ingest

    settings = _settings(kb, chunking={"strategy": strategy})
    if settings.chunking.strategy not in CHUNKERS:
        raise _fail(ConfigError(f"unknown chunking strategy {settings.chunking.strategy!r}; one of {sorted(CHUNKERS)}"))
    if failed_check := last_failed(settings.home, settings.store.kb):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(failed_check["at"]))
        err_console.print(
            "[yellow]warning:[/yellow] the last `paperscope check` of knowledge base "
            f"{markup(repr(settings.store.kb))} ({when}) found {failed_check['problems']} problem(s) it did not "
            "repair; run `paperscope check --repair`",
            soft_wrap=True,
        )
    _quiet_milvus()
    bars = _progress(quiet=as_json)
    overall = bars.add_task("files", total=None)
    current = bars.add_task("", total=None, visible=False)

    def on_progress(path: Path, stage: str, done: int, total: int) -> None:
        if stage == "done":
            bars.advance(overall)
            bars.update(current, visible=False)
            return
        label = f"  {markup(path.name)}: {stage}"
        bars.update(current, description=label, completed=done, total=total or None, visible=True)

    try:
        with bars:
            bars.update(overall, total=len(discover(paths)[0]))
            report: IngestReport = run_ingest(paths, settings, force=force, progress=on_progress)
    except PaperscopeError as exc:
        raise _fail(exc) from None
    except IngestInterrupted as stop:
        _say_interrupted(stop.report, stop.current)
        raise typer.Exit(code=130) from None
    if as_json:
        _write_json(report.model_dump_json(indent=2))
    else:
        _print_ingest(report, settings.store.kb)
    if report.failed:
        raise typer.Exit(code=1)


def _print_ingest(report: IngestReport, kb: str) -> None:
    """The ingest table on a terminal; one plain line per file when piped (nothing cut to fit a width)."""
    from rich.table import Table

    colours = {"ingested": "green", "replaced": "yellow", "unchanged": "dim", "failed": "red"}
    if console.is_terminal:
        table = Table(title=f"ingest into {markup(repr(kb))}", show_lines=False)
        table.add_column("file", no_wrap=True, min_width=12)
        table.add_column("status", no_wrap=True, min_width=9)
        for col in ("pages", "chunks", "seconds"):
            table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
        table.add_column("title / error", overflow="fold" if report.failed else "ellipsis", no_wrap=not report.failed)
        for f in report.files:
            table.add_row(
                terminal.text(Path(f.path).name),
                terminal.text(f.status, colours[f.status]),
                str(f.pages or ""),
                str(f.chunks or ""),
                f"{f.seconds:.1f}",
                terminal.text(_detail(f)),
            )
        console.print(table)
    else:
        for f in report.files:
            detail = _detail(f)
            line = f"{f.status:<9}  {Path(f.path).name}  {f.pages} pages  {f.chunks} chunks  {f.seconds:.1f} s"
            line += f"  {detail}" if detail else ""
            console.print(terminal.text(line), soft_wrap=True)
    for f in report.files:
        for warning in f.warnings:
            err_console.print(f"[yellow]warning:[/yellow] {markup(warning)}", soft_wrap=True)
    if report.skipped:
        names = ", ".join(Path(p).name for p in report.skipped)
        console.print(
            f"[dim]skipped {len(report.skipped)} file(s) that are not papers: {markup(names)} "
            "(name a file explicitly to ingest it)[/dim]",
            soft_wrap=True,
        )
    counts = ", ".join(f"{report.count(s)} {s}" for s in ("ingested", "replaced", "unchanged", "failed"))
    embed_share = f", {report.embed_seconds / report.seconds:.0%} embedding" if report.seconds else ""
    totals = f"{report.pages} pages · {report.chunks} chunks · {report.seconds:.1f} s{embed_share}"
    console.print(f"{counts} · {totals}", soft_wrap=True)
    flat = [Path(f.path).name for f in report.files if not f.structure_found]
    if flat:
        console.print(f"[yellow]structure: none found[/yellow] in {markup(', '.join(flat))}: {NO_STRUCTURE}")


def _detail(f: FileResult) -> str:
    """The title (or the error) of a file in the ingest report, with a note when it has no structure."""
    detail = (f.error or "") if f.status == "failed" else (f.title or "")
    return detail + (" (structure: none found)" if f.status != "failed" and not f.structure_found else "")


def _say_interrupted(report: IngestReport, current: str | None) -> None:
    """What Ctrl-C left: the files done are kept; the one in progress is hidden until the next ingest."""
    done = [f for f in report.files if f.status != "failed"]
    counts = ", ".join(f"{report.count(s)} {s}" for s in ("ingested", "replaced", "unchanged") if report.count(s))
    kept = f"kept the {len(done)} file(s) finished before it ({counts})" if done else "no file was finished"
    unfinished = f"; {Path(current).name} was not finished: nothing of it is searchable" if current is not None else ""
    err_console.print(
        f"[red]interrupted:[/red] {markup(kept + unfinished)}. Run the same `paperscope ingest` again: it skips what "
        "is stored and repairs what was cut short.",
        soft_wrap=True,
    )


@app.command()
def papers(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the papers in a knowledge base."""
    from rich.table import Table

    settings = _settings(kb)
    try:
        with _open(settings) as store:
            records = store.list_papers()
    except PaperscopeError as exc:
        raise _fail(exc) from None
    rows = [
        {
            "doc_id": r.doc_id,
            "title": r.title,
            "year": r.year,
            "pages": r.pages,
            "n_chunks": r.n_chunks,
            "status": r.status,
            "source": r.source,
            "authors": r.authors,
            # What people call it (short title, names it introduces, authors, ids): what paper location matches.
            "aliases": [a.text for a in r.aliases if a.kind not in ("title", "year", "body", "mention")],
        }
        for r in records
    ]
    if as_json:
        _write_json(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        console.print(
            f"knowledge base {markup(repr(settings.store.kb))} holds no papers; add some with `paperscope ingest PATH`"
        )
        return
    table = Table(title=f"{len(rows)} papers in {markup(repr(settings.store.kb))}")
    # A short doc_id (like a short git hash: `remove` takes any unambiguous prefix) leaves room for titles.
    table.add_column("doc_id", no_wrap=True)
    for col in ("year", "pages", "chunks"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    for r in records:
        title = terminal.text(r.title)
        if r.status == "broken":
            title = terminal.text("(broken: no file holds it; ingest its file again or remove it) ", "red") + title
        elif not r.ready:
            title = terminal.text(f"({r.status}: ingest again to repair) ", "red") + title
        table.add_row(r.doc_id[:SHORT_ID], str(r.year or ""), str(r.pages), str(r.n_chunks), title)
    console.print(table)


@app.command()
def remove(
    doc_id: Annotated[str, typer.Argument(help="A doc_id, or its first characters as `paperscope papers` shows.")],
    kb: KbOption = None,
) -> None:
    """Remove a paper and all its chunks."""
    settings = _settings(kb)
    try:
        _check_doc_id_arg(doc_id, "")
    except ConfigError as exc:
        raise _fail(exc) from None
    try:
        with _open(settings) as store:
            papers = {p.doc_id: p for p in store.list_papers(brief=True)}  # ready or not: a broken one goes too
            matches = _matching_doc_ids(papers, doc_id)
            if not matches:
                raise _fail(ConfigError(f"no paper {doc_id} in knowledge base {settings.store.kb!r}"))
            if len(matches) > 1:
                raise _fail(ConfigError(f"{doc_id} is ambiguous: {', '.join(matches)}"))
            record = papers[matches[0]]
            n = store.delete_paper(record.doc_id)
    except PaperscopeError as exc:
        raise _fail(exc) from None
    console.print(f"removed {markup(repr(record.title))} ({record.doc_id}): {n} chunks")


def _check_doc_id_arg(given: str, option: str) -> None:
    """A doc_id or prefix as typed: well formed and long enough, checked before anything is opened."""
    from .rag.filters import validate_doc_id

    try:
        validate_doc_id(given)
    except ValueError as exc:
        raise ConfigError(f"{option}{exc}") from None
    if len(given) < MIN_PREFIX:
        raise ConfigError(
            f"{option}doc_id prefix {given!r} is too short: give at least {MIN_PREFIX} characters "
            "(see `paperscope papers`)"
        )


def _matching_doc_ids(doc_ids: Iterable[str], given: str) -> list[str]:
    """The doc_id equal to `given`, else those it is a prefix of (4+ characters, like a short git hash)."""
    doc_ids = list(doc_ids)
    if given in doc_ids:
        return [given]
    return [d for d in doc_ids if len(given) >= MIN_PREFIX and d.startswith(given)]


def _resolve_doc_ids(store: PaperStore, given: list[str], kb: str) -> list[str]:
    """Full doc_ids for the given doc_ids or unambiguous prefixes (4+ characters)."""
    papers = [p.doc_id for p in store.list_papers(brief=True) if p.ready]
    out = []
    for raw in given:
        _check_doc_id_arg(raw, "--paper: ")
        matches = _matching_doc_ids(papers, raw)
        if len(matches) != 1:
            problem = "matches several papers" if matches else f"is not a paper in knowledge base {kb!r}"
            raise ConfigError(f"--paper {raw} {problem} (see `paperscope papers`)")
        out.append(matches[0])
    return out


@app.command()
def check(
    kb: KbOption = None,
    fix: Annotated[bool, typer.Option("--repair", help="Repair what can be repaired.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Compare the catalogue with the stored chunks (counts, chunk_index, orphans); --repair fixes them.

    A damaged paper is ingested again from a file that still holds it, else marked broken; chunks whose
    paper is not in the catalogue are deleted. Exit code 1 while problems remain.
    """
    from .rag.check import check_store, record, repair

    settings = _settings(kb)
    try:
        with _open(settings) as store:
            report = check_store(store)
            if fix and report.problems:
                report = repair(store, report, settings)
    except PaperscopeError as exc:
        raise _fail(exc) from None
    record(settings.home, report)
    if as_json:
        _write_json(report.model_dump_json(indent=2))
    else:
        summary = f"{report.papers} papers, {report.chunks} chunk rows"
        console.print(f"knowledge base {markup(repr(report.kb))}: {summary}", soft_wrap=True)
        for p in report.problems:
            who = f"{p.doc_id[:SHORT_ID]} {p.title}" if p.title else p.doc_id
            mark = "[green]fixed[/green]" if p.fixed else "[red]problem[/red]"
            done = f" -> {p.repair}" if p.repair else ""
            console.print(f"{mark} {markup(who)}: {markup(p.detail + done)}", soft_wrap=True)
        if not report.problems:
            console.print("[green]no problems[/green]: every paper is whole and every chunk has its paper")
        elif report.remaining and not fix:
            console.print(f"{len(report.remaining)} problem(s); `paperscope check --repair` repairs what it can")
        elif report.remaining:
            console.print(f"{len(report.problems) - len(report.remaining)} fixed, {len(report.remaining)} remain")
        else:
            console.print(f"all {len(report.problems)} problem(s) fixed")
    if report.remaining:
        raise typer.Exit(code=1)


def _check_scope(question: str, paper: list[str] | None, section: list[str] | None) -> None:
    """Refuse a wordless question and bad --paper/--section values before the store or a model is loaded."""
    from .agent.question import check_question
    from .rag.filters import parse_category

    try:
        check_question(question)
        for raw in section or []:
            parse_category(raw)
        for raw in paper or []:
            _check_doc_id_arg(raw, "--paper: ")
    except (ConfigError, ValueError) as exc:
        raise _fail(exc) from None


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    kb: KbOption = None,
    paper: Annotated[
        list[str] | None, typer.Option("--paper", help="Only this paper (doc_id or prefix); repeatable.")
    ] = None,
    section: Annotated[
        list[str] | None, typer.Option("--section", help="Only these section categories, e.g. METHOD; repeatable.")
    ] = None,
    k: Annotated[int | None, typer.Option("--k", min=1, max=50, help="Evidence passages to draw on.")] = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Answer object as JSON.")] = False,
) -> None:
    """Answer a question from the papers, with numbered sources.

    With an LLM configured the agent searches step by step; --no-agent, --paper, --section or --k run the
    single-shot path (explicit scopes are hard filters the agent could not be held to).
    """
    from .agent.searcher import AgenticSearcher

    settings = _settings(kb)
    _check_scope(question, paper, section)
    if no_agent or paper or section or k:
        settings.agent.enable_agentic_rag = False
    if not as_json:
        _say_mode(settings)
    try:
        with _open(settings) as store, AgenticSearcher(store, settings=settings) as searcher:
            if searcher.agentic:
                answer = searcher.run(question)
            else:
                doc_ids = _resolve_doc_ids(searcher.store, paper, settings.store.kb) if paper else None
                answer = searcher.single_shot.answer(question, doc_ids=doc_ids, categories=section, k=k)
    except (PaperscopeError, ValueError) as exc:
        raise _fail(exc) from None
    if answer.llm_error:
        _llm_warning(f"{answer.llm_error}; answered without it")
    if as_json:
        _write_json(answer.model_dump_json(indent=2))
        return
    _print_answer(answer)


def _llm_warning(line: str) -> None:
    """The one line that says the model failed, on stderr (stdout stays the answer or clean JSON)."""
    err_console.print(f"[yellow]warning:[/yellow] {markup(line)}", highlight=False, soft_wrap=True)


def _mode(settings: Settings) -> str:
    if not settings.llm.model:
        return "single-shot, no LLM"
    how = "agent" if settings.agent.enable_agentic_rag else "single-shot"
    return f"{how} with {settings.llm.model}"


def _say_mode(settings: Settings) -> None:
    if not settings.llm.model:
        err_console.print(
            "[dim]No LLM configured (PAPERSCOPE_LLM_MODEL, OPENAI_BASE_URL): answering with extracted sentences.[/dim]"
        )


@app.command()
def chat(
    kb: KbOption = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
) -> None:
    """Talk with your papers: questions with history, streamed answers, /sources, /trace, /papers."""
    from .agent.searcher import AgenticSearcher
    from .chat import chat_loop

    settings = _settings(kb)
    if no_agent:
        settings.agent.enable_agentic_rag = False
    try:
        with _open(settings) as store, AgenticSearcher(store, settings=settings) as searcher:
            _say_mode(settings)
            chat_loop(searcher, console, mode=_mode(settings))
    except PaperscopeError as exc:
        raise _fail(exc) from None


@app.command("eval")
def evaluate(
    file: Annotated[Path, typer.Argument(help="Gold queries: JSONL (one object per line) or YAML.")],
    kb: KbOption = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="Sources scored per query.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Also write a Markdown report here.")] = None,
) -> None:
    """Replay gold queries and report routing, retrieval and answer quality, and latency."""
    from rich.table import Table

    from .agent.searcher import AgenticSearcher
    from .eval.queries import load_queries
    from .eval.report import LABELS, SHORT, fmt, markdown, summary_rows
    from .eval.runner import EXPLANATIONS, METRICS, run_eval

    settings = _settings(kb, retrieval={"k": max(k, 5)})
    if no_agent:
        settings.agent.enable_agentic_rag = False
    try:
        queries = load_queries(file)
    except PaperscopeError as exc:
        raise _fail(exc) from None
    from .agent.llm import BoundedChatOpenAI

    bars = _progress(quiet=as_json)
    try:
        with _open(settings) as store, AgenticSearcher(store, settings=settings) as searcher, bars:
            if isinstance(searcher.chat_model, BoundedChatOpenAI):
                # A batch: once the endpoint is down, the remaining queries are answered without it at once.
                searcher.chat_model.keep_failures = True
            task = bars.add_task("eval", total=len(queries))
            report = run_eval(
                searcher, queries, k=k, file=str(file), mode=_mode(settings), on_result=lambda _: bars.advance(task)
            )
    except PaperscopeError as exc:
        raise _fail(exc) from None
    if out is not None:
        try:
            out.write_text(markdown(report), encoding="utf-8")
        except OSError as exc:
            raise _fail(ConfigError(f"{out}: cannot write the report: {exc.strerror or exc}")) from None
    failed_llm = [r.llm_error for r in report.results if r.llm_error]
    if failed_llm:
        _llm_warning(f"{failed_llm[0]}; {len(failed_llm)} of {len(report.results)} queries were answered without it")
    if as_json:
        _write_json(report.model_dump_json(indent=2))
        return
    table = Table(title=f"eval {markup(file.name)} · {markup(report.mode)} · k={k}")
    table.add_column("set", no_wrap=True)
    table.add_column("n", justify="right")
    for m in METRICS:
        table.add_column(SHORT[m].replace("@k", f"@{k}"), justify="right")
    table.add_column("p50 s", justify="right")
    for label, summary in summary_rows(report):
        table.add_row(
            terminal.text(label),
            str(summary.queries),
            *(fmt(summary.scores[m]) for m in METRICS),
            f"{summary.latency_p50:.2f}",
        )
    _print_table(table)
    for m, text in EXPLANATIONS.items():
        console.print(f"[dim]{markup(SHORT.get(m, m))} = {markup(LABELS.get(m, m))}: {markup(text)}[/dim]")
    errors = [r for r in report.results if r.error]
    for r in errors:
        err_console.print(f"[red]{markup(r.id)}[/red]: {markup(r.error)}", soft_wrap=True)
    if out is not None:
        console.print(f"report written to {markup(out)}")
    if errors:
        raise typer.Exit(code=1)


def _print_table(table: Any) -> None:
    """A table at the terminal's width; piped, at the width it needs (no column squeezed to nothing)."""
    from rich.console import Console
    from rich.measure import Measurement

    if console.is_terminal:
        console.print(table)
        return
    width = Measurement.get(console, console.options.update(width=1000), table).maximum
    Console(file=console.file, width=max(width, console.width), emoji=False, highlight=False).print(table)


@app.command()
def doctor(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Probe the model's tool calls again instead of using the cached answer.")
    ] = False,
) -> None:
    """Check the model endpoint, the embedding model and the Milvus store; exit code 1 when a needed part is broken."""
    from .doctor import run_doctor

    settings = _settings(kb)
    report = run_doctor(settings, refresh=refresh)
    if as_json:
        _write_json(json.dumps({"ok": report.ok, **report.model_dump(mode="json")}, indent=2))
    else:
        colours = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
        width = max(len(c.name) for c in report.checks)
        for check in report.checks:
            # One line per check, never wrapped (grep-able when piped); details carry text from outside
            # (endpoint errors, model and kb names): never markup.
            status = f"[{colours[check.status]}]{check.status:<4}[/]"
            line = f"{status}  {markup(check.name.ljust(width))}  {markup(check.detail)}"
            console.print(line, soft_wrap=True, highlight=False)
        verdict = "everything needed works" if report.ok else "something needed is broken (see fail above)"
        console.print(f"[bold]{verdict}[/bold]", highlight=False)
    if not report.ok:
        raise typer.Exit(code=1)


def _print_answer(answer: Answer) -> None:
    from rich.panel import Panel

    from .chat import how_answered, source_line

    title = f"Track {answer.track} · {answer.track_label} · {how_answered(answer)}"
    body = terminal.answer(answer.answer, extractive=answer.extractive)
    console.print(Panel(body, title=title, title_align="left"))
    for s in answer.sources:
        console.print(source_line(s, chunks=True))
    for note in answer.notes:
        if note not in answer.answer:
            console.print(f"[yellow]note:[/yellow] {markup(note)}")
    console.print(f"[dim]{answer.timings.get('total', 0.0):.2f} s[/dim]")


def main() -> None:
    """Entry point that keeps tracebacks away from users for expected errors."""
    app()


if __name__ == "__main__":
    main()
