"""A local sentence-transformers model run by ONNX Runtime instead of torch.

Why: a fresh `paperscope ask` spent most of its start importing torch and sentence-transformers to embed one
question (1.5-2 s on an idle 2-core machine, 8 s on a busy one); ONNX Runtime (already installed with PyMuPDF) and
the `tokenizers` library start in ~0.4 s. The vectors are the same: the graph is the model's own, exported by
torch once, and mean pooling and normalisation are done here as sentence-transformers does them (the tests hold
them to within 1e-5 of sentence-transformers' vectors, so a knowledge base embedded by either serves both).

The export runs once per model file, in the first process that needs it (a few seconds; it needs torch and the
`onnx` package), into `$XDG_CACHE_HOME/paperscope/onnx` (default ~/.cache/paperscope/onnx), written whole or not
at all. Only models made of Transformer -> mean Pooling -> Normalize (all-MiniLM-L6-v2 and most sentence
embedders) from a local folder are exported; anything else, or an export that fails, runs with torch as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_MODULES = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
]
_LOADED: dict[str, OnnxModel | None] = {}
GROUP = 8  # texts run at once, shortest first (see OnnxModel.embed)
_LOCK = threading.Lock()


def cache_dir() -> Path:
    """Where exported models are kept (shared by every knowledge base of the user)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paperscope" / "onnx"


def exportable(model_dir: Path) -> bool:
    """True for a local sentence-transformers folder whose vectors are mean-pooled and normalised token states."""
    try:
        modules = [m.get("type") for m in json.loads((model_dir / "modules.json").read_text())]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        seq = json.loads((model_dir / "sentence_bert_config.json").read_text()).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    return (
        modules == _MODULES
        and modes == {"pooling_mode_mean_tokens"}
        and isinstance(seq, int)
        and (model_dir / "tokenizer.json").is_file()
    )


def _onnx_file(model_dir: Path) -> Path:
    """The exported file of this model folder: named by the folder and its weights' sizes and times."""
    parts = [str(model_dir.resolve())]
    for weights in sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("*.bin")):
        st = weights.stat()
        parts.append(f"{weights.name}:{st.st_size}:{st.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return cache_dir() / f"{model_dir.parent.name}-{model_dir.name}-{digest}.onnx"


def export(model_dir: Path, target: Path) -> None:
    """Export the model's transformer (token states) to `target` with torch; whole or not at all."""
    import torch

    from .torch_model import load_sentence_transformer

    transformer = load_sentence_transformer(str(model_dir))[0].auto_model.eval()

    class TokenStates(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    sample = torch.ones(2, 8, dtype=torch.long)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "token_states")}
    try:
        with torch.no_grad():
            torch.onnx.export(
                TokenStates(transformer),
                (sample, sample, torch.zeros_like(sample)),
                str(partial),
                input_names=list(_INPUTS),
                output_names=["token_states"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,  # the TorchScript exporter: no onnxscript needed
            )
        os.replace(partial, target)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


class OnnxModel:
    """The exported model with its tokenizer: `embed(texts)` gives normalised mean-pooled vectors."""

    def __init__(self, onnx_file: Path, model_dir: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        seq = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(seq))  # what sentence-transformers reads of a text
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, min(4, os.cpu_count() or 1))
        # Idle worker threads sleep instead of spinning: on a busy machine spinning threads slowed a one-line
        # question tenfold (the same was seen with torch's threads).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str], on_group: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalised mean-pooled vectors of `texts`, in their order; `on_group(done)` hears after each group how
        many of `texts` are embedded so far (a progress bar that moves every GROUP texts, not once a batch).

        The texts run shortest first in small groups: each group is padded only to its own longest text, and
        attention costs the square of that width. On 2 cores, chunks of real papers in batches of 64 embed at 21
        texts/s as one padded batch, 34 in sorted groups of 16 and 37 in groups of 8 (torch: 25;
        benchmarks/embed_bench.py). The vectors do not change: padding is masked out.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        parts = []
        for start in range(0, len(order), GROUP):
            parts.append(self._run([encodings[i] for i in order[start : start + GROUP]]))
            if on_group is not None:
                on_group(min(start + GROUP, len(order)))
        vectors = np.vstack(parts)
        out = np.empty_like(vectors)
        out[order] = vectors  # back in the order the texts came
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        states = np.asarray(
            self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})[0]
        )
        weights = mask[..., None].astype(np.float32)
        mean = (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(mean, axis=1, keepdims=True)
        vectors: np.ndarray = (mean / np.clip(norms, 1e-12, None)).astype(np.float32)
        return vectors


# The int8 file is named by how it was quantised: a file another recipe left in the cache (every op, per tensor)
# has other vectors, and a knowledge base built with this recipe must never be searched with them.
INT8_RECIPE = "int8-matmul-perchannel"


def quantize(source: Path, target: Path) -> None:
    """The int8 model of an exported one: its matrix products' weights quantised per output channel, activations
    at run time (dynamic); whole or not at all. Only the MatMuls: quantising every op moved vectors to 0.94 cosine of
    the model's, these alone keep 0.994 on average (0.984 at worst) on chunks of real papers."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        quantize_dynamic(
            str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
        )
        os.replace(partial, target)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def load(model_dir: Path, *, int8: bool = False) -> OnnxModel | None:
    """The ONNX model of a local sentence-transformers folder, exported on first use (and quantised, for `int8`);
    None when the folder is not of the kind exported or the export fails (torch then runs the fp32 model; the int8
    model has no other runtime). Loaded once per process."""
    key = f"{model_dir.resolve()}{':int8' if int8 else ''}"
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        model: OnnxModel | None = None
        if exportable(model_dir):
            exported = _onnx_file(model_dir)
            target = exported.with_name(f"{exported.stem}.{INT8_RECIPE}.onnx") if int8 else exported
            try:
                if not exported.is_file():
                    export(model_dir, exported)
                if int8 and not target.is_file():
                    quantize(exported, target)
                model = OnnxModel(target, model_dir)
            except Exception as exc:  # no onnx package, a read-only cache, a graph ORT rejects: torch runs it
                with contextlib.suppress(OSError):
                    target.unlink(missing_ok=True)  # a damaged file is exported again by the next process
                then = "cannot run (it has no other runtime)" if int8 else "runs with torch"
                log.warning("embedding model %s%s %s: the ONNX export failed (%s)", model_dir.name, ":int8" * int8,
                            then, exc)  # fmt: skip
        _LOADED[key] = model
        return model
