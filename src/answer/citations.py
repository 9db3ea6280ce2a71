"""Citations in a model's answer: found in whatever form it wrote them, checked, and renumbered.

A model cites the passages it read as `[P1:12]` (the agent's short ids), `[<doc_id>:12]`, or `[2]` (the
numbered context of the single-shot answer), and sometimes in forms nobody asked for: `(see doc 1f3a...:7)`,
bare `P1:12`, `[2-4]`, `[1, 3]`. `ground()` finds them all, keeps the ones that resolve to a passage that
was read, renumbers those `[1]`, `[2]`, ... in the order the answer first uses them, and removes the others
with their brackets, a dangling lead-in ("as shown in") and the punctuation left behind. One function does
this for the agent, the fallback and the single-shot answer, so every citation shown maps to a listed source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Source

from .citation_forms import BRACKET, PASSAGE_REF, SUMMARY_REF

_CITATION_ID = re.compile(r"^\s*([A-Za-z0-9_-]{1,64}):(\d{1,7})\s*$")

# One reference inside a citation group: a source number, a range of them, or a passage id in any form a
# model writes one (a short id, a full doc_id, a doc_id cut short with an ellipsis), after filler words.
_FILLER = r"(?:(?:see(?:\s+also)?|cf\.?|e\.g\.,?|doc(?:ument)?|source|sources|passage|passages|chunk|ref\.?)\s+)*"
# After the paper: a chunk_index, or a RAPTOR summary node `raptor:<level>.<n>`.
_PLACE = r"(?:raptor\s*:\s*\d{1,3}\.\d{1,5}|\d{1,7})"
_ID = rf"[A-Za-z0-9_-]{{1,64}}(?:\.\.\.|…)?[A-Za-z0-9_-]{{0,64}}\s*:\s*{_PLACE}"
_NUMBER = r"\d{1,3}(?:\s*[-–]\s*\d{1,3})?"
_REF = re.compile(rf"^\s*{_FILLER}(?P<ref>{_ID}|{_NUMBER})\s*$", re.I)
_PARTS = re.compile(r"\s*(?:[,;]|\band\b|&)\s*", re.I)
_PAREN = re.compile(r"\(([^()\n]{1,400})\)")
# Passage ids written outside brackets: short ids (P3:17) and full or shortened doc_ids with a chunk index.
_BARE_ID = re.compile(
    r"(?<![\w\[:/.-])(?:P\d{1,5}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{4,}(?:\.\.\.|…))"
    r":(?:raptor:\d{1,3}\.\d{1,5}|\d{1,7})(?![\w:])"
)
# Between two citations of one run: nothing but spaces, commas, semicolons or "and".
_JOINER = re.compile(r"^[\s,;]*(?:\band\b[\s,;]*)?$", re.I)
# What introduces a citation and means nothing once the citation is gone.
# ("as shown in" goes whole; of "described in" only the "in": "as shown" alone says nothing, "described" does.)
_LEAD_IN = re.compile(
    r"[\s,;]*\b(?:as\s+(?:shown|seen|reported|described|noted|stated|discussed|explained)\s+in|"
    r"see(?:\s+also)?|cf\.?|according\s+to|as\s+in|in|from|by)\s*$",
    re.I,
)
_CLOSES_SENTENCE = re.compile(r"^\s*(?:[.;:!?,)]|$)")


# --- what a citation points at: the one resolver of every path ---------------------------------------------------


def passage_id(ref: str, paper: Callable[[str], str | None] = str.strip) -> str | None:
    """`<doc_id>:<chunk_index>` (`<doc_id>:raptor:<level>.<n>` for a summary node) of a reference written in either
    form, its paper part mapped by `paper` (the agent's labels: "P3" -> a doc_id); None when it is not one."""
    node = SUMMARY_REF.match(ref)
    if node is not None:
        doc_id = paper(node.group(1))
        return None if doc_id is None else f"{doc_id}:raptor:{int(node.group(2))}.{int(node.group(3))}"
    m = PASSAGE_REF.match(ref)
    if m is None:
        return None
    doc_id = paper(m.group(1))
    return None if doc_id is None else f"{doc_id}:{int(m.group(2))}"


class Resolver:
    """What a reference in an answer ("3", "P3:17", "<doc_id>:17") points at among what was read, or None: one
    resolver for every path, built for what that path read (`of_sources`, `of_seen`)."""

    def __init__(self, resolve: Callable[[str], str | None]) -> None:
        self._resolve = resolve

    def __call__(self, ref: str) -> str | None:
        return self._resolve(ref)

    @classmethod
    def of_sources(cls, sources: Sequence[Source]) -> Resolver:
        """Numbered sources (single-shot, fallback, extractive): a source's number ("3"), or a passage id inside a
        source's chunk range; the key is the source's number, as text."""
        numbers = {str(s.n) for s in sources}
        chunks = {
            f"{s.doc_id}:{i}": str(s.n)
            for s in reversed(sources)
            for i in range(s.chunk_range[0], s.chunk_range[1] + 1)
        }
        chunks.update({s.citation: str(s.n) for s in reversed(sources) if ":raptor:" in s.citation})

        def resolve(ref: str) -> str | None:
            if ref.isdigit():
                return str(int(ref)) if str(int(ref)) in numbers else None
            if ref in chunks:
                return chunks[ref]
            doc_id, _, index = ref.rpartition(":")
            return chunks.get(f"{doc_id}:{int(index)}") if index.isdigit() else None

        return cls(resolve)

    @classmethod
    def of_seen(cls, seen: Mapping[str, object], paper: Callable[[str], str | None]) -> Resolver:
        """The passages an agent run was shown (`seen`, by full id, still growing): a passage id in either form, its
        paper mapped by `paper` (the run's labels); the key is the full id."""

        def resolve(ref: str) -> str | None:
            full = passage_id(ref, paper)
            return full if full is not None and full in seen else None

        return cls(resolve)


def ids_in(inside: str) -> list[str]:
    """Citation ids in the text of one [...] group ("a:1", "a:1, b:2", "a:1; a:2"); [] if it is not one."""
    parts = re.split(r"[,;]", inside)
    ids = [f"{m.group(1)}:{int(m.group(2))}" for p in parts if (m := _CITATION_ID.match(p))]
    return ids if len(ids) == len(parts) else []


@dataclass
class Grounded:
    """An answer's text with its citations checked (see `ground`)."""

    text: str
    order: list[str] = field(default_factory=list)  # the cited sources' keys, numbered 1.. in this order
    dropped: list[str] = field(default_factory=list)  # references as written that point at nothing read
    claimed: bool = False  # the answer cited anything at all

    @property
    def supported(self) -> bool:
        """True when at least one citation points at a passage that was read."""
        return bool(self.order)


def _refs(group: str, *, needs_id: bool) -> list[str] | None:
    """The references of one bracketed or parenthesised group, or None when it is not a citation group."""
    parts = [p for p in _PARTS.split(group) if p.strip()]
    refs = []
    for part in parts:
        m = _REF.match(part)
        if m is None:
            return None
        refs.append(m.group("ref"))
    if not refs or (needs_id and not any(":" in r for r in refs)):
        return None
    # "1:2" is a ratio and "10:30" a time, not a passage: an id's paper part has a letter or an ellipsis.
    if any(":" in r and not re.search(r"[A-Za-z.…]", r.split(":", 1)[0]) for r in refs):
        return None
    out: list[str] = []
    for ref in refs:
        span = re.fullmatch(r"(\d{1,3})\s*[-–]\s*(\d{1,3})", ref)
        if span and int(span.group(1)) <= int(span.group(2)) <= int(span.group(1)) + 20:
            out.extend(str(n) for n in range(int(span.group(1)), int(span.group(2)) + 1))
        else:
            out.append(re.sub(r"\s+", "", ref))
    return out


def _citations(text: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, references) of every citation in `text`, in order, not overlapping."""
    found: list[tuple[int, int, list[str]]] = []
    for m in BRACKET.finditer(text):
        if (refs := _refs(m.group(1), needs_id=False)) is not None:
            found.append((m.start(), m.end(), refs))
    for m in _PAREN.finditer(text):
        if (refs := _refs(m.group(1), needs_id=True)) is not None:
            found.append((m.start(), m.end(), refs))
    for m in _BARE_ID.finditer(text):
        found.append((m.start(), m.end(), [m.group(0)]))
    found.sort()
    kept: list[tuple[int, int, list[str]]] = []
    for item in found:
        if not kept or item[0] >= kept[-1][1]:
            kept.append(item)
    return kept


def _runs(text: str, cites: list[tuple[int, int, list[str]]]) -> list[tuple[int, int, list[str]]]:
    """Citations that follow each other ("[1] [7] and (see P2:3)") merged into runs."""
    runs: list[tuple[int, int, list[str]]] = []
    for start, end, refs in cites:
        if runs and _JOINER.match(text[runs[-1][1] : start]):
            runs[-1] = (runs[-1][0], end, runs[-1][2] + refs)
        else:
            runs.append((start, end, list(refs)))
    return runs


def _tidy(text: str, strip: bool = True) -> str:
    """Spacing and punctuation left behind by removed citations mended (line breaks and Markdown kept);
    `strip`: the text is whole (a streamed piece keeps the spaces at its ends)."""
    text = re.sub(r"\(\s*\)|\[\s*\]", "", text)
    text = re.sub(r"[ \t]+([.,;:!?)])", r"\1", text)
    text = re.sub(r"([,;:])(?:[ \t]*[,;:])+", r"\1", text)
    text = re.sub(r"[,;:]+(?=[.!?])", "", text)
    text = re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    lines = text.split("\n")
    text = "\n".join([*(line.rstrip() for line in lines[:-1]), lines[-1]])
    return text.strip() if strip else text


def _rewrite(text: str, resolve: Callable[[str], str | None], number: dict[str, int]) -> tuple[str, list[str], bool]:
    """`text` with its citations renumbered (`number` updated in place) or removed: (text, dropped, claimed)."""
    dropped: list[str] = []
    claimed = False
    out: list[str] = []
    pos = 0
    for start, end, refs in _runs(text, _citations(text)):
        claimed = True
        keys = []
        for ref in refs:
            key = resolve(ref)
            if key is None:
                dropped.append(ref)
            elif key not in keys:
                keys.append(key)
        before = text[pos:start]
        if keys:
            for k in keys:
                number.setdefault(k, len(number) + 1)
            out.append(before.rstrip(" \t") + " " if before.strip() else before)
            out.append("".join(f"[{number[k]}]" for k in keys))
        else:
            if _CLOSES_SENTENCE.match(text[end:]):
                before = _LEAD_IN.sub("", before)
            out.append(before)
        pos = end
    out.append(text[pos:])
    return "".join(out), dropped, claimed


def ground(
    text: str,
    resolve: Callable[[str], str | None],
    listed: Sequence[str] = (),
    numbering: dict[str, int] | None = None,
) -> Grounded:
    """Check and renumber the citations of `text`.

    `resolve(ref)` maps one reference as written ("P1:12", "<doc_id>:12", "3") to the key of a passage that was
    read, or None. `listed`: references the model gave apart from the text (the agent's `finish` sources); the
    valid ones are numbered after those the text uses. Valid citations become `[n]` (a run of them `[1][2]`);
    the rest are removed with a lead-in left dangling ("as shown in") and the punctuation mended.
    `numbering`: the numbers given so far; it is updated in place.
    """
    number: dict[str, int] = {} if numbering is None else numbering
    rewritten, dropped, claimed = _rewrite(text, resolve, number)
    for ref in listed:
        key = resolve(ref)
        if key is None:
            dropped.append(ref)
        else:
            number.setdefault(key, len(number) + 1)
    order = sorted(number, key=lambda k: number[k])
    return Grounded(
        text=_tidy(rewritten), order=order, dropped=list(dict.fromkeys(dropped)), claimed=claimed or bool(listed)
    )


UNSUPPORTED = (
    "None of this answer's citations points at a passage that was read: it is not supported by the sources listed."
)
NOT_CITED = "The model cited none of the sources: its answer is not tied to them."


def grounding_notes(grounded: Grounded) -> list[str]:
    """What the user is told about the citations that were removed or missing."""
    notes = []
    if grounded.dropped:
        n = len(grounded.dropped)
        which = f"{n} citations that point" if n > 1 else "1 citation that points"
        notes.append(f"Removed {which} at no passage that was read.")
    if not grounded.order:
        notes.append(UNSUPPORTED if grounded.claimed else NOT_CITED)
    return notes


# Words held back at the end of a streamed piece: a lead-in ("as shown in") or a citation may follow.
HELD_WORDS = 4
_AFTER_CITATION = re.compile(r"[\])](?:[\s,;]*(?:\band\b)?[\s,;]*)?$", re.I)


class CitationStream:
    """`ground` for an answer that arrives piece by piece: text is handed on as it comes, citations renumbered.

    The last few words (a lead-in such as "as shown in" that a removed citation would leave dangling) and
    anything inside an open bracket or parenthesis (a citation being written) are held back until what follows
    shows what they are; numbers follow first use, as `ground` gives them for the whole text, so the streamed
    answer and the final one cite alike.
    """

    def __init__(self, resolve: Callable[[str], str | None], on_text: Callable[[str], None]) -> None:
        self.resolve = resolve
        self.on_text = on_text
        self.numbers: dict[str, int] = {}
        self.streamed = False
        self._held = ""

    def feed(self, text: str) -> None:
        """Take the next piece of the answer; hand on what is settled."""
        buffer = self._held + text
        depth, last_open = 0, -1
        gaps: list[int] = []  # where whitespace outside brackets begins: places the text may be cut
        for i, ch in enumerate(buffer):
            if ch in "[(":
                depth, last_open = depth + 1, i
            elif ch in "])" and depth:
                depth -= 1
            elif (
                ch.isspace()
                and depth == 0
                and (i == 0 or not buffer[i - 1].isspace())
                and not _AFTER_CITATION.search(buffer, 0, i)  # another citation may join this one's run
            ):
                gaps.append(i)
        if depth and len(buffer) - last_open > 400:
            cut = len(buffer)  # an unclosed bracket this long is no citation: let it through
        else:
            open_at = last_open if depth else len(buffer)
            safe = [g for g in gaps if g < open_at]
            cut = safe[-HELD_WORDS] if len(safe) >= HELD_WORDS else 0
        ready, self._held = buffer[:cut], buffer[cut:]
        if ready:
            self._write(ready)

    def close(self) -> None:
        """Hand on whatever is still held back."""
        if self._held:
            self._write(self._held, last=True)
            self._held = ""

    def _write(self, text: str, last: bool = False) -> None:
        # Leading whitespace stays with the text it came with, so a removed citation takes its space along;
        # only the very end of the answer is trimmed, as `ground` trims the whole.
        piece = _tidy(_rewrite(text, self.resolve, self.numbers)[0], strip=False)
        piece = piece.rstrip() if last else piece
        if piece:
            self.streamed = True
            self.on_text(piece)
