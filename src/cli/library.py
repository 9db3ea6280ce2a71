"""Commands that build and look after a library: parse, ingest, papers, remove, check."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.tree import Tree

from .. import terminal
from ..backend_logs import quiet_backend_loggers
from ..errors import ConfigError, PaperscopeError
from ..operations import matching_doc_ids
from ..terminal import markup
from .common import (
    NO_STRUCTURE,
    SHORT_ID,
    KbOption,
    OperatorHelp,
    ServerOption,
    app,
    check_doc_id_arg,
    console,
    err_console,
    fail,
    open_kb,
    progress_bars,
    remote_client,
    settings_for,
    warn_damaged,
    write_json,
)
from .running import own_server

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.progress import Progress, TaskID
    from rich.table import Table

    from ..config import Settings
    from ..parser.models import Section
    from ..rag.enrich import Enricher
    from ..rag.ingest import FileResult, IngestReport
    from ..rag.ingest import Status as FileStatus
    from ..rag.library import Gathered


@app.command(cls=OperatorHelp)
def parse(
    # readable=False: click's own check is a usage error (`_readable` says it in one line).
    file: Annotated[Path, typer.Argument(help="A PDF, Markdown or text file.", readable=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the structure and chunks as JSON.")] = False,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy: {chunkers} (default from settings).")] = None,
    title: Annotated[str | None, typer.Option(help="Use this title instead of the detected one.")] = None,
) -> None:
    """Parse a paper and print its structure tree (sections, categories, pages, chunk counts)."""
    from pydantic import ValidationError

    from ..parser.bounded import parse_bounded
    from ..rag.chunking import ChunkOptions, chunk_paper
    from ..rag.embeddings import embedder_for
    from ..rag.ingest import parse_limits
    from ..rag.tokens import local_token_counter
    from ..settings_layers import load_settings

    try:
        _readable(file)
        settings = load_settings(chunking={"strategy": strategy})
        paper = parse_bounded(file, parse_limits(settings), title=title)

        def embed(texts: list[str]) -> list[list[float]]:  # only the semantic chunker calls it: built then
            return embedder_for(settings, cache=False).embed_documents(texts)

        opts = ChunkOptions(**settings.chunking.model_dump(exclude={"strategy"}), embed=embed)
        chunks = [c for c in chunk_paper(paper, local_token_counter(), settings.chunking.strategy, opts)]
    except (PaperscopeError, ValidationError) as exc:
        raise fail(str(exc).replace(file.name, terminal.one_line(file.name))) from None  # a newline in the name
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
        write_json(json.dumps(out, ensure_ascii=False, indent=2))
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
        name = markup(terminal.one_line(file.name))
        console.print(f"[yellow]structure: none found[/yellow] in {name}: {NO_STRUCTURE}", highlight=False)


def _readable(file: Path) -> None:
    """ParseError, one line, for a file that is there but may not be read (itself, or a folder on its way), or is
    no regular file: the parsers would word the first per file type or not at all (PyMuPDF's PermissionError),
    and block for ever reading a named pipe."""
    from ..errors import ParseError

    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: opening a named pipe does not wait
    except FileNotFoundError:
        return  # the parser says so itself
    except OSError as exc:
        raise ParseError(file, f"cannot read: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a folder: the parser says it is no paper
        raise ParseError(file, "not a regular file")


@app.command(cls=OperatorHelp)
def ingest(
    # readable=False: an unreadable file fails alone in the report instead of stopping the batch (click's check).
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files and folders (PDF, Markdown, text), .bib files, arXiv ids (arXiv:2501.10120), DOIs "
            "(doi:10.1145/...) and URLs; with --zotero, the Zotero data directory (default ~/Zotero).",
            show_default=False,
        ),
    ] = None,
    kb: KbOption = None,
    strategy: Annotated[str | None, typer.Option(help="Chunking strategy: {chunkers} (default from settings).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-ingest files that are already stored.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    server: ServerOption = None,
    enrich: Annotated[
        str | None,
        typer.Option(
            "--enrich",
            help="Enrich the index with the chat model: {enrichers} (comma-separated; 'none' for none; default from "
            "settings).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what enrichment would cost (model calls, tokens) and stop.")
    ] = False,
    zotero: Annotated[
        bool,
        typer.Option(
            "--zotero",
            help="Ingest a Zotero library (read-only, safe while Zotero runs) with its metadata; run again to sync: "
            "new and changed items in, trashed and deleted ones out.",
        ),
    ] = False,
) -> None:
    """Parse, chunk, embed and store papers; files already stored are skipped.

    A library's metadata (Zotero, a .bib file, arXiv, a DOI's landing page) wins over what the PDF says. With
    --server the files are uploaded to that `paperscope serve`, which ingests them one at a time.
    """
    from ..rag.check import last_failed
    from ..rag.chunking import chunker
    from ..rag.ingest import IngestInterrupted, discover
    from ..rag.ingest import ingest as run_ingest
    from ..rag.library import gather

    specs = list(paths or [])
    if not specs and not zotero:
        raise fail(ConfigError("name files, folders, .bib files, arXiv ids, DOIs or URLs to ingest, or --zotero"))
    if server:
        from ..sources.remote import remote_kind

        library = [s for s in specs if remote_kind(s) is not None or s.lower().endswith(".bib")]
        if zotero or library:
            what = "--zotero" if zotero else ", ".join(library)
            raise fail(
                ConfigError(
                    f"{what}: libraries, arXiv ids, DOIs and URLs cannot go through --server (it takes files and "
                    "folders): ingest them on the server's machine, without --server"
                )
            )
        if force or dry_run:
            flag = "--force" if force else "--dry-run"
            raise fail(ConfigError(f"{flag} cannot go through --server: the server ingests new bytes only"))
        from .remote_ingest import ingest_remote

        with remote_client(server) as remote:
            uploaded = ingest_remote(remote, [Path(p) for p in specs], kb, strategy, enrich, quiet=as_json)
        if as_json:
            write_json(uploaded.model_dump_json(indent=2))
        else:
            _print_ingest(uploaded, kb or "papers")
        if uploaded.failed:
            raise typer.Exit(code=1)
        return
    settings = settings_for(kb, chunking={"strategy": strategy}, enrichment={"strategies": enrich})
    try:
        chunker(settings.chunking.strategy)
    except PaperscopeError as exc:
        raise fail(exc) from None
    enricher = _enricher(settings)  # a one-line error, before anything is opened, when no model is configured
    if failed_check := last_failed(settings.home, settings.store.kb):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(failed_check["at"]))
        err_console.print(
            "[yellow]warning:[/yellow] the last `paperscope check` of knowledge base "
            f"{markup(repr(settings.store.kb))} ({when}) found {failed_check['problems']} problem(s) it did not "
            "repair; run `paperscope check --repair`",
            soft_wrap=True,
        )
    quiet_backend_loggers()
    bars = progress_bars(quiet=as_json)
    overall = bars.add_task("files", total=None)
    current = bars.add_task("", total=None, visible=False)
    stage_of = {"": ""}

    def on_progress(path: Path, stage: str, done: int, total: int) -> None:
        if stage == "done":
            bars.advance(overall)
            bars.update(current, visible=False)
            return
        what = "enriching (model calls)" if stage == "enriching" else stage
        label = f"  {markup(terminal.one_line(path.name))}: {what}"
        if stage != stage_of[""]:  # a new stage starts its own clock, so the time left is its own
            stage_of[""] = stage
            bars.reset(current)
        bars.update(current, description=label, completed=done, total=total or None, visible=True)

    try:
        sources = gather(specs, settings, zotero=zotero)
        files = sources.paths + [i.pdf for i in sources.items if i.pdf is not None]
        if enricher is None:
            with bars:
                bars.update(overall, total=len(discover(files).files))
                report: IngestReport = run_ingest(
                    sources.paths, settings, force=force, progress=on_progress, items=sources.items, sync=sources.sync
                )
        else:
            report = _enriched_ingest(sources, settings, enricher, force, dry_run, as_json, bars, overall, on_progress)
        report.files[:0] = sources.failed
        report.notes[:0] = sources.notes
    except PaperscopeError as exc:
        raise fail(exc) from None
    except IngestInterrupted as stop:
        _say_interrupted(stop.report, stop.current)
        raise typer.Exit(code=130) from None
    if dry_run and enricher is not None:
        if as_json:
            write_json(json.dumps({"cost": report.cost.model_dump() if report.cost else None, "dry_run": True}))
        return
    if as_json:
        write_json(report.model_dump_json(indent=2))
    else:
        _print_ingest(report, settings.store.kb)
    if report.failed:
        raise typer.Exit(code=1)


def _enricher(settings: Settings) -> Enricher | None:
    """The enricher the settings ask for, with the bounded chat model; a one-line error without a model."""
    from ..rag.enrich import enricher_for

    try:
        return enricher_for(settings)
    except PaperscopeError as exc:
        raise fail(exc) from None


def _enriched_ingest(
    sources: Gathered,
    settings: Settings,
    enricher: Enricher,
    force: bool,
    dry_run: bool,
    as_json: bool,
    bars: Progress,
    overall: TaskID,
    on_progress: Callable[[Path, str, int, int], None],
) -> IngestReport:
    """Ingest with enrichment: the cost (model calls, tokens) printed before any call, then the ingest unless
    `dry_run`; the store is opened once for both."""
    paths = sources.paths + [i.pdf for i in sources.items if i.pdf is not None]
    from ..rag.embeddings import embedder_for
    from ..rag.ingest import IngestReport, discover, plan_enrichment
    from ..rag.ingest import ingest as run_ingest
    from ..rag.store import PaperStore

    if dry_run:
        # Nothing is made: a knowledge base that does not exist yet has no paper, so every file is new.
        try:
            store: PaperStore | None = PaperStore.open(settings, create=False)
        except PaperscopeError:
            store = None
        embedder = store.embedder if store else embedder_for(settings)
        try:
            with bars:
                task = bars.add_task("  estimating the cost of enrichment", total=None)
                plan = plan_enrichment(paths, settings, enricher, embedder, store, force=force)
                bars.remove_task(task)
        finally:
            if store is not None:
                store.close()
        _say_cost(plan.cost.line(enricher.strategies) + " (dry run: no model called, nothing stored)")
        return IngestReport(cost=plan.cost)
    with open_kb(settings, create=True) as opened:
        with bars:
            task = bars.add_task("  estimating the cost of enrichment", total=None)
            plan = plan_enrichment(paths, settings, enricher, opened.embedder, opened, force=force)
            bars.remove_task(task)
        _say_cost(plan.cost.line(enricher.strategies))
        with bars:
            bars.update(overall, total=len(discover(paths).files))
            return run_ingest(
                sources.paths,
                settings,
                opened,
                force=force,
                progress=on_progress,
                enricher=enricher,
                plan=plan,
                items=sources.items,
                sync=sources.sync,
            )


def _say_cost(line: str) -> None:
    """The cost of an enrichment, on stderr before any model call (stdout stays the report)."""
    err_console.print(markup(line), soft_wrap=True, highlight=False)


def _print_ingest(report: IngestReport, kb: str) -> None:
    """The ingest table on a terminal that fits it, with each failure's reason on its own line under it.

    Piped, or on a terminal too narrow for the table or reporting no size (0x0, COLUMNS=0): one plain line
    per file, nothing cut to fit a width.
    """
    table = _ingest_table(report, kb)
    if (terminal.reported_columns(console) or 0) >= _least_width(table):
        console.print(table)
        for f in report.failed:
            # Under the table, not in a cell: a reason is shown whole at any width (the terminal wraps it).
            reason = terminal.text(f"  {terminal.one_line(f.error)}")
            console.print(terminal.text("failed", "red") + reason, soft_wrap=True)
    else:
        for f in report.files:
            detail = _detail(f)
            line = f"{f.status:<9}  {Path(f.path).name}  {f.pages} pages  {f.chunks} chunks  {f.seconds:.1f} s"
            line += f"  {detail}" if detail else ""
            console.print(terminal.text(terminal.one_line(line)), soft_wrap=True)
    for f in report.files:
        for warning in f.warnings:
            err_console.print(f"[yellow]warning:[/yellow] {markup(warning)}", soft_wrap=True)
    for left in report.unread:
        why = terminal.text(f"  {terminal.one_line(left.path)}: {terminal.one_line(left.reason)}")
        console.print(terminal.text("skipped", "yellow") + why, soft_wrap=True)
    if report.skipped:
        names = ", ".join(Path(p).name for p in report.skipped)
        console.print(
            f"[dim]skipped {len(report.skipped)} file(s) that are not papers: {markup(names)} "
            "(name a file explicitly to ingest it)[/dim]",
            soft_wrap=True,
        )
    for note in report.notes:
        console.print(f"[dim]{markup(terminal.one_line(note))}[/dim]", soft_wrap=True)
    shown: tuple[FileStatus, ...] = ("ingested", "replaced", "repaired", "updated", "removed", "unchanged", "failed")
    occasional = ("repaired", "updated", "removed")
    counts = ", ".join(f"{report.count(s)} {s}" for s in shown if s not in occasional or report.count(s))
    embed_share = f", {report.embed_seconds / report.seconds:.0%} embedding" if report.seconds else ""
    totals = f"{report.pages} pages · {report.chunks} chunks · {report.seconds:.1f} s{embed_share}"
    console.print(f"{counts} · {totals}", soft_wrap=True)
    flat = [Path(f.path).name for f in report.files if not f.structure_found]
    if flat:
        console.print(f"[yellow]structure: none found[/yellow] in {markup(', '.join(flat))}: {NO_STRUCTURE}")


def _ingest_table(report: IngestReport, kb: str) -> Table:
    """file, status, pages, chunks, seconds, title; long file names and titles wrap."""
    from rich.table import Table

    colours = {
        "ingested": "green",
        "replaced": "yellow",
        "repaired": "yellow",
        "updated": "cyan",
        "removed": "yellow",
        "unchanged": "dim",
        "failed": "red",
    }
    table = Table(title=f"ingest into {markup(repr(kb))}", show_lines=False)
    table.add_column("file", overflow="fold", min_width=12)
    table.add_column("status", no_wrap=True, min_width=9)
    for col in ("pages", "chunks", "seconds"):
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    # Both wrap: a column that may not wrap takes its full width and squeezes the others to nothing.
    table.add_column("title", overflow="fold", min_width=12)
    for f in report.files:
        table.add_row(
            terminal.text(Path(f.path).name),
            terminal.text(f.status, colours[f.status]),
            str(f.pages or ""),
            str(f.chunks or ""),
            f"{f.seconds:.1f}",
            terminal.text("" if f.status == "failed" else _detail(f)),
        )
    return table


def _least_width(table: Table) -> int:
    """Columns `table` needs to show every column at its minimum width: each cell's padding and border too."""
    return sum(c.min_width or 1 for c in table.columns) + 3 * len(table.columns) + 1


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
    server: ServerOption = None,
) -> None:
    """List the papers in a knowledge base."""
    from rich.table import Table

    from ..operations import paper_rows

    server = server or own_server()
    if server:
        with remote_client(server) as remote:
            rows = remote.papers(kb)
        name = kb or "papers"
    else:
        from ..rag.lite_files import read_listing, write_listing
        from ..settings_layers import load_settings

        try:
            # Without the knowledge base's own layer (kept in the store): what says where the store is.
            outer = load_settings(store={"kb": kb})
        except PaperscopeError as exc:
            raise fail(exc) from None
        name = outer.store.kb
        # Nothing written since the last listing: no need to load Milvus (see rag/lite_files.py).
        listed = read_listing(outer)
        if listed is not None:
            rows = listed
        else:
            settings = settings_for(kb)
            try:
                with open_kb(settings) as store:
                    records = store.list_papers()
                    stored = warn_damaged(store, records)
                    rows = paper_rows(records, stored)
                    if not stored and not store.chunks_recreated:  # a damaged store is read and warned of each time
                        write_listing(outer, rows)
            except PaperscopeError as exc:
                raise fail(exc) from None
    if as_json:
        write_json(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        console.print(f"knowledge base {markup(repr(name))} holds no papers; add some with `paperscope ingest PATH`")
        return
    table = Table(title=f"{len(rows)} papers in {markup(repr(name))}")
    # A short doc_id (like a short git hash: `remove` takes any unambiguous prefix) leaves room for titles.
    table.add_column("doc_id", no_wrap=True)
    for col in ("year", "pages", "chunks"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    for r in rows:
        title = terminal.text(r["title"])
        planned = r.get("planned_chunks")  # absent from a server of an earlier version
        count = f"{r['n_chunks']} of {planned} chunks stored" if planned is not None else ""
        if r["status"] == "damaged":
            why = f"(damaged: {count or 'not all chunks stored'}; `paperscope check --repair`) "
            title = terminal.text(why, "red") + title
        elif r["status"] == "broken":
            title = terminal.text("(broken: no file holds it; ingest its file again or remove it) ", "red") + title
        elif r["status"] != "ready":
            why = f"({r['status']}: {count + '; ' if count else ''}ingest again to repair) "
            title = terminal.text(why, "red") + title
        table.add_row(r["doc_id"][:SHORT_ID], str(r["year"] or ""), str(r["pages"]), str(r["n_chunks"]), title)
    console.print(table)


@app.command()
def remove(
    doc_id: Annotated[str, typer.Argument(help="A doc_id, or its first characters as `paperscope papers` shows.")],
    kb: KbOption = None,
    server: ServerOption = None,
) -> None:
    """Remove a paper and all its chunks."""
    try:
        check_doc_id_arg(doc_id, "")
    except ConfigError as exc:
        raise fail(exc) from None
    if server:
        with remote_client(server) as remote:
            removed = remote.remove(doc_id, kb)
        console.print(f"removed {markup(repr(removed['title']))} ({removed['doc_id']}): {removed['chunks']} chunks")
        return
    settings = settings_for(kb)
    try:
        with open_kb(settings) as store:
            papers = {p.doc_id: p for p in store.list_papers(brief=True)}  # ready or not: a broken one goes too
            matches = matching_doc_ids(papers, doc_id)
            if not matches:
                raise fail(ConfigError(f"no paper {doc_id} in knowledge base {settings.store.kb!r}"))
            if len(matches) > 1:
                raise fail(ConfigError(f"{doc_id} is ambiguous: {', '.join(matches)}"))
            record = papers[matches[0]]
            n = store.delete_paper(record.doc_id)
    except PaperscopeError as exc:
        raise fail(exc) from None
    console.print(f"removed {markup(repr(record.title))} ({record.doc_id}): {n} chunks")


@app.command()
def check(
    kb: KbOption = None,
    fix: Annotated[bool, typer.Option("--repair", help="Repair what can be repaired.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    server: ServerOption = None,
) -> None:
    """Compare the catalogue with the stored chunks (counts, chunk_index, catalogue vectors, orphans); --repair
    fixes them.

    A damaged paper is ingested again from a file that still holds it, else marked broken; a damaged catalogue
    vector is computed again; chunks whose paper is not in the catalogue are deleted. Exit code 1 while problems
    remain. With --server the check runs in that `paperscope serve`, which holds the store.
    """
    from ..rag.check import CheckReport, check_store, record, repair

    if server:
        with remote_client(server) as remote:
            report = CheckReport.model_validate(remote.check(kb, repair=fix))  # the server records it in its home
    else:
        settings = settings_for(kb)
        try:
            with open_kb(settings) as store:
                report = check_store(store)
                if fix and report.problems:
                    report = repair(store, report, settings)
        except PaperscopeError as exc:
            raise fail(exc) from None
        record(settings.home, report)
    if as_json:
        write_json(report.model_dump_json(indent=2))
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
