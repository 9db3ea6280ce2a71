"""The sentence-transformers model, loaded with torch on CPU once per process and never from the network.

Its own module because both the embedder (embeddings.py, for batches of chunks) and the ONNX export
(onnx_model.py, which traces the same model once) load it, and neither should import the other.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..errors import ConfigError

_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def load_sentence_transformer(name_or_path: str) -> Any:
    """Load a sentence-transformers model on CPU once per process; later calls share it."""
    with _MODELS_LOCK:
        model = _MODELS.get(name_or_path)
        if model is not None:
            return model
        # Never reach for the Hub: a missing model must fail fast, not hang on the network.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # its "Loading weights" bar would garble the CLI's output

        try:
            model = SentenceTransformer(name_or_path, device="cpu", local_files_only=True)
        except Exception as exc:  # OSError, ValueError, HF errors: all mean "not available locally"
            raise ConfigError(
                f"cannot load sentence-transformers model {name_or_path!r} from local files "
                f"(downloads are disabled): {exc}"
            ) from exc
        _MODELS[name_or_path] = model
        return model
