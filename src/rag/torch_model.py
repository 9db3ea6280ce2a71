"""sentence-transformers models (the embedder, a cross-encoder), loaded with torch on CPU once per process and
never from the network.

Its own module because the embedder (embeddings.py, for batches of chunks), the ONNX export (onnx_model.py,
which traces the same model once) and the cross-encoder reranker (rerank.py) load them, and none of them should
import another.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..errors import ConfigError

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def load_sentence_transformer(name_or_path: str) -> Any:
    """Load a sentence-transformers model on CPU once per process; later calls share it."""
    return _load("SentenceTransformer", name_or_path, "sentence-transformers model")


def load_cross_encoder(ref: str) -> Any:
    """A sentence-transformers CrossEncoder from local files on CPU, loaded once per process."""
    return _load("CrossEncoder", ref, "cross-encoder")


def _load(kind: str, ref: str, what: str) -> Any:
    """The sentence-transformers class `kind` for `ref` from local files on CPU, shared by every later call."""
    with _MODELS_LOCK:
        model = _MODELS.get((kind, ref))
        if model is not None:
            return model
        # Never reach for the Hub: a missing model must fail fast, not hang on the network.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import sentence_transformers
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # its "Loading weights" bar would garble the CLI's output
        try:
            model = getattr(sentence_transformers, kind)(ref, device="cpu", local_files_only=True)
        except Exception as exc:  # OSError, ValueError, HF errors: all mean "not available locally"
            flat = " ".join(str(exc).split())
            raise ConfigError(
                f"cannot load {what} {ref!r} from local files (downloads are disabled): {flat[:200]}"
            ) from exc
        _MODELS[(kind, ref)] = model
        return model
