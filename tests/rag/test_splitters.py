"""The sentence, token, semantic and code chunkers, on a real PDF and on Markdown with code."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from paperscope.errors import ChunkingError
from paperscope.parser import Paper, parse_file, parse_markdown
from paperscope.rag.chunking import Chunk, ChunkOptions, chunk_paper, max_chars
from paperscope.rag.chunking.splitters import sentences
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.tokens import WordCounter, local_token_counter

REAL = "osdi2004_mapreduce.pdf"


@pytest.fixture(scope="module")
def real_paper(shared_papers: Path) -> Paper:
    return parse_file(shared_papers / REAL)


def body(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.kind == "chunk"]


def assert_uniform(paper: Paper, chunks: list[Chunk], strategy: str, budget: int) -> None:
    """What every chunker promises: numbered 0..N-1, inside a section, the shared metadata, within budget."""
    counter = local_token_counter()
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        section = paper.sections[c.metadata["section_id"]]
        assert c.section_title == section.title and c.metadata["strategy"] == strategy
        assert {"page_end", "captions", "is_caption", "section_id"} <= set(c.metadata)
        assert counter.count(c.text) <= budget and len(c.text) <= max_chars(budget), (c.chunk_index, c.text[:80])
        assert counter.count(c.index_text) <= counter.max_tokens


# --- sentences --------------------------------------------------------------------------------------------


def test_sentences_cope_with_scholarly_abbreviations_and_decimals() -> None:
    text = (
        "Transformers (Vaswani et al., 2017) dominate NLP, e.g. in translation. As shown in Fig. 3, accuracy rises "
        "to 93.5% with larger models, i.e. 1.3B parameters. We use Eq. (2) and Table 1. Results are in Figs. 4 and "
        "5. Is it novel? Yes! cf. Appendix A."
    )
    assert sentences(text) == [
        "Transformers (Vaswani et al., 2017) dominate NLP, e.g. in translation.",
        "As shown in Fig. 3, accuracy rises to 93.5% with larger models, i.e. 1.3B parameters.",
        "We use Eq. (2) and Table 1.",
        "Results are in Figs. 4 and 5.",
        "Is it novel?",
        "Yes!",
        "cf. Appendix A.",
    ]
    assert sentences("我们提出了一种新方法。它很好！") == ["我们提出了一种新方法。", "它很好！"]


def test_sentence_chunks_end_where_sentences_end(real_paper: Paper) -> None:
    chunks = body(chunk_paper(real_paper, local_token_counter(), "sentence", ChunkOptions(chunk_size=120)))
    assert_uniform(real_paper, chunks, "sentence", 120)
    counter = local_token_counter()
    whole = 0
    for c in chunks:
        # A table's rows are its sentences: a chunk of a table ends where a row ends.
        ends = [
            s
            for p in real_paper.paragraphs
            if p.section_id == c.metadata["section_id"]
            for s in (p.text.splitlines() if p.table else sentences(p.text))
        ]
        if any(c.text.endswith(s) for s in ends):
            whole += 1
        else:  # only a sentence longer than the budget may be cut inside
            assert any(counter.count(s) > 100 for s in ends), c.text[-120:]
    assert whole >= 0.97 * len(chunks)
    # Chunks fill up: packing sentences leaves fewer, fuller chunks than one paragraph at a time.
    recursive = body(chunk_paper(real_paper, counter, "recursive", ChunkOptions(chunk_size=120)))
    assert len(chunks) < len(recursive)
    assert not any(re.search(r"\b(Fig|Eq|e\.g|i\.e|al)\.$", c.text) for c in chunks)


# --- token windows ------------------------------------------------------------------------------------------


def test_token_windows_are_full_overlapping_and_within_the_window(real_paper: Paper) -> None:
    counter = local_token_counter()
    options = ChunkOptions(chunk_size=100, overlap=20)
    chunks = body(chunk_paper(real_paper, counter, "token", options))
    assert_uniform(real_paper, chunks, "token", 100)
    by_section: dict[int, list[Chunk]] = {}
    for c in chunks:
        by_section.setdefault(c.metadata["section_id"], []).append(c)
    pairs = overlapping = 0
    for section_id, run in by_section.items():
        text = " ".join(p.text for p in real_paper.paragraphs if p.section_id == section_id)
        for c in run:
            assert c.text in text or all(piece in text for piece in c.text.split(" ")[:5])
        for before, after in itertools.pairwise(run):
            pairs += 1
            assert counter.count(before.text) >= 100 - 12, before.text  # full, less the word that did not fit
            # The next window starts inside this one (unless its last word alone is longer than the overlap).
            overlapping += after.text[:20] in before.text[-200:]
    assert pairs >= 20 and overlapping >= 0.9 * pairs


def test_token_windows_without_a_tokenizer_count_words(real_paper: Paper) -> None:
    counter = WordCounter(400)
    chunks = body(chunk_paper(real_paper, counter, "token", ChunkOptions(chunk_size=100, overlap=10)))
    assert chunks and all(counter.count(c.text) <= 100 + 2 for c in chunks)  # WordCounter adds one per call
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))


# --- semantic -----------------------------------------------------------------------------------------------

PASTA = [
    "Boil a large pot of salted water for the pasta.",
    "Add the spaghetti and stir so that it does not stick.",
    "Cook the noodles for nine minutes until al dente.",
    "Meanwhile fry garlic in olive oil over a low flame.",
    "Drain the pasta and toss it with the garlic oil.",
    "Serve the spaghetti with grated parmesan cheese.",
]
ORBITS = [
    "A satellite in low Earth orbit circles the planet every ninety minutes.",
    "Its orbital velocity is close to eight kilometres per second.",
    "Raising the orbit requires a prograde burn at perigee.",
    "A Hohmann transfer moves the spacecraft between two circular orbits.",
    "Geostationary satellites orbit at an altitude of about 35,786 kilometres.",
    "Atmospheric drag slowly lowers satellites in low orbits.",
]


def test_semantic_cuts_where_the_topic_changes(local_embedder: CachedEmbedder) -> None:
    paper = parse_markdown(f"# Mixed\n\n## Abstract\n\nA note.\n\n## 1 Notes\n\n{' '.join(PASTA + ORBITS)}\n")
    options = ChunkOptions(chunk_size=200, embed=local_embedder.embed_documents)
    chunks = [
        c for c in body(chunk_paper(paper, local_token_counter(), "semantic", options)) if c.section_title == "1 Notes"
    ]
    assert [c.text for c in chunks] == [" ".join(PASTA), " ".join(ORBITS)]
    # One paragraph, one topic: no cut inside.
    paper = parse_markdown(f"# One\n\n## Abstract\n\nA note.\n\n## 1 Notes\n\n{' '.join(PASTA)}\n")
    chunks = [
        c for c in body(chunk_paper(paper, local_token_counter(), "semantic", options)) if c.section_title == "1 Notes"
    ]
    assert [c.text for c in chunks] == [" ".join(PASTA)]


def test_semantic_on_a_pdf(sample_pdfs: dict[str, Path], local_embedder: CachedEmbedder) -> None:
    paper = parse_file(sample_pdfs["flashrank"])
    options = ChunkOptions(chunk_size=150, embed=local_embedder.embed_documents)
    chunks = body(chunk_paper(paper, local_token_counter(), "semantic", options))
    assert_uniform(paper, chunks, "semantic", 150)
    sentence = body(chunk_paper(paper, local_token_counter(), "sentence", ChunkOptions(chunk_size=150, overlap=0)))
    assert len(chunks) > len(sentence)  # cuts at topic shifts as well as at the size
    assert " ".join(c.text for c in chunks) == " ".join(c.text for c in sentence)  # the same text, cut elsewhere


def test_semantic_needs_an_embedder(real_paper: Paper) -> None:
    with pytest.raises(ChunkingError, match="the semantic chunker needs an embedding model"):
        chunk_paper(real_paper, local_token_counter(), "semantic")
    with pytest.raises(ChunkingError, match=r"0 embeddings for \d+ sentences"):
        chunk_paper(real_paper, local_token_counter(), "semantic", ChunkOptions(embed=lambda texts: []))


# --- code ---------------------------------------------------------------------------------------------------

CODE_DOC = '''# A Tiny Library

## Abstract

We describe a tiny library for caching.

## 2 Implementation

The cache is a dictionary with an eviction policy. See Fig. 2 for the layout.

```python
# a comment, not a heading
import time


class LRUCache:
    """Least recently used cache."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: dict[str, object] = {}

    def get(self, key: str) -> object | None:
        value = self.items.pop(key, None)
        if value is not None:
            self.items[key] = value
        return value


