"""The `paperscope` command."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from .errors import ConfigError, PaperscopeError

if TYPE_CHECKING:
    from rich.progress import Progress

    from .agent.answer import Answer
    from .config import Settings
    from .rag.store import PaperStore

app = typer.Typer(
    help="Ask questions of a pile of research papers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)


@app.callback()
def _root() -> None:
    """paperscope: parse papers, store them in Milvus, ask questions."""


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
    return typer.Exit(code=1)


@app.command()
def parse(
    file: Annotated[Path, typer.Argument(help="A PDF, Markdown or text file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the structure and chunks as JSON.")] = False,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy (default from settings).")] = None,
    title: Annotated[str | None, typer.Option(help="Use this title instead of the detected one.")] = None,
) -> None:
    """Parse a paper and print its structure tree (sections, categories, pages, chunk counts)."""
    from .config import load_settings
    from .parser import parse_file
    from .rag.chunking import ChunkOptions, chunk_paper
    from .rag.tokens import local_token_counter

    settings = load_settings(chunking={"strategy": strategy})
    try:
        paper = parse_file(file, title=title)
        opts = ChunkOptions(**settings.chunking.model_dump(exclude={"strategy"}))
        chunks = [c for c in chunk_paper(paper, local_token_counter(), settings.chunking.strategy, opts)]
    except PaperscopeError as exc:
        raise _fail(exc) from None
    body = [c for c in chunks if c.kind == "chunk"]
    if as_json:
        out = {
            "title": paper.title,
            "year": paper.year,
            "pages": paper.pages,
            "sections": [
                {"title": s.title, "level": s.level, "category": s.category.name, "page": s.page}
                for s in paper.sections
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
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        return
    per_section: dict[int, int] = {}
    for c in body:
        per_section[c.metadata["section_id"]] = per_section.get(c.metadata["section_id"], 0) + 1
    meta = f"{paper.year or 'year unknown'} · {paper.pages} pages · {len(body)} chunks"
    tree = Tree(f"[bold]{paper.title}[/bold]\n[dim]{', '.join(paper.authors) or 'authors unknown'} · {meta}[/dim]")
    nodes: dict[int, Tree] = {}
    for s in paper.sections:
        label = f"{s.title}  [cyan]{s.category.name}[/cyan] [dim]p.{s.page} · {per_section.get(s.id, 0)} chunks[/dim]"
        parent = nodes.get(s.parent_id) if s.parent_id is not None else None
        nodes[s.id] = (parent or tree).add(label)
    console.print(tree)


SHORT_ID = 8  # doc_id characters shown in tables
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
    from pydantic import ValidationError

    from .config import load_settings

    try:
        return load_settings(store={"kb": kb}, **parts)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _fail(ConfigError(f"invalid setting {where}: {first['msg']}")) from None


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (PDF, Markdown, text).")],
    kb: KbOption = None,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy (default from settings).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-ingest files that are already stored.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Parse, chunk, embed and store papers; files already stored are skipped."""
    from rich.table import Table

    from .rag.chunking import CHUNKERS
    from .rag.ingest import IngestReport, discover
    from .rag.ingest import ingest as run_ingest

    settings = _settings(kb, chunking={"strategy": strategy})
    if settings.chunking.strategy not in CHUNKERS:
        raise _fail(ConfigError(f"unknown chunking strategy {settings.chunking.strategy!r}; one of {sorted(CHUNKERS)}"))
    bars = _progress(quiet=as_json)
    overall = bars.add_task("files", total=None)
    current = bars.add_task("", total=None, visible=False)

    def on_progress(path: Path, stage: str, done: int, total: int) -> None:
        if stage == "done":
            bars.advance(overall)
            bars.update(current, visible=False)
            return
        label = f"  {path.name}: {stage}"
        bars.update(current, description=label, completed=done, total=total or None, visible=True)

    try:
        with bars:
            bars.update(overall, total=len(discover(paths)[0]))
            report: IngestReport = run_ingest(paths, settings, force=force, progress=on_progress)
    except PaperscopeError as exc:
        raise _fail(exc) from None
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        table = Table(title=f"ingest into {settings.store.kb!r}", show_lines=False)
        table.add_column("file", no_wrap=True, min_width=12)
        table.add_column("status", no_wrap=True, min_width=9)
        for col in ("pages", "chunks", "seconds"):
            table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
        table.add_column("title / error", overflow="fold" if report.failed else "ellipsis", no_wrap=not report.failed)
        colours = {"ingested": "green", "replaced": "yellow", "unchanged": "dim", "failed": "red"}
        for f in report.files:
            detail = f.error if f.status == "failed" else (f.title or "")
            table.add_row(
                Path(f.path).name,
                f"[{colours[f.status]}]{f.status}[/]",
                str(f.pages or ""),
                str(f.chunks or ""),
                f"{f.seconds:.1f}",
                detail,
            )
        console.print(table)
        counts = ", ".join(f"{report.count(s)} {s}" for s in ("ingested", "replaced", "unchanged", "failed"))
        embed_share = f", {report.embed_seconds / report.seconds:.0%} embedding" if report.seconds else ""
        console.print(
            f"{counts} · {report.pages} pages · {report.chunks} chunks · {report.seconds:.1f} s{embed_share}",
            highlight=False,
        )
    if report.failed:
        raise typer.Exit(code=1)


