"""Index-time enrichment with the chat model: one module per strategy, each a registered `enricher` operator.

| strategy | what the model writes | where it goes |
|---|---|---|
| `contextual` | a short context for each chunk, from the paper (a long one: its summaries) | the chunk's index text |
| `sliding_summary` | each chunk's summary, with the previous chunk's as context | the chunk's index text |
| `headers` | a descriptive header for each chunk | the chunk's index text |
| `questions` | 3-5 questions each chunk answers | rows of kind question pointing to the chunk |
| `summaries` | the paper's summary and each section's | the catalogue; rows of kind summary |
| `raptor` | a tree of summaries over clustered chunks | rows of kind raptor (own citations) |

The stored `text` of a chunk stays the original; what the model wrote is indexed (embedded and BM25) beside it.
`ingest --enrich` (or `enrichment.strategies`) chooses them; runner.py runs them, base.py holds what they share.
"""

from . import contextual, headers, questions, raptor, sliding, summaries  # noqa: F401  (registers the enrichers)
from .base import CallStats, EnrichmentError
from .runner import ORDER, ROW_KINDS, Cost, EnrichedPaper, Enricher, enricher_for, make_enricher, ordered

__all__ = [
    "ORDER",
    "ROW_KINDS",
    "CallStats",
    "Cost",
    "EnrichedPaper",
    "Enricher",
    "EnrichmentError",
    "enricher_for",
    "make_enricher",
    "ordered",
]
