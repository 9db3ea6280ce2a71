"""`paperscope check`: compare the catalogue with the chunks, report what a crash or a bug left, repair it.

Per paper of the catalogue: is it ready, does it hold as many body chunks as its row says, do their
chunk_index values run 0..N-1 without gaps or duplicates, is its catalogue vector (title and abstract, what
paper search ranks by) one the embedder could have given: of its dimension, finite, of its norm. Across the
store: chunk rows whose paper has no catalogue row (orphans). Searches never show either (see store/base.py),
but they stay wrong until repaired:

- a paper with a problem is ingested again from a path that still holds its bytes; with none left it
  is marked "broken" (hidden; `paperscope remove` drops it, ingesting its file again restores it);
- a damaged catalogue vector is computed again from the stored title and abstract;
- orphan chunk rows are deleted (there is no record of where they came from).

The result of the last check is kept per knowledge base in `$PAPERSCOPE_HOME/checks.json`, so
`ingest` can warn while a problem found there is still unrepaired.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import PaperscopeError, StoreError
from .ingest import damaged_detail, holds, ingest
from .paths import unescape_path
from .store import PaperRecord, PaperStore

CHECKS_FILE = "checks.json"

Issue = Literal["not_ready", "broken", "no_chunks", "count", "chunk_index", "vector", "orphans"]
#: How far from 1 the norm of a vector of a normalising embedder may be (float32 rounding is ~1e-7).
NORM_TOLERANCE = 0.01
#: For an embedder whose norms vary with the text: how many times larger or smaller than its probe's is wrong.
NORM_FACTOR = 10.0
NORM_PROBE = "paperscope check: the norm of this embedder's vectors"


class Problem(BaseModel):
    """One thing wrong in the store."""

    doc_id: str
    title: str = Field("", description="The paper's title; empty for orphans.")
    issue: Issue
    detail: str = Field(description="What is wrong, in words.")
    fixed: bool = Field(False, description="True once --repair has put it right.")
    repair: str = Field("", description="What --repair did, or why it could not.")


class CheckReport(BaseModel):
    """The outcome of `check_store` (and `repair`)."""

    kb: str
    papers: int = Field(description="Rows in the catalogue.")
    chunks: int = Field(description="Rows in the chunks collection.")
    problems: list[Problem] = Field(default_factory=list)
    repaired: bool = Field(False, description="True when --repair ran.")
    at: int = Field(default_factory=lambda: int(time.time()), description="Unix time of the check.")

    @property
    def remaining(self) -> list[Problem]:
        """Problems not (or not yet) fixed."""
        return [p for p in self.problems if not p.fixed]

    @property
    def ok(self) -> bool:
        return not self.remaining


def _gaps(indexes: list[int], n: int) -> str:
    """What is wrong with a paper's body chunk_index values against 0..n-1, or "" when nothing is."""
    seen = sorted(indexes)
    if seen == list(range(n)):
        return ""
    have = Counter(seen)
    missing = [i for i in range(max(n, (seen[-1] + 1) if seen else 0)) if i not in have]
    doubled = sorted(i for i, times in have.items() if times > 1)
    parts = []
    if missing:
        parts.append("missing " + ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else ""))
    if doubled:
        parts.append("duplicated " + ", ".join(map(str, doubled[:10])))
    beyond = [i for i in seen if i >= n]
    if beyond:
        parts.append(f"{len(beyond)} past the end ({n} chunks)")
    return "chunk_index does not run 0.." + f"{n - 1}: " + "; ".join(parts)


def check_store(store: PaperStore) -> CheckReport:
    """Compare the catalogue with the chunks collection; nothing is changed."""
    papers = store.list_papers(brief=True)
    inventory = store.chunk_inventory()
    problems: list[Problem] = []
    for p in papers:
        body = inventory.get(p.doc_id, {}).get("chunk", [])
        if p.status == "broken":
            problems.append(Problem(doc_id=p.doc_id, title=p.title, issue="broken", detail="marked broken earlier"))
            continue
        if not p.ready:
            detail = "interrupted ingest: hidden from search until it is ingested again"
            problems.append(Problem(doc_id=p.doc_id, title=p.title, issue="not_ready", detail=detail))
            continue
        if not body and not inventory.get(p.doc_id):
            detail = damaged_detail(p.n_chunks, 0)
            problems.append(Problem(doc_id=p.doc_id, title=p.title, issue="no_chunks", detail=detail))
        elif len(body) != p.n_chunks:
            detail = damaged_detail(p.n_chunks, len(body))
            problems.append(Problem(doc_id=p.doc_id, title=p.title, issue="count", detail=detail))
        elif gaps := _gaps(body, p.n_chunks):
            problems.append(Problem(doc_id=p.doc_id, title=p.title, issue="chunk_index", detail=gaps))
    # A paper with a problem above is ingested again, which writes its vector too.
    flagged = {q.doc_id for q in problems}
    whole = {p.doc_id: p for p in papers if p.doc_id not in flagged}
    for doc_id, detail in _vector_problems(store, whole).items():
        problems.append(Problem(doc_id=doc_id, title=whole[doc_id].title, issue="vector", detail=detail))
    listed = {p.doc_id for p in papers}
    for doc_id, kinds in sorted(inventory.items()):
        if doc_id not in listed:
            rows = sum(len(v) for v in kinds.values())
            detail = f"{rows} chunk rows whose paper is not in the catalogue"
            problems.append(Problem(doc_id=doc_id, issue="orphans", detail=detail))
    total = sum(len(v) for kinds in inventory.values() for v in kinds.values())
    return CheckReport(kb=store.kb, papers=len(papers), chunks=total, problems=problems)


