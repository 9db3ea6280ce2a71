"""Model calls for the engine's operators (query transforms, index-time enrichers, the llm reranker).

`Generator` wraps any LangChain chat model (paperscope passes its bounded ChatOpenAI, so every call keeps the
timeout, the reply cap and the question's budget) and adds what operators need:
- a disk cache by (model, prompt name, prompt version, filled prompt): a repeated question, or a forced
  re-ingest with the same settings, makes no model call; editing a prompt file changes its version;
- concurrency (`concurrency` calls at once for independent items) under a requests-per-second limit;
- counts of calls made and cached, for cost reports and tests.
A failing call raises (LLMError from a bounded model); `generate_many` returns each item's text or exception, so
one bad item does not sink the others. Prompts are `src/prompts/*.md` files (see prompts/__init__.py).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..prompts import load_prompt

if TYPE_CHECKING:  # the chat model classes cost ~0.6 s to import; a question without a model never needs them
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)


def model_label(model: BaseChatModel) -> str:
    """The name a chat model goes by (its model name, else its class)."""
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class GenerationCache:
    """sqlite: key -> generated text, shared by every model and prompt (the key names both)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS generations (key TEXT PRIMARY KEY, text TEXT NOT NULL)")

    @classmethod
    def open(cls, path: Path | None) -> GenerationCache | None:
        """The cache at `path`, or None (with a warning) when none can be had there: calls are then not cached."""
        if path is None:
            return None
        try:
            return cls(path)
        except (OSError, sqlite3.Error) as exc:
            log.warning("generation cache %s cannot be used (%s); model outputs are not cached this run", path, exc)
            return None

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT text FROM generations WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, text: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO generations (key, text) VALUES (?, ?)", (key, text))

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Generator:
    """Cached, concurrent, rate-limited calls of one chat model with the prompts in src/prompts/."""

    def __init__(
        self,
        chat_model: BaseChatModel,
        cache_path: Path | None = None,
        *,
        concurrency: int = 4,
        requests_per_second: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        """`max_tokens`: a cap on each reply below the model's own (a query needs fewer tokens than an answer)."""
        self.model = chat_model
        self.name = model_label(chat_model)
        self.cache = GenerationCache.open(cache_path)
        self.concurrency = max(1, concurrency)
        self.interval = 1.0 / requests_per_second if requests_per_second else 0.0
        own = getattr(chat_model, "max_tokens", None)
        self.max_tokens = min(max_tokens, own) if max_tokens and isinstance(own, int) else max_tokens
        self.calls = 0  # model calls made
        self.cached = 0  # answers taken from the cache
        self._lock = threading.Lock()
        self._next_slot = 0.0

    def key(self, prompt: str, text: str) -> str:
        """The cache key of a filled prompt: the model, the prompt's name and version, the text."""
        version = hashlib.sha256(load_prompt(prompt).text.encode()).hexdigest()[:12]
        digest = hashlib.sha256(text.encode()).hexdigest()
        cap = f"|max{self.max_tokens}" if self.max_tokens else ""  # a shorter cap may cut the reply: another entry
        return f"{self.name}|{prompt}@{version}|{digest}{cap}"

    def generate(self, prompt: str, /, **fields: Any) -> str:
        """The model's reply to prompt `prompt` filled with `fields` (from the cache when it was asked before)."""
        text = load_prompt(prompt).format(**fields)
        key = self.key(prompt, text)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            with self._lock:
                self.cached += 1
            return hit
        self._wait_for_slot()
        from langchain_core.messages import HumanMessage  # with the model: listing operators must not load it

        reply = self.model.invoke([HumanMessage(content=text)], **self._limits())
        out = str(reply.text).strip()
        with self._lock:
            self.calls += 1
        if self.cache is not None and out:
            self.cache.put(key, out)  # an empty reply is no answer: asked again next time
        return out

    def generate_many(self, prompt: str, items: Sequence[Mapping[str, Any]]) -> list[str | Exception]:
        """`generate` for each item's fields, `concurrency` at a time; each result is the text or the exception."""

        def one(fields: Mapping[str, Any]) -> str | Exception:
            try:
                return self.generate(prompt, **fields)
            except Exception as exc:  # reported per item: one failure must not lose the others' work
                return exc

        if self.concurrency == 1 or len(items) < 2:
            return [one(f) for f in items]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(one, items))

    def cached_only(self, prompt: str, /, **fields: Any) -> str | None:
        """The cached reply, without calling the model (for cost estimates before any call)."""
        if self.cache is None:
            return None
        return self.cache.get(self.key(prompt, load_prompt(prompt).format(**fields)))

    def _limits(self) -> dict[str, Any]:
        """Call arguments that cap the reply: max_tokens for an OpenAI-style model (and its extra_body, which local
        servers read), nothing for a model without that setting."""
        if not self.max_tokens or not hasattr(self.model, "max_tokens"):
            return {}
        limits: dict[str, Any] = {"max_tokens": self.max_tokens}
        extra = getattr(self.model, "extra_body", None)
        if isinstance(extra, dict) and "max_tokens" in extra:
            limits["extra_body"] = {**extra, "max_tokens": self.max_tokens}
        return limits

    def _wait_for_slot(self) -> None:
        """Block until the requests-per-second limit lets the next call go."""
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.interval
        if slot > now:
            time.sleep(slot - now)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