@app.command()
def papers(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the papers in a knowledge base."""
    from rich.table import Table

    from .rag.store import PaperStore

    settings = _settings(kb)
    try:
        with PaperStore.open(settings) as store:
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
        }
        for r in records
    ]
    if as_json:
        sys.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    if not rows:
        console.print(f"knowledge base {settings.store.kb!r} holds no papers; add some with `paperscope ingest PATH`")
        return
    table = Table(title=f"{len(rows)} papers in {settings.store.kb!r}")
    # A short doc_id (like a short git hash: `remove` takes any unambiguous prefix) leaves room for titles.
    table.add_column("doc_id", no_wrap=True)
    for col in ("year", "pages", "chunks"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    for r in rows:
        title = str(r["title"])
        if r["status"] != "ready":
            title = f"[red]({r['status']}: ingest again to repair)[/red] {title}"
        table.add_row(str(r["doc_id"])[:SHORT_ID], str(r["year"] or ""), str(r["pages"]), str(r["n_chunks"]), title)
    console.print(table)


@app.command()
def remove(
    doc_id: Annotated[str, typer.Argument(help="A doc_id, or its first characters as `paperscope papers` shows.")],
    kb: KbOption = None,
) -> None:
    """Remove a paper and all its chunks."""
    from .rag.filters import validate_doc_id
    from .rag.store import PaperStore

    settings = _settings(kb)
    try:
        validate_doc_id(doc_id)
    except ValueError as exc:
        raise _fail(ConfigError(f"{exc}")) from None
    try:
        with PaperStore.open(settings) as store:
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
    console.print(f"removed {record.title!r} ({record.doc_id}): {n} chunks", highlight=False)


def _matching_doc_ids(doc_ids: Iterable[str], given: str) -> list[str]:
    """The doc_id equal to `given`, else those it is a prefix of (4+ characters, like a short git hash)."""
    doc_ids = list(doc_ids)
    if given in doc_ids:
        return [given]
    return [d for d in doc_ids if len(given) >= 4 and d.startswith(given)]


def _resolve_doc_ids(store: PaperStore, given: list[str], kb: str) -> list[str]:
    """Full doc_ids for the given doc_ids or unambiguous prefixes (4+ characters)."""
    from .rag.filters import validate_doc_id

    papers = [p.doc_id for p in store.list_papers(brief=True) if p.ready]
    out = []
    for raw in given:
        validate_doc_id(raw)
        matches = _matching_doc_ids(papers, raw)
        if len(matches) != 1:
            problem = "matches several papers" if matches else f"is not a paper in knowledge base {kb!r}"
            raise ConfigError(f"--paper {raw} {problem} (see `paperscope papers`)")
        out.append(matches[0])
    return out


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
    if no_agent or paper or section or k:
        settings.agent.enable_agentic_rag = False
    if not as_json:
        _say_mode(settings)
    try:
        with AgenticSearcher(settings) as searcher:
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
        sys.stdout.write(answer.model_dump_json(indent=2) + "\n")
        return
    _print_answer(answer)


def _llm_warning(line: str) -> None:
    """The one line that says the model failed, on stderr (stdout stays the answer or clean JSON)."""
    err_console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)


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
    _say_mode(settings)
    try:
        with AgenticSearcher(settings) as searcher:
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
        with AgenticSearcher(settings) as searcher, bars:
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
        out.write_text(markdown(report), encoding="utf-8")
    failed_llm = [r.llm_error for r in report.results if r.llm_error]
    if failed_llm:
        _llm_warning(f"{failed_llm[0]}; {len(failed_llm)} of {len(report.results)} queries were answered without it")
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    table = Table(title=f"eval {file.name} · {report.mode} · k={k}")
    table.add_column("set", no_wrap=True)
    table.add_column("n", justify="right")
    for m in METRICS:
        table.add_column(SHORT[m].replace("@k", f"@{k}"), justify="right")
    table.add_column("p50 s", justify="right")
    for label, summary in summary_rows(report):
        table.add_row(
            label,
            str(summary.queries),
            *(fmt(summary.scores[m]) for m in METRICS),
            f"{summary.latency_p50:.2f}",
        )
    console.print(table)
    for m, text in EXPLANATIONS.items():
        console.print(f"[dim]{SHORT.get(m, m)} = {LABELS.get(m, m)}: {text}[/dim]", highlight=False)
    errors = [r for r in report.results if r.error]
    for r in errors:
        err_console.print(f"[red]{r.id}[/red]: {r.error}", highlight=False)
    if out is not None:
        console.print(f"report written to {out}")
    if errors:
        raise typer.Exit(code=1)


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
        sys.stdout.write(json.dumps({"ok": report.ok, **report.model_dump(mode="json")}, indent=2) + "\n")
    else:
        colours = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
        width = max(len(c.name) for c in report.checks)
        for check in report.checks:
            # One line per check, never wrapped (grep-able when piped); details carry text from outside
            # (endpoint errors, model and kb names): never markup.
            status = f"[{colours[check.status]}]{check.status:<4}[/]"
            line = f"{status}  {escape(check.name.ljust(width))}  {escape(check.detail)}"
            console.print(line, soft_wrap=True, highlight=False)
        verdict = "everything needed works" if report.ok else "something needed is broken (see fail above)"
        console.print(f"[bold]{verdict}[/bold]", highlight=False)
    if not report.ok:
        raise typer.Exit(code=1)


def _print_answer(answer: Answer) -> None:
    from rich.markdown import Markdown
    from rich.panel import Panel

    from .chat import how_answered, source_line

    track = "one paper" if answer.track == "A" else "across papers"
    title = f"Track {answer.track} · {track} · {how_answered(answer)}"
    console.print(Panel(Markdown(answer.answer), title=title, title_align="left"))
    for s in answer.sources:
        console.print(source_line(s, chunks=True), highlight=False)
    for note in answer.notes:
        if note not in answer.answer:
            console.print(f"[yellow]note:[/yellow] {note}", highlight=False)
    console.print(f"[dim]{answer.timings.get('total', 0.0):.2f} s[/dim]")


def main() -> None:
    """Entry point that keeps tracebacks away from users for expected errors."""
    app()


if __name__ == "__main__":
    main()
