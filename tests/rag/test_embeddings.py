"""Embedders: the offline default model, the cache, specs, and an OpenAI-compatible endpoint on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from paperscope.errors import ConfigError
from paperscope.rag import onnx_model
from paperscope.rag.embeddings import (
    LOCAL_MODEL_DIM,
    LOCAL_MODEL_NAME,
    CachedEmbedder,
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_for,
    make_embedder,
)
from paperscope.rag.tokens import HFTokenCounter, WordCounter, default_model_dir


@cache
def local_embedder() -> CachedEmbedder:
    """One default embedder for the module (the model itself is shared process-wide anyway)."""
    return make_embedder("local")


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (_norm(a) * _norm(b))


# --- local model ---------------------------------------------------------------------------------


def test_local_embedder_is_offline_minilm() -> None:
    emb = local_embedder()
    _: Embedder = emb  # structurally an Embedder (checked by mypy)
    assert emb.name == LOCAL_MODEL_NAME == "local:all-MiniLM-L6-v2"
    assert emb.dim == LOCAL_MODEL_DIM == 384
    assert isinstance(emb.token_counter, HFTokenCounter)
    assert emb.max_tokens == emb.token_counter.max_tokens == 254
    vectors = emb.embed_documents(["Dense retrieval with dual encoders.", "A recipe for sourdough bread."])
    assert [len(v) for v in vectors] == [384, 384]
    assert all(abs(_norm(v) - 1.0) < 1e-4 for v in vectors)  # normalized embeddings


def test_local_embedder_is_semantic_and_query_matches_document() -> None:
    emb = local_embedder()
    query = emb.embed_query("how do neural retrievers rank passages")
    near, far = emb.embed_documents(
        ["Dense passage retrieval ranks passages with neural encoders.", "Bake for 40 min."]
    )
    assert _cos(query, near) > _cos(query, far) + 0.2
    text = "Dense passage retrieval ranks passages with neural encoders."
    assert emb.embed_query(text) == emb.embed_documents([text])[0]


def test_model_is_loaded_once_and_shared() -> None:
    a, b = make_embedder("local"), make_embedder("local")
    assert isinstance(a, SentenceTransformerEmbedder) and isinstance(b, SentenceTransformerEmbedder)
    assert a.model is b.model
    by_path = make_embedder(f"sentence-transformers:{default_model_dir()}")
    assert isinstance(by_path, SentenceTransformerEmbedder)
    assert by_path.model is a.model  # the same folder is the same model
    assert by_path.name == f"sentence-transformers:{default_model_dir()}"
    assert by_path.dim == 384
    assert isinstance(by_path.token_counter, HFTokenCounter)  # tokenizer.json in the folder


def test_empty_input() -> None:
    emb = make_embedder("local")
    assert emb.embed_documents([]) == []
    assert emb.calls == 0


# --- cache and batching ----------------------------------------------------------------------------


def test_batches_and_memory_cache() -> None:
    emb = make_embedder("local", batch_size=2)
    texts = [f"sentence number {i} about caching" for i in range(5)]
    first = emb.embed_documents(texts)
    assert (emb.calls, emb.embedded, emb.cache_hits) == (3, 5, 0)  # 2 + 2 + 1
    again = emb.embed_documents(texts)
    assert again == first
    assert (emb.calls, emb.embedded, emb.cache_hits) == (3, 5, 5)  # nothing re-embedded
    mixed = emb.embed_documents([texts[0], "a new sentence", texts[0]])
    assert mixed[0] == mixed[2] == first[0]
    assert (emb.calls, emb.embedded) == (4, 6)
    emb.embed_query(texts[1])
    assert emb.calls == 4


def test_progress_is_told_after_each_small_group() -> None:
    """An ingest's bar moves every 8 chunks the local model embeds (its groups), not once per batch of 64."""
    emb = make_embedder("local")
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.onnx is not None
    assert onnx_model.GROUP == 8
    texts = [f"progress sentence {i} about ferns growing in the shade" for i in range(20)]
    calls: list[int] = []
    vectors = emb.embed_documents(texts, on_progress=calls.append)
    assert vectors == emb.embed_documents(texts)  # the same vectors as without a callback
    assert calls == [8, 16, 20]
    calls.clear()
    emb.embed_documents(texts, on_progress=calls.append)
    assert calls == [20]  # from the cache: at once
    calls.clear()
    fresh = [*texts[:4], *(f"another sentence {i} about moss" for i in range(12))]
    emb.embed_documents(fresh, on_progress=calls.append)
    assert calls == [4, 12, 16]  # the cached first, then each group
    small = make_embedder("local", batch_size=10)
    calls.clear()
    small.embed_documents([f"batched sentence {i} about lichens" for i in range(20)], on_progress=calls.append)
    assert calls == [8, 10, 18, 20]  # groups within each batch of 10
    calls.clear()
    small.embed_documents(["twice the same text", "twice the same text", "once"], on_progress=calls.append)
    assert calls == [2, 3]  # a text given twice is embedded once, counted at the end


