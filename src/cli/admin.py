"""Commands about the setup: doctor, config, operators."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .. import terminal
from ..backend_logs import quiet_backend_loggers
from ..errors import ConfigError, PaperscopeError
from ..terminal import markup
from .common import KbOption, app, console, fail, settings_for, write_json

OPERATOR_INDENT = 6  # columns an operator's description is indented: under its name, which is indented 2


@app.command()
def doctor(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Probe the model's tool calls again instead of using the cached answer.")
    ] = False,
) -> None:
    """Check the model endpoint, the embedding model and the Milvus store; exit code 1 when a needed part is broken."""
    from ..doctor import run_doctor

    settings = settings_for(kb, store_optional=True)
    report = run_doctor(settings, refresh=refresh)
    if as_json:
        write_json(json.dumps({"ok": report.ok, **report.model_dump(mode="json")}, indent=2))
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


@app.command("config")
def config_command(
    kb: KbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"NAME": {"value", "source"}} as JSON.')] = False,
    set_values: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="NAME=VALUE", help="Keep NAME=VALUE as the --kb knowledge base's own; repeatable."
        ),
    ] = None,
    unset: Annotated[
        list[str] | None,
        typer.Option("--unset", metavar="NAME", help="Remove NAME from the --kb knowledge base's own; repeatable."),
    ] = None,
) -> None:
    """Show every setting, its value and where it came from: default, env, user (config.toml), kb, request.

    Each with what it does (its description), wrapped to the terminal's width.

    --set/--unset change the settings kept with one knowledge base (--kb), checked before they are saved.
    """
    from ..rag.kb_settings import parse_assignment, read_kb_settings, save_overrides
    from ..rag.store import knowledge_bases, peek_client
    from ..settings_layers import load_layers, user_file
    from .config_view import changes_lines, settings_view

    quiet_backend_loggers()
    try:
        layered = load_layers({"store": {"kb": kb}})
        changing = bool(set_values or unset)
        if changing and kb is None:
            raise ConfigError(
                "--set and --unset change the settings of one knowledge base: name it with --kb NAME "
                f"(settings for all of them go in {user_file(layered.settings.home)})"
            )
        assignments = dict(parse_assignment(a) for a in set_values or [])
        name = layered.settings.store.kb
        with peek_client(layered.settings) as client:
            found = read_kb_settings(client, name) if client is not None else None
            if found is None and kb is not None:
                others = ", ".join(repr(k) for k in knowledge_bases(client)) if client is not None else ""
                raise ConfigError(
                    f"knowledge base {name!r} does not exist (existing: {others or 'none yet'}); "
                    f"`paperscope ingest PATH --kb {name}` creates it"
                )
            if found is not None and changing:
                after = save_overrides(client, name, assignments, unset or [])
                for line in changes_lines(after, assignments, unset or [], found):
                    console.print(markup(line), soft_wrap=True, highlight=False)
                return
        if found is not None:
            layered = layered.with_kb(found.layer())
    except PaperscopeError as exc:
        raise fail(exc) from None
    if as_json:
        write_json(json.dumps(layered.provenance_json(), ensure_ascii=False, indent=2))
        return
    console.print(settings_view(layered, found))


@app.command()
def operators(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the engine's operators: chunkers, routers, retrievers, rerankers, transforms, postprocessors, enrichers.

    Each with what it does and what it needs (a language model, a parent_child knowledge base, a reranker), those
    of installed plugins (entry points `paperscope.operators`) too; pick them in settings (`paperscope config`) or
    per command (--retriever, --rerank, --strategy).
    """
    from ..agent import router  # noqa: F401  (registers the LLM router: the registry imports rag's operators only)
    from ..rag.registry import operators as registered  # imports every built-in operator and the plugins

    ops = registered()
    if as_json:
        rows = [{"kind": o.kind, "name": o.name, "needs": list(o.needs), "summary": o.summary} for o in ops]
        write_json(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    # A list per kind, each description wrapped under its name: readable at 80 columns on a terminal and piped
    # alike (a table ran 400 characters wide piped, and squeezed the descriptions to a sliver on a terminal).
    console.print(f"[bold]{len(ops)} operators[/bold]", highlight=False)
    kind = None
    for o in ops:
        if o.kind != kind:
            kind = o.kind
            console.print()
            console.print(terminal.text(f"{kind}s", "bold"))
        needs = f"  (needs {', '.join(o.needs)})" if o.needs else ""
        console.print(terminal.text(f"  {o.name}", "cyan") + terminal.text(needs, "dim"), overflow="fold")
        console.print(terminal.Indented(terminal.text(o.summary), OPERATOR_INDENT))
