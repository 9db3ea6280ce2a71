"""The operator registry: every strategy of the engine, registered once by kind and name.

Kinds (the design notes' pluggable framework): `chunker` (paper -> chunks), `router` (question -> one paper, the
field, or none), `retriever` (query -> ranked chunks), `reranker` (query, passages -> scores),
`transform` (query -> queries), `postprocessor` (ranked chunks -> ranked chunks: reference lists out, section
preference, rerank, MMR, windows), `enricher` (index-time text from a model) and `indexer`. A new strategy is one
decorated function or class; configuration picks it by a spec, `name[:argument]` (`retrieval.retriever =
"hybrid:weighted"`), which `build` turns into the operator through the factory registered with it, and
`paperscope operators` lists them with what each needs (a language model, a `parent_child` knowledge base, ...).
Every answer and retrieve response reports the operators that ran (`OperatorRun`).

Third-party packages add operators through the entry-point group `paperscope.operators`: each entry point names a
module whose `@register` decorators run when it is imported, on the first lookup or listing (docs/operators.md).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from ..errors import ConfigError

log = logging.getLogger(__name__)

Kind = Literal["chunker", "router", "retriever", "reranker", "transform", "postprocessor", "enricher", "indexer"]
KINDS: tuple[Kind, ...] = (
    "chunker",
    "router",
    "retriever",
    "reranker",
    "transform",
    "postprocessor",
    "enricher",
    "indexer",
)
PLUGIN_GROUP = "paperscope.operators"
T = TypeVar("T")
#: Builds an operator from its spec's argument (the text after the first ':', "" when none) and what the kind
#: passes (a retriever: the retrieval settings).
Factory = Callable[..., Any]

# The modules that register the built-in operators of each kind: imported on the first lookup of the kind, so
# `get("retriever", ...)` knows every retriever whoever asks first (importing them all up front costs a second).
_BUILTIN: dict[str, tuple[str, ...]] = {
    "chunker": ("rag.chunking",),
    "router": ("rag.route",),  # the agent's LLM router registers itself in agent/ (rag never imports agent)
    "retriever": ("rag.retrievers",),
    "reranker": ("rag.rerank",),
    "transform": ("rag.transforms", "rag.engine"),
    "postprocessor": ("rag.engine", "rag.passages"),
    "enricher": ("rag.enrich",),
    "indexer": (),
}
_PACKAGE = __name__.rsplit(".", 2)[0]  # "paperscope"


@dataclass(frozen=True)
class Operator:
    """One registered strategy."""

    kind: Kind
    name: str
    summary: str  # what it does and when to use it, one line
    needs: tuple[str, ...] = ()  # e.g. "llm", "parent_child knowledge base", "reranker"
    target: Any = field(default=None, compare=False)  # the function or class itself
    factory: Factory | None = field(default=None, compare=False)  # None: never chosen by name (always on)
    usage: str = ""  # the spec's forms, e.g. "hybrid[:rrf|:weighted]"; the name when it takes no argument

    @property
    def form(self) -> str:
        """How a spec names it: its usage, else its name."""
        return self.usage or self.name


_REGISTRY: dict[tuple[str, str], Operator] = {}
_imported: set[str] = set()  # kinds whose built-in modules were imported
_plugins_loaded = False


def no_argument(kind: str, name: str, arg: str) -> None:
    """A ConfigError when an operator that takes no argument is given one (`bm25:x`)."""
    if arg:
        raise ConfigError(f"{kind} {name!r} takes no argument, got {name}:{arg}")


def _plain(kind: str, name: str, target: Any) -> Factory:
    """The factory of an operator that takes no argument: a class built without arguments, a function as is."""

    def build(arg: str, *_: Any, **__: Any) -> Any:
        no_argument(kind, name, arg)
        return target() if inspect.isclass(target) else target

    return build


def register(
    kind: Kind,
    name: str,
    *,
    summary: str | None = None,
    needs: tuple[str, ...] = (),
    factory: Factory | None = None,
    usage: str = "",
    by_name: bool = True,
) -> Callable[[T], T]:
    """Register a function or class as operator `name` of `kind` (its docstring's first line is the summary).

    `factory(arg, ...)` builds it from a spec's argument; by default a class's `from_spec` classmethod, else the
    class built with no arguments (or the function itself), refusing an argument. `by_name=False`: an operator
    that always runs where it applies and is never chosen by a spec (no factory).
    """

    def wrap(target: T) -> T:
        doc = summary or inspect.getdoc(target) or ""
        first = " ".join(doc.strip().split("\n\n", 1)[0].split())
        made = factory or getattr(target, "from_spec", None) or _plain(kind, name, target)
        op = Operator(kind, name, first, tuple(needs), target, made if by_name else None, usage)
        _REGISTRY[(kind, name)] = op
        return target

    return wrap


def unregister(kind: Kind, name: str) -> None:
    """Remove operator `name` of `kind` (a test's own operators, afterwards)."""
    _REGISTRY.pop((kind, name), None)


def load_plugins(*, again: bool = False) -> None:
    """Import every module of the `paperscope.operators` entry points, once (`again`: look for them anew).

    A plugin that fails to import is a warning naming its entry point, not a failure of the engine.
    """
    global _plugins_loaded
    if _plugins_loaded and not again:
        return
    _plugins_loaded = True  # first: a plugin that lists the registry while it loads must not load them again
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            entry.load()
        except Exception as exc:  # whatever a third party's module raises, the built-in operators still work
            log.warning(
                "operator plugin %r (%s) failed to load and is left out: %s: %s",
                entry.name,
                entry.value,
                type(exc).__name__,
                exc,
            )


def _ready(kind: Kind | None) -> None:
    """The built-in operators of `kind` (every kind: None) and the plugins, imported once."""
    for k in KINDS if kind is None else (kind,):
        if k not in _imported:
            _imported.add(k)
            for module in _BUILTIN[k]:
                importlib.import_module(f"{_PACKAGE}.{module}")
    load_plugins()


def unknown(kind: str, name: str, valid: list[str], label: str | None = None) -> str:
    """ "unknown retriever 'bm52'; did you mean 'bm25'? (one of: ...)": the message of every unknown name."""
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {label or kind} {name!r}{hint} (one of: {', '.join(valid)})"


def get(kind: Kind, name: str) -> Operator:
    """The operator `name` of `kind`; a ConfigError naming the valid ones (and the closest) otherwise."""
    _ready(kind)
    found = _REGISTRY.get((kind, name))
    if found is None:
        raise ConfigError(unknown(kind, name, choices(kind) or names(kind)))
    return found


def build(kind: Kind, spec: str, *args: Any, **kwargs: Any) -> Any:
    """The operator a spec `name[:argument]` names, built by its factory with the argument and `args`/`kwargs`."""
    name, _, arg = spec.strip().partition(":")
    op = get(kind, name)
    if op.factory is None:
        valid = ", ".join(choices(kind))
        raise ConfigError(f"{kind} {name!r} runs on its own where it applies, never chosen by name (one of: {valid})")
    return op.factory(arg, *args, **kwargs)


def names(kind: Kind) -> list[str]:
    """Registered names of one kind, sorted."""
    _ready(kind)
    return sorted(n for k, n in _REGISTRY if k == kind)


def choices(kind: Kind) -> list[str]:
    """The names a spec of `kind` may give (those with a factory), sorted."""
    _ready(kind)
    return sorted(n for (k, n), op in _REGISTRY.items() if k == kind and op.factory is not None)


def forms(kind: Kind) -> str:
    """The spec forms of `kind`, for help texts: "bm25, dense, hybrid[:rrf|:weighted], ..."."""
    _ready(kind)
    ops = [op for op in operators(kind) if op.factory is not None]
    return ", ".join(dict.fromkeys(op.form for op in ops))


def operators(kind: Kind | None = None) -> list[Operator]:
    """Every registered operator (of one kind), by kind then name."""
    _ready(kind)
    ops = [op for op in _REGISTRY.values() if kind is None or op.kind == kind]
    return sorted(ops, key=lambda op: (KINDS.index(op.kind), op.name))


# --- what ran --------------------------------------------------------------------------------------------------


class OperatorRun(BaseModel):
    """One operator as it ran for a request: reported in every answer and retrieve response."""

    kind: str
    name: str
    seconds: float = Field(0.0, description="Wall-clock time it took.")
    detail: dict[str, Any] = Field(default_factory=dict, description="What it did, e.g. hits in and out.")


class RunLog:
    """The operators of one request, in the order they ran."""

    def __init__(self) -> None:
        self.runs: list[OperatorRun] = []

    @contextmanager
    def run(self, kind: Kind, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        """Time a block as one operator run; the yielded dict takes details added while it runs."""
        started = time.perf_counter()
        info = dict(detail)
        try:
            yield info
        finally:
            took = round(time.perf_counter() - started, 4)
            self.runs.append(OperatorRun(kind=kind, name=name, seconds=took, detail=info))