def test_disk_cache_survives_a_new_embedder(tmp_path: Path) -> None:
    texts = ["persisted vector one", "persisted vector two"]
    first = make_embedder("local", cache_dir=tmp_path)
    vectors = first.embed_documents(texts)
    first.close()
    assert (tmp_path / "embeddings.sqlite").is_file()
    second = make_embedder("local", cache_dir=tmp_path)
    assert second.embed_documents(texts) == vectors  # float32 either way: bit-identical
    assert (second.calls, second.cache_hits) == (0, 2)
    second.close()


def test_cache_key_includes_the_model(tmp_path: Path) -> None:
    """Two models sharing one cache file never see each other's vectors."""
    local = make_embedder("local", cache_dir=tmp_path)
    local.embed_documents(["shared text"])
    other = make_embedder(f"sentence-transformers:{default_model_dir()}", cache_dir=tmp_path)
    other.embed_documents(["shared text"])
    assert (other.calls, other.cache_hits) == (1, 0)
    local.close()
    other.close()


# --- specs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["nope", "local:extra", "sentence-transformers:", "openai:", "openai:m@x", "openai:m@0"]
)
def test_bad_specs(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(ConfigError):
        make_embedder(spec)


def test_missing_sentence_transformers_model_fails_fast_without_network() -> None:
    emb = make_embedder("sentence-transformers:no-such-org/no-such-model-xyz")
    with pytest.raises(ConfigError, match="no-such-model-xyz"):
        emb.embed_documents(["x"])


def test_openai_needs_a_key_or_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai:text-embedding-3-small")


# --- OpenAI-compatible endpoint on 127.0.0.1 -------------------------------------------------------------

FAKE_DIM = 8


def fake_vector(text: str) -> list[float]:
    """What the fake server answers for `text`: deterministic, dim FAKE_DIM."""
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 for b in digest[:FAKE_DIM]]


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(  # type: ignore[attr-defined]
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if self.path != "/v1/embeddings":
            self.send_error(404)
            return
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)]
        payload = json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_openai_endpoint_probe_batches_and_cache(openai_server: Any) -> None:
    emb = make_embedder("openai:fake-embed", batch_size=3)
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.name == "openai:fake-embed"
    assert isinstance(emb.token_counter, WordCounter) and emb.max_tokens == 8191
    assert openai_server.requests == []  # nothing is sent before it is needed
    assert emb.dim == FAKE_DIM  # discovered by one probe request
    assert len(openai_server.requests) == 1
    texts = [f"passage {i}" for i in range(7)]
    vectors = emb.embed_documents(texts)
    assert vectors == [pytest.approx(fake_vector(t), abs=1e-6) for t in texts]
    sent = openai_server.requests[1:]
    assert [len(r["body"]["input"]) for r in sent] == [3, 3, 1]
    assert all(r["path"] == "/v1/embeddings" and r["body"]["model"] == "fake-embed" for r in sent)
    assert all(r["auth"] == "Bearer test-key" for r in sent)
    assert all(isinstance(x, str) for r in sent for x in r["body"]["input"])  # raw text, not token ids
    emb.embed_documents(texts)
    emb.embed_query(texts[0])
    assert len(openai_server.requests) == 4  # all cached
    assert emb.cache_hits == 8


def test_openai_declared_dim_needs_no_probe_and_is_checked(openai_server: Any) -> None:
    emb = make_embedder(f"openai:fake-embed@{FAKE_DIM}")
    assert emb.dim == FAKE_DIM
    assert openai_server.requests == []
    wrong = make_embedder("openai:fake-embed@16")
    with pytest.raises(ConfigError, match="dim 8, expected 16"):
        wrong.embed_documents(["x"])


# --- a broken disk cache ----------------------------------------------------------------------------


