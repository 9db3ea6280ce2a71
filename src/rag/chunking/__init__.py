"""Cut a Paper into chunks. A registry of strategies, all writing the DESIGN.md chunk fields.

Every strategy keeps chunks inside one section, numbers body chunks 0..N-1 over the
whole paper, and keeps "context header + text" within the embedding model's window.

Sizes are promised in characters too: a tokenizer may count a "word" of thousands of characters
(a base64 blob, a run of symbols, unspaced CJK) as one unknown token, so every chunk text holds at
most `CHARS_PER_TOKEN` characters per token of its budget and never more than `MAX_CHUNK_CHARS`
(with the header, within Milvus' 65,535-byte VARCHAR at 4 bytes a character). Such words are cut.

Layout: base.py (Chunk, ChunkOptions, the builder every chunker writes through, `chunk_paper`), paragraphs.py
(recursive, simple, markdown, sliding_window, parent_child), splitters.py (sentence, token, semantic, code).
Importing the package registers them all.
"""

from . import paragraphs, splitters  # noqa: F401  (each registers its chunkers)
from .base import (
    Chunk,
    ChunkKind,
    ChunkOptions,
    Strategy,
    chunk_paper,
    chunker,
    context_header,
    lines_in,
    max_chars,
    register,
)

__all__ = [
    "Chunk",
    "ChunkKind",
    "ChunkOptions",
    "Strategy",
    "chunk_paper",
    "chunker",
    "context_header",
    "lines_in",
    "max_chars",
    "register",
]
