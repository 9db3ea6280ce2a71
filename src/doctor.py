"""`paperscope doctor`: is everything paperscope needs there and working? Run it first when something is off.

Checks, in order: the chat model's endpoint (reachable, model listed, a short reply and its latency,
streaming, tool calls structured / as text / no, context length; see agent/probe.py), the embedding model
(loads, dimension), the Milvus store (URI, knowledge bases with their papers and chunks). Without an LLM
configured it says so and checks the rest. A check that fails means paperscope cannot work as configured;
a warning means it works with a fallback.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from .agent.probe import ProbeResult, probe, prompt_choice
from .config import Settings
from .errors import PaperscopeError

Status = Literal["ok", "warn", "fail", "skip"]


class Check(BaseModel):
    """One line of the report."""

    name: str
    status: Status
    detail: str


class KnowledgeBase(BaseModel):
    name: str
    papers: int = Field(description="Catalogue rows (papers), ready or not.")
    ready: int | None = Field(None, description="Ready papers (counted for the configured knowledge base).")
    chunks: int
    embedder: str | None = None


class DoctorReport(BaseModel):
    """Everything `paperscope doctor` found; `ok` is False when a needed part is broken."""

    checks: list[Check] = Field(default_factory=list)
    llm: ProbeResult | None = None
    embedding: dict[str, Any] = Field(default_factory=dict)
    milvus: dict[str, Any] = Field(default_factory=dict)
    knowledge_bases: list[KnowledgeBase] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(c.status == "fail" for c in self.checks)

    def add(self, name: str, status: Status, detail: str) -> None:
        self.checks.append(Check(name=name, status=status, detail=detail))


def run_doctor(settings: Settings, *, refresh: bool = False) -> DoctorReport:
    """Run every check; never raises for a broken part (that is what the report is for)."""
    report = DoctorReport()
    _check_llm(settings, report, refresh)
    embedder = _check_embedding(settings, report)
    _check_store(settings, report, embedder)
    return report


def _check_llm(settings: Settings, report: DoctorReport, refresh: bool) -> None:
    if not settings.llm.model:
        report.add(
            "llm",
            "skip",
            "no LLM configured (PAPERSCOPE_LLM_MODEL, OPENAI_BASE_URL): answers are extracted sentences",
        )
        return
    found = probe(settings, refresh=refresh)
    report.llm = found
    if not found.reachable:
        report.add("llm endpoint", "fail", f"{found.endpoint}: {found.error or 'no answer'}")
        return
    report.add("llm endpoint", "ok", f"{found.endpoint} is reachable")
    if found.listed is None:
        report.add("llm model", "ok", f"{found.model} (the endpoint lists no models)")
    elif found.listed:
        report.add("llm model", "ok", f"{found.model} (listed by the endpoint)")
    else:
        listed = ", ".join(found.models[:5]) + (", ..." if len(found.models) > 5 else "")
        # llama.cpp and others serve their one model under any name: a reply settles it.
        answers = found.latency is not None
        detail = f"{found.model} is not listed (the endpoint lists {listed})"
        report.add("llm model", "ok" if answers else "warn", detail + ("; it answers to it" if answers else ""))
    if found.latency is None:
        report.add("llm reply", "fail", found.error or "no reply")
        return
    report.add("llm reply", "ok", f"a short reply in {found.latency:.2f} s")
    if found.streaming:
        report.add("llm streaming", "ok", "yes")
    else:
        report.add("llm streaming", "warn", f"no ({found.stream_error or 'no text arrived'}): answers are not streamed")
    cache = " (cached; --refresh probes again)" if found.cached else ""
    if found.tool_calls == "yes":
        report.add("llm tool calls", "ok", f"structured{cache}")
    elif found.tool_calls == "as text":
        report.add("llm tool calls", "ok", f"written as text, which paperscope parses{cache}")
    elif found.tool_calls == "no":
        report.add(
            "llm tool calls", "warn", f"none{cache}: the agent will fall back to single-shot retrieval with this model"
        )
    else:
        report.add("llm tool calls", "warn", f"could not be probed: {found.tool_error}")
    if settings.llm.context_length or found.context_length:
        window = settings.llm.context_length or found.context_length or 0
        source = "llm.context_length" if settings.llm.context_length else "the endpoint"
        prompt = prompt_choice(settings, window)
        report.add("llm context", "ok", f"{window} tokens (from {source}): the agent uses the {prompt} prompt")
    else:
        prompt = prompt_choice(settings)
        report.add("llm context", "ok", f"unknown (set llm.context_length): the agent uses the {prompt} prompt")


def _check_embedding(settings: Settings, report: DoctorReport) -> Any:
    from .rag.embeddings import embedder_for

    started = time.perf_counter()
    try:
        embedder = embedder_for(settings)
        # A text no cache holds, so the model itself has to load and answer.
        vector = embedder.embed_documents([f"paperscope doctor {time.time_ns()}"])[0]
    except Exception as exc:  # a report line, not a traceback
        report.add("embedding", "fail", f"{settings.embedding.model}: {type(exc).__name__}: {exc}")
        return None
    seconds = time.perf_counter() - started
    report.embedding = {"model": embedder.name, "dim": len(vector), "seconds": round(seconds, 3)}
    report.add("embedding", "ok", f"{embedder.name}, {len(vector)} dimensions (ready in {seconds:.1f} s)")
    return embedder


def _check_store(settings: Settings, report: DoctorReport, embedder: Any) -> None:
    from .backend_logs import quiet_backend_loggers
    from .rag.store import PROP_EMBEDDER, PaperStore

    quiet_backend_loggers()  # a store that cannot be opened is this report's line, not Milvus Lite's traceback
    if embedder is None:
        report.add("milvus", "skip", "needs a working embedding model")
        return
    try:
        with PaperStore.open(settings, embedder) as store:
            where = f"Milvus Lite at {store.uri}" if store.is_lite else f"Milvus server at {store.uri}"
            report.milvus = {"uri": store.uri, "lite": store.is_lite}
            client = store.client
            names = set(client.list_collections())
            kbs = sorted(n[: -len("_chunks")] for n in names if n.endswith("_chunks") and f"{n[:-7]}_papers" in names)
            for name in kbs:
                if name == store.kb:
                    records = store.list_papers(brief=True)
                    kb = KnowledgeBase(
                        name=name,
                        papers=len(records),
                        ready=sum(1 for r in records if r.ready),
                        chunks=store.count_chunks(),
                        embedder=store.embedder.name,
                    )
                else:
                    props = client.describe_collection(f"{name}_chunks").get("properties") or {}
                    kb = KnowledgeBase(
                        name=name,
                        papers=int(client.get_collection_stats(f"{name}_papers").get("row_count", 0)),
                        chunks=int(client.get_collection_stats(f"{name}_chunks").get("row_count", 0)),
                        embedder=props.get(PROP_EMBEDDER),
                    )
                report.knowledge_bases.append(kb)
    except PaperscopeError as exc:
        report.add("milvus", "fail", str(exc))
        return
    except Exception as exc:  # a report line, not a traceback
        report.add("milvus", "fail", f"{type(exc).__name__}: {exc}")
        return
    report.add("milvus", "ok", where)
    for kb in report.knowledge_bases:
        ready = f" ({kb.ready} ready)" if kb.ready is not None and kb.ready != kb.papers else ""
        current = " (the one in use)" if kb.name == settings.store.kb else ""
        status: Status = "warn" if kb.ready is not None and kb.ready < kb.papers else "ok"
        detail = f"{kb.papers} papers{ready}, {kb.chunks} chunks, embedder {kb.embedder or 'unknown'}{current}"
        if status == "warn":
            detail += "; run `paperscope ingest` again to repair the rest"
        report.add(f"knowledge base {kb.name}", status, detail)
