"""Four more chunkers for the registry of base.py: sentence, token, semantic and code.

They cut differently but build chunks alike, through base.py's builder: chunks stay inside a section,
carry the same metadata, number 0..N-1 and keep "context header + text" within the embedding window.

- sentence: sentences packed up to chunk_size tokens; a chunk always ends where a sentence does.
- token: windows of exactly chunk_size tokens of the embedder's tokenizer, overlapping by `overlap`.
- semantic: sentences grouped until the topic shifts (neighbouring sentences' embeddings far apart).
- code: fenced code blocks cut at class and function boundaries; the prose between them packed as paragraphs.
"""

from __future__ import annotations

import re
from functools import cache
from itertools import groupby
from typing import TYPE_CHECKING

import sentencex

from ...errors import ChunkingError
from ...parser.models import Paper, Paragraph, Section
from ..tokens import TokenCounter, TokenSpans

if TYPE_CHECKING:
    import numpy as np

from .base import (
    Chunk,
    ChunkOptions,
    _budget,
    _Builder,
    _cut_word,
    _Draft,
    _pack,
    _Piece,
    _pieces,
    _runs,
    _sections_in_order,
    _split,
    max_chars,
    register,
)

# --- sentences -----------------------------------------------------------------------------------------

# Abbreviations of scholarly prose that a sentence never ends on when a number, a bracket or a lower-case word
# follows ("Eq. (2)", "Figs. 4 and 5", "cf. [3]"); sentencex knows the common ones (e.g., et al., Fig. 3).
_ABBREVIATION = re.compile(
    r"\b(?:e\.g|i\.e|cf|vs|viz|approx|resp|ca|Eqs?|Figs?|Tabs?|Secs?|Sects?|Refs?|Nos?|Vols?|pp|Ch|Chap|Alg|"
    r"Thm|Def|Prop|Lem|Cor|Apps?|Appx|Ex|Exp)\.$",
    re.I,
)


def sentences(text: str) -> list[str]:
    """The sentences of `text` (whitespace-trimmed); copes with "e.g.", "et al.", "Fig. 3", "Eq. (2)", 93.5."""
    out: list[str] = []
    for raw in sentencex.segment("en", text):  # its rules for "en" also end sentences at 。！？
        s = raw.strip()
        if not s:
            continue
        if out and _ABBREVIATION.search(out[-1]) and (s[0].isdigit() or s[0] in "([" or s[0].islower()):
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    return out


def _sentence_pieces(paragraphs: list[tuple[int, Paragraph]], budget: int, tokens: TokenCounter) -> list[_Piece]:
    """Each paragraph's sentences as pieces (a sentence over the budget is cut by words)."""
    out: list[_Piece] = []
    for i, p in paragraphs:
        parts = [part for s in sentences(p.text) for part in _split(s, budget, tokens)]
        for j, (text, n) in enumerate(parts):
            late = j >= len(parts) / 2 and p.page_end != p.page  # the second half of a paragraph across pages
            out.append(_Piece(text, n, p.page_end if late else p.page, i, j == len(parts) - 1, j == 0))
    return out


