"""Short paper labels for one agent run: the model reads and writes `P3:17`, everything else keeps doc_ids.

A small model copies a 36-character UUID badly; `P3` (the third paper of this run) it copies well. The
labels are numbered in the order papers are first shown (the catalogue in the prompt first), and mapped
back to `<doc_id>:<chunk_index>` before anything leaves the run (sources, trace, JSON). Both forms are
accepted from the model.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from ..answer.citations import passage_id

_LABEL = re.compile(r"^\s*\[?\s*[Pp](\d{1,5})\s*\]?\s*$")
_LABEL_IN_TEXT = re.compile(r"\bP(\d{1,5})\b")


class PaperLabels:
    """doc_id <-> P<n> for one run (thread-safe: tools that run concurrently label new papers)."""

    def __init__(self, doc_ids: Iterable[str] = ()) -> None:
        self._by_doc: dict[str, str] = {}
        self._by_label: dict[str, str] = {}
        self._lock = threading.Lock()
        for doc_id in doc_ids:
            self.label(doc_id)

    def label(self, doc_id: str) -> str:
        """The paper's label, given one the first time it is seen."""
        with self._lock:
            label = self._by_doc.get(doc_id)
            if label is None:
                label = f"P{len(self._by_doc) + 1}"
                self._by_doc[doc_id] = label
                self._by_label[label] = doc_id
            return label

    def citation(self, doc_id: str, chunk_index: int) -> str:
        """The short citation id `P<n>:<chunk_index>` the model reads."""
        return f"{self.label(doc_id)}:{chunk_index}"

    def short(self, citation: str) -> str:
        """A full citation id (`<doc_id>:12`, `<doc_id>:raptor:1.2`) with its paper's label: `P3:12`."""
        doc_id, _, rest = citation.partition(":")
        return f"{self.label(doc_id)}:{rest}"

    def doc_id(self, ref: str) -> str | None:
        """The doc_id a model's paper reference means: a label (P3, p3, [P3]) of this run, else the text as given
        when it is not label-shaped (a full doc_id, checked by the caller). None for an unknown label."""
        m = _LABEL.match(ref) or _LABEL.match(ref.split(":", 1)[0])  # "P3:17" given for a paper means P3
        if m is None:
            return ref.strip()
        with self._lock:
            return self._by_label.get(f"P{int(m.group(1))}")

    def resolve(self, cid: str) -> str | None:
        """`<doc_id>:<chunk_index>` for a citation id in either form (P3:17 or doc_id:17), `<doc_id>:raptor:1.2`
        for a summary node's (P3:raptor:1.2); None if it is not one."""
        return passage_id(cid, self.doc_id)

    def expand(self, text: str) -> str:
        """`text` with this run's labels replaced by doc_ids (for the trace, which leaves the run)."""
        with self._lock:
            known = dict(self._by_label)
        return _LABEL_IN_TEXT.sub(lambda m: known.get(m.group(0), m.group(0)), text)


def paper_line(label: str, title: str, year: int | None, aliases: Iterable[str] = ()) -> str:
    """One paper of the prompt's list: `- P1: Title (2024; also: FlashRank, arXiv 2401.01234)`.

    `aliases` are what people call the paper (short names, acronyms, authors, arXiv id); the catalogue will
    carry them (issue 11), until then the caller passes what it can derive from the title and source.
    """
    extra = [str(year)] if year else []
    names = [a for a in dict.fromkeys(a.strip() for a in aliases) if a and a.casefold() not in title.casefold()]
    if names:
        extra.append("also: " + ", ".join(names))
    return f"- {label}: {title}" + (f" ({'; '.join(extra)})" if extra else "")
