"""The eval report as Markdown: overall and per-track tables, one line per metric, the per-query table."""

from __future__ import annotations

from .runner import EXPLANATIONS, METRICS, EvalReport, Summary

LABELS = {
    "routing": "routing acc.",
    "paper_hit": "paper hit@k",
    "recall": "Recall@k",
    "mrr": "MRR",
    "ndcg": "nDCG@10",
    "category_precision": "category prec.",
    "fact_coverage": "fact coverage",
    "not_in_corpus": "not-in-corpus",
}


#: Narrow column headers for the terminal table.
SHORT = {
    "routing": "route",
    "paper_hit": "hit@k",
    "recall": "R@k",
    "mrr": "MRR",
    "ndcg": "nDCG",
    "category_precision": "cat.P",
    "fact_coverage": "facts",
    "not_in_corpus": "absent",
}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def summary_rows(report: EvalReport) -> list[tuple[str, Summary]]:
    """(label, summary) for overall, each track, then each language."""
    return [
        ("overall", report.overall),
        *((f"track {t}", s) for t, s in report.per_track.items()),
        *((f"lang {x}", s) for x, s in report.per_lang.items()),
    ]


def markdown(report: EvalReport) -> str:
    """The whole report."""
    head = ["set", "queries", *(LABELS[m].replace("@k", f"@{report.k}") for m in METRICS), "p50 s", "p95 s"]
    lines = [
        f"# paperscope eval: {report.file}",
        "",
        f"Mode: {report.mode}; k = {report.k}; {report.overall.queries} queries.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for label, s in summary_rows(report):
        cells = [label, str(s.queries), *(fmt(s.scores[m]) for m in METRICS)]
        lines.append("| " + " | ".join([*cells, f"{s.latency_p50:.2f}", f"{s.latency_p95:.2f}"]) + " |")
    lines += ["", "## What each metric means", ""]
    lines += [f"- **{LABELS.get(m, m)}** ({SHORT.get(m, m)}): {text}" for m, text in EXPLANATIONS.items()]
    lines += [
        "",
        "Metrics are averaged over the queries they apply to (e.g. Recall only over queries with evidence strings).",
        "Text matching ignores case, whitespace and hyphenation.",
        "",
        "## Per query",
        "",
        "| id | expected | track | recall | MRR | facts | s | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report.results:
        lines.append(
            f"| {r.id} | {r.expected_track or '-'} | {r.track} | {fmt(r.recall)} | {fmt(r.mrr)} | "
            f"{fmt(r.fact_coverage)} | {r.seconds:.2f} | {r.error or ''} |"
        )
    return "\n".join(lines) + "\n"