def timed(fn):
    def wrap(*args):
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            print(time.perf_counter() - started)
    return wrap
```

The eviction runs in constant time.

~~~js
function add(a, b) {
  return a + b;
}

function sub(a, b) {
  return a - b;
}
~~~
'''


@pytest.mark.parametrize("suffix", [".md", ".txt"])
def test_code_blocks_cut_at_classes_and_functions(tmp_path: Path, suffix: str) -> None:
    source = tmp_path / f"library{suffix}"
    source.write_text(CODE_DOC)
    paper = parse_file(source)
    assert [s.title for s in paper.sections] == ["Abstract", "2 Implementation"]  # "# a comment" is code
    chunks = body(chunk_paper(paper, local_token_counter(), "code", ChunkOptions(chunk_size=60)))
    assert_uniform(paper, chunks, "code", 60)
    code = [c.text for c in chunks if c.text.startswith("```")]
    assert all(c.endswith("\n```") for c in code)
    firsts = [c.split("\n")[1] for c in code]
    assert firsts == [
        "# a comment, not a heading",
        "class LRUCache:",
        "    def __init__(self, size: int) -> None:",
        "    def get(self, key: str) -> object | None:",
        "def timed(fn):",
        "function add(a, b) {",
    ]
    assert (
        code[-1] == "```js\nfunction add(a, b) {\n  return a + b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n```"
    )
    prose = [c.text for c in chunks if not c.text.startswith("```")]
    assert prose == [
        "We describe a tiny library for caching.",
        "The cache is a dictionary with an eviction policy. See Fig. 2 for the layout.",
        "The eviction runs in constant time.",
    ]
    # At the default size the whole class and the whole decorator stay whole.
    wide = [c.text for c in body(chunk_paper(paper, local_token_counter(), "code")) if c.text.startswith("```py")]
    assert len(wide) == 1 and "class LRUCache:" in wide[0] and "def timed(fn):" in wide[0]


def test_code_chunker_on_a_pdf_packs_paragraphs_as_recursive_does(real_paper: Paper) -> None:
    counter = local_token_counter()
    code = body(chunk_paper(real_paper, counter, "code"))
    recursive = body(chunk_paper(real_paper, counter, "recursive"))
    assert [c.text for c in code] == [c.text for c in recursive]
    assert {c.metadata["strategy"] for c in code} == {"code"}
