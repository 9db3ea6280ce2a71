"""`refs` and `citedby`: references inside the library, a paper's reference list and the papers that cite it."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from .. import terminal
from ..errors import PaperscopeError
from ..terminal import markup
from .common import (
    SHORT_ID,
    KbOption,
    ServerOption,
    app,
    console,
    fail,
    open_kb,
    remote_client,
    settings_for,
    write_json,
)

PaperArg = Annotated[
    str,
    typer.Argument(help='A doc_id (or its first characters), or the paper by name: "SPECTER", "Cohan et al.", a DOI.'),
]


def _rows(kind: str, given: str, kb: str | None, server: str | None) -> dict[str, Any]:
    """{"paper": {doc_id, title}, kind: [...]} from this process's store or a server's."""
    if server:
        with remote_client(server) as remote:
            found: dict[str, Any] = remote.citing(kind, given, kb)
        return found
    from ..rag.citing import citing_listing

    settings = settings_for(kb)
    try:
        with open_kb(settings) as store:
            return citing_listing(store, given, kind)
    except PaperscopeError as exc:
        raise fail(exc) from None


@app.command()
def refs(
    paper: PaperArg,
    kb: KbOption = None,
    held: Annotated[bool, typer.Option("--held", help="Only the references the library holds.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    server: ServerOption = None,
) -> None:
    """A paper's reference list, the entries the library holds marked with their doc_id."""
    found = _rows("references", paper, kb, server)
    entries = [r for r in found["references"] if r["held"] or not held]
    if as_json:
        write_json(json.dumps({**found, "references": entries}, ensure_ascii=False, indent=2))
        return
    title = markup(terminal.one_line(found["paper"]["title"]))
    holds = sum(1 for r in found["references"] if r["held"])
    console.print(f"[bold]{title}[/bold]: {len(found['references'])} references, {holds} in the library")
    for r in entries:
        mark = f"[green]held {r['held'][:SHORT_ID]}[/green] " if r["held"] else ""
        label = r["label"] or f"{r['n']}."
        console.print(f"{markup(label)} {mark}{markup(terminal.one_line(r['text']))}", soft_wrap=True)


@app.command()
def citedby(
    paper: PaperArg,
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    server: ServerOption = None,
) -> None:
    """The papers of the library that cite a paper, with the entry of their reference list that does."""
    found = _rows("cited_by", paper, kb, server)
    if as_json:
        write_json(json.dumps(found, ensure_ascii=False, indent=2))
        return
    title = markup(terminal.one_line(found["paper"]["title"]))
    console.print(f"[bold]{title}[/bold]: cited by {len(found['cited_by'])} paper(s) of the library")
    for c in found["cited_by"]:
        console.print(
            f"{c['doc_id'][:SHORT_ID]}  {c['year'] or ''}  {markup(terminal.one_line(c['title']))}", soft_wrap=True
        )
