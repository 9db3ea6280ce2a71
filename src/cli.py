"""The `paperscope` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.tree import Tree

from .errors import PaperscopeError

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


def main() -> None:
    """Entry point that keeps tracebacks away from users for expected errors."""
    app()


if __name__ == "__main__":
    main()
