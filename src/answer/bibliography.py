"""The papers an answer cites, as a reference list: numbered works (`Answer.bibliography`), Markdown, BibTeX.

A researcher who copies an answer into a draft needs to cite what it rests on. The answer's [n] number passages;
a bibliography numbers papers, in the order the answer first cites them, with what the library knows of each
(authors in order, year, venue, DOI, arXiv id, citation key; sources/merge.py: the library's record first).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..rag.store import PaperRecord
from ..sources.bibtex import write_bibtex
from ..sources.models import PaperMeta
from .citation_forms import NUMBERED
from .claims import Claim
from .model import Answer, CitedWork, Source


def cited_works(
    text: str, track: str, sources: Sequence[Source], claims: Sequence[Claim], papers: Mapping[str, PaperRecord]
) -> list[CitedWork]:
    """The papers `text` cites through its [n] (and its claims through their chunks), first cited first; none for an
    answer that says no paper answers (Track NONE: its sources are only the closest passages)."""
    if track == "NONE":
        return []
    by_number = {s.n: s for s in sources}
    order: dict[str, list[int]] = {}
    for match in NUMBERED.finditer(text):
        source = by_number.get(int(match.group(1)))
        if source is not None:
            numbers = order.setdefault(source.doc_id, [])
            if source.n not in numbers:
                numbers.append(source.n)
    for claim in claims:
        if claim.citation:
            order.setdefault(claim.citation.split(":", 1)[0], [])
    works: list[CitedWork] = []
    for doc_id, numbers in order.items():
        record = papers.get(doc_id)
        if record is None:  # removed since it was read: cite what the sources say of it
            source = next((s for s in sources if s.doc_id == doc_id), None)
            if source is None:
                continue
            record = PaperRecord(doc_id=doc_id, title=source.title, year=source.year)
        meta = record.meta
        works.append(
            CitedWork(
                n=len(works) + 1,
                doc_id=doc_id,
                title=record.title,
                authors=record.authors,
                year=record.year or meta.year,
                venue=meta.venue,
                doi=meta.doi,
                arxiv_id=meta.arxiv_id,
                citation_key=meta.citation_key,
                sources=sorted(numbers),
            )
        )
    return works


def _reference(work: CitedWork) -> str:
    """One entry as a reader cites it: "Authors (year). Title. Venue. https://doi.org/..."."""
    authors = ", ".join(work.authors[:6]) + (" et al." if len(work.authors) > 6 else "")
    parts = [f"{authors or 'Unknown authors'} ({work.year or 'n.d.'}).", f"{work.title.rstrip('.')}."]
    if work.venue:
        parts.append(f"*{work.venue}*.")
    if work.doi:
        parts.append(f"https://doi.org/{work.doi}")
    elif work.arxiv_id:
        parts.append(f"arXiv:{work.arxiv_id}")
    return " ".join(parts)


def markdown(query: str, text: str, works: Sequence[CitedWork]) -> str:
    """An answer's `text` with its [n] turned into the numbers of the papers they come from (`works`, the answer's
    bibliography), under its question, and the reference list."""
    paper_of = {n: work.n for work in works for n in work.sources}

    def renumber(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[{paper_of[n]}]" if n in paper_of else match.group(0)

    body = NUMBERED.sub(renumber, text)
    for work in works:  # one paper cited twice in a row reads once: "[1][1]" -> "[1]"
        body = body.replace(f"[{work.n}][{work.n}]", f"[{work.n}]")
    lines = [f"**{query}**", "", body.strip()]
    if works:
        lines += ["", "## References", ""]
        lines += [f"{work.n}. {_reference(work)}" for work in works]
    return "\n".join(lines) + "\n"


def bibtex(works: Sequence[CitedWork]) -> str:
    """The BibTeX entries of `works`, under the library's citation keys where known."""
    return write_bibtex(
        [
            PaperMeta(
                title=w.title,
                authors=w.authors,
                year=w.year,
                venue=w.venue,
                doi=w.doi,
                arxiv_id=w.arxiv_id,
                citation_key=w.citation_key,
            )
            for w in works
        ]
    )


def as_markdown(answer: Answer) -> str:
    """The answer citing papers, with its reference list (`ask --format markdown`)."""
    return markdown(answer.query, answer.answer, answer.bibliography)


def as_bibtex(answer: Answer) -> str:
    """The BibTeX entries of the papers the answer cites (`ask --format bibtex`)."""
    return bibtex(answer.bibliography)
