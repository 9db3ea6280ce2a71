"""The operator registry: every strategy of the engine, registered once by kind and name.

Kinds (the design notes' pluggable framework): `chunker` (paper -> chunks), `router` (question -> one paper, the
field, or none), `retriever` (query -> ranked chunks),
`transform` (query -> queries), `postprocessor` (ranked chunks -> ranked chunks: reference lists out, section
preference, rerank, MMR, windows), `enricher` (index-time text from a model) and `indexer`. A new strategy is one
decorated function or class; configuration picks it by name (`retrieval.retriever = "hybrid"`), and
`paperscope operators` lists them with what each needs (a language model, a `parent_child` knowledge base, ...).
Every answer and retrieve response reports the operators that ran (`OperatorRun`).
"""

from __future__ import annotations

import difflib
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from ..errors import ConfigError

Kind = Literal["chunker", "router", "retriever", "transform", "postprocessor", "enricher", "indexer"]
KINDS: tuple[Kind, ...] = ("chunker", "router", "retriever", "transform", "postprocessor", "enricher", "indexer")
T = TypeVar("T")


@dataclass(frozen=True)
class Operator:
    """One registered strategy."""

    kind: Kind
    name: str
    summary: str  # what it does and when to use it, one line
    needs: tuple[str, ...] = ()  # e.g. "llm", "parent_child knowledge base", "reranker"
    target: Any = field(default=None, compare=False)  # the function or class itself


_REGISTRY: dict[tuple[str, str], Operator] = {}


def register(kind: Kind, name: str, *, summary: str | None = None, needs: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Register a function or class as operator `name` of `kind` (its docstring's first line is the summary)."""

    def wrap(target: T) -> T:
        doc = summary or inspect.getdoc(target) or ""
        first = " ".join(doc.strip().split("\n\n", 1)[0].split())
        _REGISTRY[(kind, name)] = Operator(kind, name, first, tuple(needs), target)
        return target

    return wrap


def get(kind: Kind, name: str) -> Operator:
    """The operator `name` of `kind`; a ConfigError naming the valid ones (and the closest) otherwise."""
    found = _REGISTRY.get((kind, name))
    if found is None:
        valid = names(kind)
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown {kind} {name!r}{hint} (one of: {', '.join(valid)})")
    return found


def names(kind: Kind) -> list[str]:
    """Registered names of one kind, sorted."""
    return sorted(n for k, n in _REGISTRY if k == kind)


def operators(kind: Kind | None = None) -> list[Operator]:
    """Every registered operator (of one kind), by kind then name."""
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
