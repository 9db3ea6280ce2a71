"""Commands that ask: ask, retrieve, chat, eval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import terminal
from ..errors import ConfigError, PaperscopeError
from ..terminal import markup
from .common import (
    CollectionOption,
    KbOption,
    OperatorHelp,
    ServerOption,
    TransformOption,
    app,
    build,
    check_model_needs,
    check_scope,
    console,
    err_console,
    fail,
    llm_warning,
    open_kb,
    print_table,
    progress_bars,
    remote_client,
    say_mode,
    settings_for,
    transform_names,
    write_json,
)
from .running import own_server

if TYPE_CHECKING:
    from ..answer.model import Answer


@app.command(cls=OperatorHelp)
def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    kb: KbOption = None,
    paper: Annotated[
        list[str] | None,
        typer.Option("--paper", metavar="DOC_ID", help="Only this paper (doc_id or prefix); repeatable."),
    ] = None,
    section: Annotated[
        list[str] | None,
        typer.Option("--section", metavar="CATEGORY", help="Only these section categories, e.g. METHOD; repeatable."),
    ] = None,
    collection: CollectionOption = None,
    k: Annotated[int | None, typer.Option("--k", min=1, max=50, help="Evidence passages to draw on.")] = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
    transform: TransformOption = None,
    reflect: Annotated[
        bool, typer.Option("--reflect", help="Score the answer with the model and retry below reflection.min_score.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Answer object as JSON.")] = False,
    server: ServerOption = None,
    output: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="text (the answer and its sources), markdown (the answer citing papers, with a reference list) or "
            "bibtex (the entries of the papers it cites).",
        ),
    ] = "text",
) -> None:
    """Answer a question from the papers, with numbered sources.

    With an LLM configured the agent searches step by step.
    --no-agent, --paper, --collection, --section or --k run the single-shot path (hard filters the agent ignores).
    """
    from ..operations import AskRequest, settings_request
    from ..operations import answer as run_answer

    if output not in ("text", "markdown", "bibtex"):
        raise fail(ConfigError(f"--format {output!r}: expected text, markdown or bibtex"))
    server = server or own_server()  # this home's running server holds the store and the loaded model
    # Through a server, the server checks the options (and nothing slow to import is loaded here).
    check_scope(question, paper if not server else None, section if not server else None)
    options = {
        "kb": kb, "paper": paper, "section": section, "collection": collection, "k": k, "no_agent": no_agent,
        "transform": transform_names(transform), "reflect": reflect or None,
    }  # fmt: skip
    if server:
        with remote_client(server) as remote:
            answer = remote.ask({"query": question, **options, "no_agent": no_agent or None})
    else:
        request = build(AskRequest, query=question, **options)
        settings = settings_for(kb, **settings_request(request))
        check_model_needs(settings)
        say_mode(settings, once_per_home=True, quiet=as_json)
        try:
            with open_kb(settings, warn=True) as store:
                answer = run_answer(store, settings, request)
        except (PaperscopeError, ValueError) as exc:
            raise fail(exc) from None
    if answer.llm_error:
        llm_warning(f"{answer.llm_error}; answered without it")
    if as_json:
        write_json(answer.model_dump_json(indent=2))
        return
    if output != "text":
        from ..answer.bibliography import as_bibtex, as_markdown

        write_json((as_markdown if output == "markdown" else as_bibtex)(answer))
        return
    _print_answer(answer)


@app.command(cls=OperatorHelp)
def retrieve(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    kb: KbOption = None,
    paper: Annotated[
        list[str] | None,
        typer.Option("--paper", metavar="DOC_ID", help="Only this paper (doc_id or prefix); repeatable."),
    ] = None,
    section: Annotated[
        list[str] | None,
        typer.Option("--section", metavar="CATEGORY", help="Only these section categories, e.g. METHOD; repeatable."),
    ] = None,
    collection: CollectionOption = None,
    retriever: Annotated[str | None, typer.Option("--retriever", help="Retriever spec: {retrievers}.")] = None,
    rerank: Annotated[str | None, typer.Option("--rerank", help="Reranker spec: {rerankers}.")] = None,
    k: Annotated[int | None, typer.Option("--k", min=1, max=50, help="Passages to return.")] = None,
    transform: TransformOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the retrieval as JSON.")] = False,
    server: ServerOption = None,
) -> None:
    """The ranked evidence for a question, without an answer: what ask would read, with citations and scores.

    Routed as ask routes it (one paper, the field, or none); --paper searches only that paper (several are
    compared), --section only those sections.
    """
    from ..operations import RetrieveRequest, settings_request
    from ..operations import retrieve as run_retrieve

    server = server or own_server()
    check_scope(question, paper if not server else None, section if not server else None)
    options = {
        "kb": kb, "paper": paper, "section": section, "collection": collection, "retriever": retriever,
        "rerank": rerank, "k": k,
        "transform": transform_names(transform),
    }  # fmt: skip
    if server:
        with remote_client(server) as remote:
            found = remote.retrieve({"query": question, **options})
    else:
        request = build(RetrieveRequest, query=question, **options)
        settings = settings_for(kb, **settings_request(request))
        check_model_needs(settings)
        try:
            with open_kb(settings, warn=True) as store:
                found = run_retrieve(store, settings, request).response()
        except (PaperscopeError, ValueError) as exc:
            raise fail(exc) from None
    if as_json:
        write_json(json.dumps(found, ensure_ascii=False, indent=2))
        return
    _print_retrieval(found)


def _print_retrieval(found: dict[str, Any]) -> None:
    """The retrieve JSON (local or from a server) as the terminal shows it."""
    from ..chat import pages_label

    hits = found.get("hits", [])
    retriever = (found.get("models") or {}).get("retriever") or "-"
    console.print(f"[bold]Track {markup(found.get('track', '?'))}[/bold] · {len(hits)} passages · {markup(retriever)}")
    for n, hit in enumerate(hits, start=1):
        score = f"{hit['score']:.3f}" if hit.get("score") is not None else "-"
        pages = pages_label((hit["page"], hit["page_end"]))
        where = f"{hit['section_title']} ({hit['section_category']}), {pages}"
        console.print(
            terminal.text(f"[{n}] {hit['citation']}  score {score}  {hit['title']} · {where}", "bold"), soft_wrap=True
        )
        flat = " ".join(str(hit["text"]).split())
        console.print(terminal.text(flat if len(flat) <= 400 else flat[:399] + "…"), soft_wrap=True)
    from ..chat import generated_lines

    for line in generated_lines(found):
        console.print(f"[dim]{markup(line)}[/dim]", soft_wrap=True)
    for note in found.get("notes", []):
        console.print(f"[yellow]note:[/yellow] {markup(note)}", soft_wrap=True)


@app.command(cls=OperatorHelp)
def chat(
    kb: KbOption = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
    server: ServerOption = None,
    transform: TransformOption = None,
    reflect: Annotated[
        bool, typer.Option("--reflect", help="Score each answer with the model and retry below reflection.min_score.")
    ] = False,
    collection: CollectionOption = None,
) -> None:
    """Talk with your papers: questions with history, streamed answers, /sources, /trace, /papers.

    --collection keeps every answer to the papers of one library collection (answered single-shot)."""
    from ..chat import chat_loop

    server = server or own_server()
    if server:
        from .remote import RemoteRunner

        options = {"transform": transform_names(transform), "reflect": reflect or None, "collection": collection}
        with remote_client(server) as remote:
            try:
                chat_loop(RemoteRunner(remote, kb, no_agent, options), console, mode=f"via {server}")
            except PaperscopeError as exc:
                raise fail(exc) from None
        return
    from ..operations import Asking

    settings = settings_for(
        kb,
        retrieval={"transforms": transform_names(transform)},
        reflection={"enabled": reflect or None},
        agent={"enable_agentic_rag": False if no_agent else None},
    )
    check_model_needs(settings)
    try:
        with open_kb(settings, warn=True) as store:
            say_mode(settings)
            asking = Asking(store, settings, collection=collection)
            chat_loop(asking, console, mode=asking.mode)
    except PaperscopeError as exc:
        raise fail(exc) from None


@app.command("eval")
def evaluate(
    file: Annotated[Path, typer.Argument(help="Gold queries: JSONL (one object per line) or YAML.")],
    kb: KbOption = None,
    no_agent: Annotated[
        bool, typer.Option("--no-agent", help="Single-shot retrieval even when an LLM is set.")
    ] = False,
    k: Annotated[
        int | None, typer.Option("--k", min=1, max=50, help="Sources scored per query (default: retrieval.k, 5).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Also write a Markdown report here.")] = None,
) -> None:
    """Replay gold queries and report routing, retrieval and answer quality, and latency."""
    from rich.table import Table

    from ..eval.queries import load_queries
    from ..eval.report import LABELS, SHORT, fmt, markdown, summary_rows
    from ..eval.runner import EXPLANATIONS, METRICS, run_eval

    settings = settings_for(
        kb, retrieval={"k": max(k, 5) if k else None}, agent={"enable_agentic_rag": False if no_agent else None}
    )
    k = k or settings.retrieval.k
    try:
        queries = load_queries(file)
    except PaperscopeError as exc:
        raise fail(exc) from None
    from ..llm.bounded import BoundedChatOpenAI
    from ..operations import Asking

    bars = progress_bars(quiet=as_json)
    try:
        with open_kb(settings, warn=True) as store, bars:
            asking = Asking(store, settings)
            if isinstance(asking.chat_model, BoundedChatOpenAI):
                # A batch: once the endpoint is down, the remaining queries are answered without it at once.
                asking.chat_model.keep_failures = True
            task = bars.add_task("eval", total=len(queries))
            report = run_eval(
                asking, queries, k=k, file=str(file), mode=asking.mode, on_result=lambda _: bars.advance(task)
            )
    except PaperscopeError as exc:
        raise fail(exc) from None
    if out is not None:
        try:
            out.write_text(markdown(report), encoding="utf-8")
        except OSError as exc:
            raise fail(ConfigError(f"{out}: cannot write the report: {exc.strerror or exc}")) from None
    failed_llm = [r.llm_error for r in report.results if r.llm_error]
    if failed_llm:
        llm_warning(f"{failed_llm[0]}; {len(failed_llm)} of {len(report.results)} queries were answered without it")
    if as_json:
        write_json(report.model_dump_json(indent=2))
        return
    table = Table(title=f"eval {markup(terminal.one_line(file.name))} · {markup(report.mode)} · k={k}")
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
    print_table(table)
    for m, text in EXPLANATIONS.items():
        console.print(f"[dim]{markup(SHORT.get(m, m))} = {markup(LABELS.get(m, m))}: {markup(text)}[/dim]")
    errors = [r for r in report.results if r.error]
    for r in errors:
        err_console.print(f"[red]{markup(r.id)}[/red]: {markup(r.error)}", soft_wrap=True)
    if out is not None:
        console.print(f"report written to {markup(terminal.one_line(out))}")
    if errors:
        raise typer.Exit(code=1)


def _print_answer(answer: Answer) -> None:
    from rich.panel import Panel

    from ..chat import LEGEND, how_answered, source_row, with_verdicts

    title = f"Track {answer.track} · {answer.track_label} · {how_answered(answer)}"
    console.print(Panel(with_verdicts(answer), title=title, title_align="left"))
    if answer.claims:
        console.print(f"[dim]{LEGEND}[/dim]", highlight=False)
    for s in answer.sources:
        console.print(source_row(s, chunks=True))
    for note in answer.notes:
        if note not in answer.answer:
            console.print(f"[yellow]note:[/yellow] {markup(note)}")
    console.print(f"[dim]{answer.timings.get('total', 0.0):.2f} s[/dim]")