@register("sentence")
def sentence(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Sentences packed up to chunk_size tokens; overlap repeats the last sentences of a paragraph split."""
    build = _Builder(paper, tokens, "sentence")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        for run in _runs(paragraphs):
            for draft in _pack(_sentence_pieces(run, budget, tokens), budget, min(opts.overlap, budget // 4)):
                build.add(section, header, draft)
    return build.chunks


# --- token windows -------------------------------------------------------------------------------------


def _tame(text: str, budget: int, tokens: TokenCounter) -> str:
    """`text` with each word too long for a window cut into spaced slices (see chunking._cut_word)."""
    return re.sub(rf"\S{{{budget + 1},}}", lambda m: " ".join(_cut_word(m.group(), budget, tokens)), text)


def _token_spans(text: str, tokens: TokenCounter) -> tuple[list[tuple[int, int]], list[int]]:
    """Where each token lies and how many tokens it counts for: the tokenizer's own tokens when the counter
    can place them, else whitespace words weighted by their token count."""
    if isinstance(tokens, TokenSpans):
        spans = [(a, b) for a, b in tokens.spans(text) if b > a]
        return spans, [1] * len(spans)
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    return words, [tokens.count(text[a:b]) for a, b in words]


def _window_pieces(
    paragraphs: list[tuple[int, Paragraph]], text: str, starts: list[int], spans: list[tuple[int, int]], used: int
) -> list[_Piece]:
    """The characters of a window's tokens (`spans`, `used` tokens) as one piece per paragraph they cover."""
    a, b = spans[0][0], spans[-1][1]
    out: list[_Piece] = []
    for (i, p), start in zip(paragraphs, starts, strict=True):
        end = start + len(p.text)
        lo, hi = max(a, start), min(b, end)
        if lo >= hi or not text[lo:hi].strip():
            continue
        late = lo - start > (end - start) / 2 and p.page_end != p.page
        page = p.page_end if late else p.page
        out.append(_Piece(text[lo:hi].strip(), 0, page, i, ends_paragraph=hi == end, starts_paragraph=lo == start))
    for piece in out:  # a window's tokens shared out by characters: only the sum matters to the builder
        piece.tokens = used * len(piece.text) // max(1, sum(len(q.text) for q in out))
    return out


@register("token")
def token(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Windows of chunk_size tokens over each section's text, overlapping by `overlap` tokens; a window ends
    at a word boundary when one lies inside it."""
    build = _Builder(paper, tokens, "token")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        limit = max_chars(budget)
        paragraphs = [(i, p.model_copy(update={"text": _tame(p.text, budget, tokens)})) for i, p in paragraphs]
        starts = [0]
        for _, p in paragraphs[:-1]:
            starts.append(starts[-1] + len(p.text) + 1)
        text = " ".join(p.text for _, p in paragraphs)
        spans, weights = _token_spans(text, tokens)
        opens_word = [k == 0 or spans[k][0] > spans[k - 1][1] for k in range(len(spans))]
        start = 0
        while start < len(spans):
            end, used = start, 0
            while end < len(spans) and used + weights[end] <= budget and spans[end][1] - spans[start][0] <= limit:
                used += weights[end]
                end += 1
            end = max(end, start + 1)
            if end < len(spans):  # back to the last word start inside the window, if there is one
                end = next((k for k in range(end, start, -1) if opens_word[k]), end)
            used = sum(weights[start:end])
            build.add(section, header, _Draft(_window_pieces(paragraphs, text, starts, spans[start:end], used)))
            if end >= len(spans):
                break
            back, kept = end, 0
            while back > start + 1 and kept + weights[back - 1] <= opts.overlap:
                back -= 1
                kept += weights[back]
            while back < end and not opens_word[back]:  # an overlap starts at a word too
                back += 1
            start = back
    return build.chunks


# --- semantic ------------------------------------------------------------------------------------------


def _unit(vectors: np.ndarray) -> np.ndarray:
    import numpy as np  # here, not above: every command imports the chunkers, only the semantic one needs numpy

    return np.asarray(vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12))


def _neighbour_distances(vectors: np.ndarray) -> np.ndarray:
    """Cosine distance between sentence k and k + 1, each seen with its neighbours on both sides (the mean of
    three sentence vectors): a short sentence alone says little about its topic. Embedding sentences once and
    averaging costs a third of embedding three-sentence windows."""
    import numpy as np

    if len(vectors) < 2:
        return np.zeros(0, dtype=np.float32)
    unit = _unit(vectors)
    padded = np.concatenate([unit[:1] * 0, unit, unit[:1] * 0])
    smooth = _unit(padded[:-2] + padded[1:-1] + padded[2:])
    return np.asarray(1.0 - np.sum(smooth[:-1] * smooth[1:], axis=1), dtype=np.float32)


@register("semantic")
def semantic(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Sentences grouped up to chunk_size tokens, cut where neighbouring sentences' embeddings are further
    apart than `breakpoint_percentile` percent of the paper's neighbours are (a quarter of the size at least)."""
    import numpy as np

    if opts.embed is None:
        raise ChunkingError(
            f"{paper.source or paper.title}: the semantic chunker needs an embedding model (ChunkOptions.embed)"
        )
    groups: list[tuple[Section, str, int, list[_Piece]]] = []
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        groups += [(section, header, budget, _sentence_pieces(run, budget, tokens)) for run in _runs(paragraphs)]
    texts = [p.text for *_, pieces in groups for p in pieces]
    vectors = np.asarray(opts.embed(texts) if texts else [], dtype=np.float32)
    if len(vectors) != len(texts):
        raise ChunkingError(f"{paper.source or paper.title}: {len(vectors)} embeddings for {len(texts)} sentences")
    distances: list[np.ndarray] = []
    at = 0
    for *_, pieces in groups:
        distances.append(_neighbour_distances(vectors[at : at + len(pieces)]))
        at += len(pieces)
    every = np.concatenate(distances) if distances else np.zeros(0)
    threshold = float(np.percentile(every, opts.breakpoint_percentile)) if len(every) else 0.0

    build = _Builder(paper, tokens, "semantic")
    for (section, header, budget, pieces), gaps in zip(groups, distances, strict=True):
        limit = max_chars(budget)
        current = _Draft()
        for k, piece in enumerate(pieces):
            full = current.tokens + piece.tokens > budget or current.chars + len(piece.text) > limit
            shift = k > 0 and gaps[k - 1] > threshold and current.tokens >= budget // 4
            if current.pieces and (full or shift):
                build.add(section, header, current)
                current = _Draft()
            current.pieces.append(piece)
        if current.pieces:
            build.add(section, header, current)
    return build.chunks


# --- code ----------------------------------------------------------------------------------------------

_FENCED = re.compile(r"\A```([^\n`]*)\n(.*)\n```\Z", re.S)
_ALIASES = {
    "py": "python", "python3": "python", "javascript": "js", "jsx": "js", "node": "js", "typescript": "ts",
    "tsx": "ts", "c++": "cpp", "cxx": "cpp", "cc": "cpp", "hpp": "cpp", "h": "c", "cs": "csharp", "c#": "csharp",
    "rs": "rust", "golang": "go", "rb": "ruby", "kt": "kotlin", "ps1": "powershell", "pl": "perl", "ex": "elixir",
    "hs": "haskell", "sc": "scala",
}  # fmt: skip


@cache
def _languages() -> frozenset[str]:
    """The code languages langchain's splitter knows (markup left out); imported on first use, like the splitter
    (langchain's import costs a third of a second every command would pay)."""
    from langchain_text_splitters import Language

    return frozenset(lang.value for lang in Language) - {"markdown", "rst", "latex", "html"}


# Methods as well as top-level definitions (langchain's Python list cuts at "\n\tdef " but not at four spaces).
_PYTHON_EXTRA = ["\nasync def ", "\n    def ", "\n    async def "]
# A block whose language is not named: the boundaries of the common languages, then lines.
_ANY_CODE = ["\nclass ", "\ndef ", "\nasync def ", "\nfunction ", "\nfunc ", "\nfn ", "\npub fn ", "\n    def "]


def _separators(info: str) -> list[str]:
    name = info.strip().lower()
    name = _ALIASES.get(name, name)
    if name in _languages():
        from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

        found = RecursiveCharacterTextSplitter.get_separators_for_language(Language(name))
        if name == "python":
            found = [*found[:2], *_PYTHON_EXTRA, *found[2:]]
        return found
    return [*_ANY_CODE, "\n\n", "\n", " ", ""]


def _code_pieces(i: int, p: Paragraph, budget: int, tokens: TokenCounter) -> list[_Piece]:
    """A fenced code paragraph cut at class/function boundaries, each part fenced again."""
    m = _FENCED.match(p.text)
    assert m is not None
    info, code = m.group(1).strip(), m.group(2)
    opening, closing = f"```{info}\n", "\n```"
    room = max(8, budget - tokens.count(opening + closing))
    chars = max(64, max_chars(budget) - len(opening + closing))

    def size(text: str) -> int:  # tokens, or characters at the rate max_chars allows, whichever binds
        return max(tokens.count(text), -(-len(text) * room // chars))

    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        separators=_separators(info),
        keep_separator="start",
        chunk_size=room,
        chunk_overlap=0,
        length_function=size,
        strip_whitespace=False,
    )
    parts = [part.strip("\n").rstrip() for part in splitter.split_text(code)]
    parts = [part for part in parts if part.strip()]
    return [
        _Piece(f"{opening}{part}{closing}", size(part), p.page, i, k == len(parts) - 1, k == 0)
        for k, part in enumerate(parts)
    ]


@register("code")
def code(paper: Paper, tokens: TokenCounter, opts: ChunkOptions) -> list[Chunk]:
    """Fenced code blocks (Markdown, text files) cut at class and function boundaries, a chunk per part; the
    paragraphs around them packed up to chunk_size as `recursive` does."""
    build = _Builder(paper, tokens, "code")
    for section, paragraphs in _sections_in_order(paper):
        header, budget = _budget(paper, section, tokens, opts.chunk_size)
        for run in _runs(paragraphs):
            for fenced, group in groupby(run, key=lambda item: _FENCED.match(item[1].text) is not None):
                items = list(group)
                if fenced:
                    for piece in (piece for i, p in items for piece in _code_pieces(i, p, budget, tokens)):
                        build.add(section, header, _Draft([piece]))
                else:
                    for draft in _pack(_pieces(items, budget, tokens), budget, min(opts.overlap, budget // 4)):
                        build.add(section, header, draft)
    return build.chunks