def test_the_disk_cache_is_opened_only_when_something_is_embedded(tmp_path: Path) -> None:
    emb = make_embedder("local", cache_dir=tmp_path / "cache")
    assert emb.dim == LOCAL_MODEL_DIM and emb.name == LOCAL_MODEL_NAME
    assert not (tmp_path / "cache").exists()  # listing papers, opening a store: no cache needed
    emb.embed_documents(["now it is needed"])
    assert (tmp_path / "cache" / "embeddings.sqlite").is_file()
    emb.close()


def test_a_damaged_cache_file_is_moved_aside_and_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "embeddings.sqlite").write_bytes(b"this is not an sqlite database " * 200)
    emb = make_embedder("local", cache_dir=tmp_path)
    assert emb.embed_documents(["after the damage"])[0]
    emb.close()
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "embeddings.sqlite was damaged" in warning and "starting afresh" in warning
    assert [p.name.split("-")[0] for p in tmp_path.glob("embeddings.sqlite.damaged-*")] == ["embeddings.sqlite.damaged"]
    again = make_embedder("local", cache_dir=tmp_path)
    again.embed_documents(["after the damage"])
    assert again.cache_hits == 1  # the new cache works
    again.close()


def test_a_cache_that_cannot_be_opened_is_bypassed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "embeddings.sqlite").mkdir()  # a directory where the file should be
    emb = make_embedder("local", cache_dir=tmp_path)
    assert len(emb.embed_documents(["still embedded", "twice"])) == 2
    assert len(emb.embed_documents(["still embedded"])[0]) == LOCAL_MODEL_DIM  # the memory cache still works
    emb.close()
    assert sum("cannot be used" in r.getMessage() for r in caplog.records) == 1  # one warning, not one per call
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory should be")
    emb = make_embedder("local", cache_dir=blocked / "cache")
    assert emb.embed_documents(["no cache directory"])
    assert any("cannot be created" in r.getMessage() for r in caplog.records)


def test_a_cache_failing_mid_run_is_bypassed_for_the_rest_of_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emb = make_embedder("local", cache_dir=tmp_path)
    emb.embed_documents(["first text"])
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as other:  # someone else breaks the cache under us
        other.execute("DROP TABLE vectors")
    assert len(emb.embed_documents(["second text", "third text"])) == 2
    assert len(emb.embed_documents(["fourth text"])) == 1
    emb.close()
    messages = [r.getMessage() for r in caplog.records if "embedding cache" in r.getMessage()]
    assert len(messages) == 1 and "cannot read" in messages[0] and "not caching on disk" in messages[0]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only files anyway")
def test_a_read_only_cache_is_bypassed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = make_embedder("local", cache_dir=tmp_path)
    first.embed_documents(["cached once"])
    first.close()
    for p in tmp_path.iterdir():
        p.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        emb = make_embedder("local", cache_dir=tmp_path)
        assert emb.embed_documents(["cached once", "new text"])
        emb.close()
        assert any("embedding cache" in r.getMessage() for r in caplog.records)
    finally:
        tmp_path.chmod(0o755)


def test_the_embedder_of_settings_is_the_one_they_name(tmp_path: Path) -> None:
    from paperscope.config import Settings

    settings = Settings(home=tmp_path, embedding={"model": "local", "batch_size": 7, "runtime": "torch"})
    made = embedder_for(settings)
    assert isinstance(made, SentenceTransformerEmbedder)
    assert (made.batch_size, made.runtime, made._cache_dir) == (7, "torch", tmp_path / "cache")
    assert embedder_for(settings, cache=False)._cache_dir is None  # `parse`: nothing written


def test_token_counts_are_kept_for_the_last_texts_and_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers count the same passages again and again: a count comes from memory the second time, equal to the
    tokenizer's own, and only the last `_COUNTS_KEPT` texts are held."""
    from paperscope.rag import tokens

    monkeypatch.setattr(tokens, "_COUNTS_KEPT", 3)
    counter = HFTokenCounter(default_model_dir())
    texts = ["Dense passage retrieval.", "BM25 over index text.", "A reranker reads pairs.", "Milvus Lite."]
    first = [counter.count(t) for t in texts]
    encoded = [len(counter._tok.encode(t, add_special_tokens=False).ids) for t in texts]
    assert first == encoded and first[0] > 2
    assert list(counter._counted) == texts[1:]  # the oldest dropped
    assert [counter.count(t) for t in texts] == encoded
