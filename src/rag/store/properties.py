"""What a knowledge base keeps of its settings, as properties of its chunks collection (rag/kb_settings.py reads
and changes them): `paperscope.settings`, written here when the kb is created, and `paperscope.overrides`."""

from __future__ import annotations

import json

from ...config import Settings
from ...settings_layers import flatten
from ..embeddings import LOCAL_INT8_NAME, LOCAL_MODEL_NAME

PROP_SETTINGS = "paperscope.settings"
PROP_OVERRIDES = "paperscope.overrides"
#: Saved when a kb is created.
CREATED = (
    "embedding.model",
    "chunking.strategy",
    "chunking.chunk_size",
    "chunking.overlap",
    "chunking.parent_size",
    "chunking.child_size",
)
#: Fixed for a kb's life: its vectors were made by this model.
FIXED = frozenset({"embedding.model"})


def spec_of(spec: str, embedder_name: str) -> str:
    """The embedding spec to save for a kb built by the embedder named `embedder_name` from settings' `spec`:
    `spec` when it names that embedder, else one made from the name (an embedder handed to the store)."""
    provider, _, arg = spec.strip().partition(":")
    named = {
        "local": {"": LOCAL_MODEL_NAME, "int8": LOCAL_INT8_NAME}.get(arg.strip().lower()),
        "sentence-transformers": f"sentence-transformers:{arg}",
        "openai": f"openai:{arg.partition('@')[0]}",
    }.get(provider.lower())
    if named == embedder_name:
        return spec.strip()
    return {LOCAL_MODEL_NAME: "local", LOCAL_INT8_NAME: "local:int8"}.get(embedder_name, embedder_name)


def created_properties(settings: Settings, embedder_name: str, dim: int) -> dict[str, str]:
    """The collection properties that save a new kb's settings (the store adds them when it creates a kb)."""
    flat = flatten(settings.model_dump(mode="json"))
    saved = {name: flat[name] for name in CREATED}
    saved["embedding.model"] = spec_of(settings.embedding.model, embedder_name)
    return {PROP_SETTINGS: json.dumps(saved, sort_keys=True)}