def _vector_problems(store: PaperStore, papers: Mapping[str, PaperRecord]) -> dict[str, str]:
    """{doc_id: what is wrong} for the catalogue vectors of `papers` that the embedder cannot have given (random
    bytes in the store's files read back as huge numbers, NaN or infinity; a vector of another dimension)."""
    if not papers:
        return {}
    dim = store.embedder.dim
    found: dict[str, str] = {}
    norms: dict[str, float] = {}
    for doc_id, vector in store.paper_vectors().items():
        if doc_id not in papers:
            continue
        if len(vector) != dim:
            found[doc_id] = f"its catalogue vector has {len(vector)} dimensions where the embedder gives {dim}"
        elif bad := sum(1 for x in vector if not math.isfinite(x)):
            found[doc_id] = f"its catalogue vector holds {bad} values that are not finite numbers (NaN or infinity)"
        else:
            norms[doc_id] = math.hypot(*vector)
    if all(abs(n - 1) <= NORM_TOLERANCE for n in norms.values()):
        return found  # as a normalising embedder gives them: no need to ask the embedder
    typical = _typical_norm(store)
    if abs(typical - 1) <= NORM_TOLERANCE / 10:  # a normalising embedder: every vector it gives has norm 1
        low, high = 1 - NORM_TOLERANCE, 1 + NORM_TOLERANCE
    else:  # norms vary with the text: only one far off is wrong
        low, high = typical / NORM_FACTOR, typical * NORM_FACTOR
    for doc_id, norm in norms.items():
        if not low <= norm <= high:
            found[doc_id] = f"its catalogue vector has norm {norm:.3g} where the embedder gives {typical:.3g}"
    return found


def _typical_norm(store: PaperStore) -> float:
    """The norm of a vector the store's embedder gives now."""
    try:
        return math.hypot(*store.embedder.embed_query(NORM_PROBE))
    except PaperscopeError:
        raise
    except Exception as exc:
        raise StoreError(
            f"knowledge base {store.kb!r}: checking the norms of its catalogue vectors: the embedder "
            f"{store.embedder.name} failed: {exc}"
        ) from exc


def repair(store: PaperStore, report: CheckReport, settings: Settings) -> CheckReport:
    """Put right what `report` found (see the module docstring); returns the report with each fix noted."""
    for problem in report.problems:
        try:
            if problem.issue == "orphans":
                n = store.delete_chunks_of(problem.doc_id)
                problem.fixed, problem.repair = True, f"deleted {n} orphan chunk rows"
            elif problem.issue == "vector":
                again = store.embed_paper_again(problem.doc_id)
                problem.fixed, problem.repair = True, "its vector computed again from its title and abstract"
                if not again:  # removed since the check
                    problem.repair = "no longer in the catalogue"
            else:
                _reingest(store, problem, settings)
        except PaperscopeError as exc:
            problem.repair = f"repair failed: {exc}"
    report.repaired = True
    return report


def _reingest(store: PaperStore, problem: Problem, settings: Settings) -> None:
    paper = store.get_paper(problem.doc_id)
    if paper is None:  # removed since the check: nothing left to repair
        problem.fixed, problem.repair = True, "no longer in the catalogue"
        return
    holder = next((s for s in paper.sources if holds(s, paper.sha256)), None)
    if holder is None:
        if paper.status != "broken":
            store.set_status(paper.doc_id, "broken")
        where = ", ".join(paper.sources) or "no recorded path"
        problem.repair = (
            f"no file holds it any more ({where}): marked broken and hidden; ingest its file again, or "
            f"`paperscope remove {paper.doc_id[:8]}`"
        )
        return
    # repair=False: the problems of this report are repaired one by one, here.
    [result] = ingest([unescape_path(holder)], settings, store, force=True, repair=False).files
    if result.status == "failed":
        problem.repair = f"ingesting {holder} again failed: {result.error}"
    else:
        problem.fixed, problem.repair = True, f"ingested again from {holder}"


# --- the last result, for ingest's warning ---------------------------------------------------------


def _checks_file(home: Path) -> Path:
    return Path(home).expanduser() / CHECKS_FILE


def record(home: Path, report: CheckReport) -> None:
    """Remember this check's outcome for its knowledge base (best effort: a read-only home only loses it)."""
    path = _checks_file(home)
    data = _read(path)
    data[report.kb] = {"ok": report.ok, "problems": len(report.remaining), "at": report.at}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError:
        pass


def last_failed(home: Path, kb: str) -> dict[str, int] | None:
    """{"problems": n, "at": unix time} when the last check of `kb` left problems, else None."""
    entry = _read(_checks_file(home)).get(kb)
    if not isinstance(entry, dict) or entry.get("ok", True):
        return None
    return {"problems": int(entry.get("problems", 0)), "at": int(entry.get("at", 0))}


def _read(path: Path) -> dict[str, dict[str, int]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
