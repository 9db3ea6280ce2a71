"""The local model on ONNX Runtime: the same vectors as sentence-transformers, exported once, torch as the fallback."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from paperscope.rag import onnx_model
from paperscope.rag.embeddings import SentenceTransformerEmbedder, make_embedder
from paperscope.rag.tokens import default_model_dir

TEXTS = [
    "What dataset does the TableFormer paper use?",
    "short",
    # Longer than the 256 tokens the model reads: both runtimes cut it at the same place.
    "We count sea otters in 412 satellite images of kelp canopy with a detector trained on labelled crops. " * 30,
    "Ünïcödé, numbers 3.14 and symbols ±≤ in one sentence; 中文 too.",
]


def test_onnx_vectors_are_sentence_transformers_vectors() -> None:
    onnx, torch = make_embedder("local", runtime="onnx"), make_embedder("local", runtime="torch")
    assert isinstance(onnx, SentenceTransformerEmbedder) and onnx.onnx is not None and torch.onnx is None
    a = np.array(onnx.embed_documents(TEXTS))
    b = np.array(torch.embed_documents(TEXTS))
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert np.abs(a - b).max() < 1e-5  # one batch of texts of very different lengths (padding is masked)
    alone = np.array([onnx.embed_query(t) for t in TEXTS[:2]])
    assert np.abs(alone - b[:2]).max() < 1e-5
    assert onnx.name == torch.name  # one knowledge base serves both runtimes


def test_a_batch_runs_shortest_first_in_groups_and_comes_back_in_order() -> None:
    """More texts than a group holds, their lengths shuffled: each vector is the one its text gets on its own."""
    model = make_embedder("local", runtime="onnx")
    assert isinstance(model, SentenceTransformerEmbedder) and model.onnx is not None
    texts = [f"passage {i}: " + "kelp canopy otters " * ((i * 7) % 23) for i in range(3 * onnx_model.GROUP + 1)]
    together = np.asarray(model.onnx.embed(texts))
    alone = np.vstack([model.onnx.embed([t]) for t in texts])
    assert together.shape == (len(texts), 384)
    assert np.abs(together - alone).max() < 1e-5


def test_only_mean_pooled_normalised_models_are_exported(tmp_path: Path) -> None:
    assert onnx_model.exportable(default_model_dir())
    copy = tmp_path / "model"
    shutil.copytree(default_model_dir(), copy, ignore=shutil.ignore_patterns("*.safetensors"))
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert not onnx_model.exportable(copy)  # CLS pooling: torch runs it
    assert not onnx_model.exportable(tmp_path / "missing")
    assert make_embedder("sentence-transformers:some-org/hub-name", runtime="onnx").onnx is None  # not a folder


def test_a_failed_export_falls_back_to_torch_and_a_damaged_file_is_exported_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(onnx_model, "_LOADED", {})
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    with caplog.at_level(logging.WARNING, logger="paperscope.rag.onnx_model"):
        emb = make_embedder("local", runtime="onnx")
        vector = emb.embed_query("kelp canopy otters")
    assert emb.onnx is None and len(vector) == 384  # embedded by torch
    assert "runs with torch" in caplog.text

    monkeypatch.setattr(onnx_model, "_LOADED", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    exported = onnx_model._onnx_file(default_model_dir())
    exported.parent.mkdir(parents=True)
    exported.write_bytes(b"half an onnx file")
    assert onnx_model.load(default_model_dir()) is None and not exported.exists()  # dropped, torch this run
    monkeypatch.setattr(onnx_model, "_LOADED", {})
    model = onnx_model.load(default_model_dir())  # the next process exports it again
    assert model is not None and exported.is_file() and not list(exported.parent.glob("*.partial"))
    assert np.abs(model.embed(["kelp canopy otters"])[0] - np.array(vector)).max() < 1e-5


def test_the_int8_model_is_a_variant_of_its_own_kept_apart(tmp_path: Path) -> None:
    """Its vectors are near the model's but not the same: it has its own name (a knowledge base built with one
    refuses the other), its own cache entries, and no torch fallback that would quietly give the fp32 vectors."""
    from paperscope.config import Settings
    from paperscope.errors import ConfigError, StoreError
    from paperscope.rag.embeddings import LOCAL_INT8_NAME, LOCAL_MODEL_NAME
    from paperscope.rag.store import PaperStore

    int8, fp32 = make_embedder("local:int8"), make_embedder("local")
    assert (int8.name, fp32.name) == (LOCAL_INT8_NAME, LOCAL_MODEL_NAME)
    a, b = np.array(int8.embed_documents(TEXTS)), np.array(fp32.embed_documents(TEXTS))
    cosines = (a * b).sum(axis=1)
    # Close (0.994 on average on chunks of papers; short texts move more), and really quantised.
    assert cosines.min() > 0.9 and np.abs(a - b).max() > 1e-4
    with pytest.raises(ConfigError, match="int8 variant runs on ONNX Runtime only"):
        make_embedder("local:int8", runtime="torch")
    settings = Settings(home=tmp_path)
    PaperStore(settings, int8).close()
    with pytest.raises(
        StoreError, match=rf"built with {LOCAL_INT8_NAME} \(dim 384\); this run uses {LOCAL_MODEL_NAME}"
    ):
        PaperStore(settings, fp32)


def test_an_int8_file_another_recipe_left_in_the_cache_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The int8 file is named by its recipe: a file an older recipe quantised (other vectors) under the plain
    `.int8.onnx` name is left alone, and the model is quantised again under its own name."""
    assert onnx_model.load(default_model_dir()) is not None
    real = onnx_model._onnx_file(default_model_dir())
    monkeypatch.setattr(onnx_model, "_LOADED", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    exported = onnx_model._onnx_file(default_model_dir())
    exported.parent.mkdir(parents=True)
    shutil.copy(real, exported)
    shutil.copy(real, exported.with_name(f"{exported.stem}.int8.onnx"))  # "int8" that is not: the fp32 model
    int8, fp32 = onnx_model.load(default_model_dir(), int8=True), onnx_model.load(default_model_dir())
    assert int8 is not None and fp32 is not None
    assert np.abs(int8.embed(TEXTS[:1]) - fp32.embed(TEXTS[:1])).max() > 1e-4  # really quantised
    assert exported.with_name(f"{exported.stem}.{onnx_model.INT8_RECIPE}.onnx").is_file()
