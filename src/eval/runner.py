"""Replay queries through a searcher and aggregate the scores, per query, overall and per track."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from ..answer.model import Answer
from ..rag.store import PaperStore
from . import metrics
from .queries import EvalQuery

#: One line per metric, printed under the tables and in the Markdown report.
EXPLANATIONS = {
    "routing": "share of queries sent to the expected track (A: one paper, B: across papers; for a paper that "
    "is not in the corpus, whether the router saw a question about one paper)",
    "paper_hit": "share of queries where a top-k source comes from an expected paper",
    "recall": "evidence Recall@k: share of the evidence strings found in the top-k sources' text",
    "mrr": "mean reciprocal rank of the first source that contains an evidence string",
    "ndcg": "nDCG@10 over the sources, a source being relevant when it contains an evidence string",
    "category_precision": "share of sources whose section category is one of the expected ones",
    "fact_coverage": "share of the expected facts (answer_contains) that the answer states",
    "not_in_corpus": "share of not-in-corpus queries where the answer says the papers do not cover it",
    "latency_p50": "median seconds per answer (p95 alongside)",
}
METRICS = ("routing", "paper_hit", "recall", "mrr", "ndcg", "category_precision", "fact_coverage", "not_in_corpus")
ABSTAINED = ("No paper in the knowledge base matches", "No passage in the knowledge base answers")


class Runner(Protocol):
    store: PaperStore

    def run(self, query: str, history: Sequence[Answer] | None = None) -> Answer: ...


class QueryResult(BaseModel):
    """Scores of one query (None where the metric does not apply)."""

    id: str
    query: str
    track: str
    expected_track: str | None
    lang: str | None = None
    routing: float | None = None
    paper_hit: float | None = None
    recall: float | None = None
    mrr: float | None = None
    ndcg: float | None = None
    category_precision: float | None = None
    fact_coverage: float | None = None
    not_in_corpus: float | None = None
    seconds: float = 0.0
    sources: list[str] = Field(default_factory=list, description="Citation ids of the sources, best first.")
    mode: str | None = Field(None, description="How the answer came: agent, single-shot or fallback.")
    llm_error: str | None = Field(None, description="The model's failure, when the answer went on without it.")
    error: str | None = None


class Summary(BaseModel):
    """Means of each metric over the queries it applies to, and latency."""

    queries: int
    scores: dict[str, float | None]
    counts: dict[str, int] = Field(description="Queries each metric was computed on.")
    latency_p50: float
    latency_p95: float


class EvalReport(BaseModel):
    """Everything `paperscope eval` prints."""

    file: str
    k: int
    mode: str
    overall: Summary
    per_track: dict[str, Summary]
    per_lang: dict[str, Summary] = Field(
        default_factory=dict, description="By question language, when the queries carry more than one."
    )
    results: list[QueryResult]


def score(q: EvalQuery, answer: Answer, expected_docs: list[str], k: int) -> QueryResult:
    """Score one answer against its gold query."""
    top = answer.sources[:k]
    texts = [s.text for s in answer.sources]
    r = QueryResult(
        id=q.id,
        query=q.query,
        track=answer.track,
        expected_track=q.expected_track,
        lang=q.lang,
        seconds=answer.timings.get("total", 0.0),
        sources=[s.citation for s in answer.sources],
        mode=answer.mode,
        llm_error=answer.llm_error,
    )
    if q.expected_track in ("A", "B"):
        # A question about a paper that is not there is routed right when the router saw a paper question,
        # even though the search then falls back to the whole field (Track B) to show what is close.
        taken = answer.track
        if q.not_in_corpus:
            taken = "A" if answer.route.intent == "SPECIFIC_PAPER" else "B"
        r.routing = float(taken == q.expected_track)
    if q.not_in_corpus:
        said = answer.track == "NONE" or any(a in answer.answer for a in ABSTAINED) or not answer.supported
        r.not_in_corpus = float(said)
        return r
    if expected_docs:
        r.paper_hit = float(any(s.doc_id in expected_docs for s in top))
    if q.evidence:
        r.recall = metrics.recall_at_k(texts, q.evidence, k)
        r.mrr = metrics.reciprocal_rank(texts, q.evidence)
        r.ndcg = metrics.ndcg_at_k(texts, q.evidence, 10)
    if q.expected_sections and top:
        r.category_precision = metrics.precision([s.section_category for s in top], q.expected_sections)
    if q.answer_contains:
        r.fact_coverage = metrics.coverage(answer.answer, q.answer_contains)
    return r


def failed(q: EvalQuery, expected_docs: list[str], error: str) -> QueryResult:
    """A query whose run raised: every metric that applies scores 0."""
    r = QueryResult(id=q.id, query=q.query, track="-", expected_track=q.expected_track, lang=q.lang, error=error)
    applies = {
        "routing": q.expected_track in ("A", "B"),
        "not_in_corpus": q.not_in_corpus,
        "paper_hit": bool(expected_docs) and not q.not_in_corpus,
        "recall": bool(q.evidence) and not q.not_in_corpus,
        "mrr": bool(q.evidence) and not q.not_in_corpus,
        "ndcg": bool(q.evidence) and not q.not_in_corpus,
        "fact_coverage": bool(q.answer_contains) and not q.not_in_corpus,
    }
    for name, on in applies.items():
        if on:
            setattr(r, name, 0.0)
    return r


def summarize(results: Sequence[QueryResult]) -> Summary:
    """Mean of each metric over the results where it applies."""
    scores: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for name in METRICS:
        values = [v for r in results if (v := getattr(r, name)) is not None]
        scores[name] = statistics.fmean(values) if values else None
        counts[name] = len(values)
    seconds = sorted(r.seconds for r in results) or [0.0]
    p95 = seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))]
    return Summary(
        queries=len(results),
        scores=scores,
        counts=counts,
        latency_p50=statistics.median(seconds),
        latency_p95=p95,
    )


def run_eval(
    runner: Runner,
    queries: Sequence[EvalQuery],
    *,
    k: int = 5,
    file: str = "",
    mode: str = "",
    on_result: Callable[[QueryResult], None] | None = None,
) -> EvalReport:
    """Ask every query (independently, no history) and score the answers."""
    papers = runner.store.list_papers(brief=True)
    results: list[QueryResult] = []
    for q in queries:
        expected = list(q.expected_doc_ids) + [
            p.doc_id for t in q.expected_titles for p in papers if metrics.same_title(t, p.title)
        ]
        try:
            result = score(q, runner.run(q.query), expected, k)
        except Exception as exc:  # one failing query is a result (scored 0), not the end of the run
            result = failed(q, expected, str(exc))
        results.append(result)
        if on_result is not None:
            on_result(result)
    tracks = sorted({q.expected_track for q in queries if q.expected_track})
    per_track = {t: summarize([r for r in results if r.expected_track == t]) for t in tracks}
    langs = sorted({q.lang for q in queries if q.lang})
    per_lang = {x: summarize([r for r in results if r.lang == x]) for x in langs} if len(langs) > 1 else {}
    return EvalReport(
        file=file, k=k, mode=mode, overall=summarize(results), per_track=per_track, per_lang=per_lang, results=results
    )
