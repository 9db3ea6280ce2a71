"""A knowledge base's own settings, kept with it in Milvus: the settings layer between the request and the user file.

They live as properties of the kb's chunks collection (`{kb}_chunks`), beside `paperscope.embedder` and
`paperscope.dim`, so a Milvus server carries them to every machine that uses the kb:

- `paperscope.settings`: what the kb was created with (JSON, dotted names): its embedding model, fixed
  for its life (another model asked for by any layer is a ConfigError), and its chunking settings;
- `paperscope.overrides`: what `paperscope config --kb NAME --set retrieval.k=7` stored (`--unset` removes).

The store writes the first at creation (store/properties.py). A kb made before these existed has no
`paperscope.settings`: its embedding model is read from `paperscope.embedder` when that says which spec it
was (local, sentence-transformers:...), so it is fixed all the same.

Every function works on a pymilvus MilvusClient (`store.client`, or the one `peek_client` opens before any
store is, since the embedder a store is opened with depends on these settings).
"""

from __future__ import annotations

import json
import logging
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import ConfigError, StoreError
from ..settings_layers import Layer, LayeredSettings, SettingError, check_name, load_layers, validate_values
from .embeddings import LOCAL_INT8_NAME, LOCAL_MODEL_NAME
from .lite_files import lite_path
from .operator_settings import OperatorSettingError, check_operators, check_values
from .store import PROP_DIM, PROP_EMBEDDER, lite_damage, peek_client
from .store.properties import CREATED, FIXED, PROP_OVERRIDES, PROP_SETTINGS

if TYPE_CHECKING:
    from pymilvus import MilvusClient  # type: ignore[import-untyped]

log = logging.getLogger(__name__)


def not_per_kb(name: str) -> str | None:
    """Why setting `name` cannot be one of a kb's own settings, or None when it can."""
    if name == "home" or name.startswith("store."):
        return "it says where the knowledge base is, so it cannot be kept in it"
    if name.startswith("service."):
        return "it belongs to the server (`paperscope serve`), which serves every knowledge base"
    if name == "llm.api_key":
        return "a secret is not stored in the knowledge base: set it in config.toml or OPENAI_API_KEY"
    if name in FIXED:
        return "it is fixed when the knowledge base is created: use another knowledge base for another one"
    return None


def chunks_collection(kb: str) -> str:
    """The collection whose properties hold the kb's settings."""
    return f"{kb}_chunks"


@dataclass(frozen=True)
class KbSettings:
    """A knowledge base's own settings: those saved at creation and its overrides (dotted names)."""

    kb: str
    created: Mapping[str, Any] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)
    #: The vector dimension it was created with (None when not recorded).
    dim: int | None = None

    @property
    def label(self) -> str:
        return f"knowledge base {self.kb!r}"

    @property
    def embedding_model(self) -> str | None:
        """The embedding model spec it was created with, when known."""
        model = self.created.get("embedding.model")
        return str(model) if model is not None else None

    def layer(self) -> Layer:
        """The settings layer of this kb: overrides over created values; its embedding model fixed."""
        values = {**self.created, **self.overrides}
        origins = {name: f"{self.label}, as created" for name in self.created}
        origins |= {name: f"{self.label}, by config --set" for name in self.overrides}
        notes = {"embedding.model": f"dim {self.dim}"} if self.dim else {}
        return Layer("kb", values, origins, label=self.label, fixed=FIXED & set(self.created), notes=notes)


def _load_json(kb: str, prop: str, raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StoreError(f"knowledge base {kb!r}: its property {prop} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise StoreError(f"knowledge base {kb!r}: its property {prop} is not a JSON object")
    return data


def _legacy_model(props: Mapping[str, str]) -> dict[str, Any]:
    """The embedding spec of a kb made before settings were saved, when its embedder's name tells it."""
    name = props.get(PROP_EMBEDDER, "")
    if name in (LOCAL_MODEL_NAME, LOCAL_INT8_NAME):
        return {"embedding.model": "local" if name == LOCAL_MODEL_NAME else "local:int8"}
    if name.startswith("sentence-transformers:"):
        return {"embedding.model": name}
    return {}  # openai:<model> may have been asked for with @dim: the store's own check guards it


def read_kb_settings(client: MilvusClient, kb: str, lite: Path | None = None) -> KbSettings | None:
    """The settings kept with knowledge base `kb`, or None when it has no chunks collection (does not exist).

    Saved values that are no setting any more are dropped with a warning; overrides are checked as when set.
    `lite`: the Milvus Lite data `client` serves, where a collection it cannot read is looked into.
    """
    collection = chunks_collection(kb)
    try:
        if not client.has_collection(collection):
            return _from_the_catalogue(client, kb)
        desc = client.describe_collection(collection)
    except Exception as exc:
        # Milvus Lite reads the collection's files to describe it, and names none of them when one is damaged.
        found = lite_damage(lite, kb) if lite is not None else None
        said = found or f"reading its settings from collection {collection} failed: {' '.join(str(exc).split())}"
        raise StoreError(f"knowledge base {kb!r}: {said}") from exc
    props: dict[str, str] = desc.get("properties") or {}
    created = _load_json(kb, PROP_SETTINGS, props.get(PROP_SETTINGS)) or _legacy_model(props)
    for name in [n for n in created if n not in CREATED]:
        log.warning("knowledge base %r: saved setting %s is not one any more; ignored", kb, name)
        created.pop(name)
    dim = props.get(PROP_DIM)
    try:
        created = validate_values(created)
    except SettingError as exc:
        raise exc.at(f"knowledge base {kb!r}") from None
    overrides = _load_json(kb, PROP_OVERRIDES, props.get(PROP_OVERRIDES))
    try:
        overrides = _check_overrides(overrides)
    except SettingError as exc:
        hint = f" (`paperscope config --kb {kb} --unset {exc.name}` removes it)"
        raise ConfigError(f"knowledge base {kb!r}: {exc.text}{hint}") from None
    return KbSettings(kb, created, overrides, int(dim) if dim and dim.isdigit() else None)


def _from_the_catalogue(client: MilvusClient, kb: str) -> KbSettings | None:
    """A kb whose chunks collection vanished (and its settings with it) under a catalogue that lists papers: its
    embedding model as the catalogue names it, so that repairing it embeds with the model its papers were; None
    when there is no catalogue either."""
    papers = f"{kb}_papers"
    if not client.has_collection(papers):
        return None
    props: dict[str, str] = client.describe_collection(papers).get("properties") or {}
    dim = props.get(PROP_DIM)
    return KbSettings(kb, validate_values(_legacy_model(props)), {}, int(dim) if dim and dim.isdigit() else None)


def _check_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """Override values checked against Settings (and against the names a kb may set); SettingError else."""
    for name in values:
        check_name(name)
        if why := not_per_kb(name):
            raise SettingError(name, f"{name} cannot be a knowledge base's own setting: {why}")
    checked = validate_values(values)
    _check_names_of_parts(checked)
    return checked


def _check_names_of_parts(values: Mapping[str, Any]) -> None:
    """Names Settings takes as free text: a chunker, a retriever, a reranker, transforms, enrichers, each checked
    against the registry before a knowledge base keeps it."""
    from . import registry

    name, choices = "chunking.strategy", registry.choices("chunker")
    if name in values and values[name] not in choices:
        raise SettingError(name, f"invalid setting {name}: {values[name]!r} is not one of {', '.join(choices)}")
    try:
        check_values(values)
    except OperatorSettingError as exc:
        raise SettingError(exc.setting, f"invalid setting {exc.setting}: {exc.reason}") from None


def parse_assignment(text: str) -> tuple[str, Any]:
    """`retrieval.k=7` -> ("retrieval.k", 7): the value read as a TOML value (7, 0.5, true, "x"), else as text."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(f"--set {text!r}: expected NAME=VALUE, e.g. retrieval.k=7")
    raw = raw.strip()
    try:
        value: Any = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return name, value


def save_overrides(
    client: MilvusClient, kb: str, set_values: Mapping[str, Any] | None = None, unset: Iterable[str] = ()
) -> KbSettings:
    """Store `set_values` (dotted) as kb overrides and remove the `unset` ones; returns the kb's settings after.

    Values are checked against Settings first (ConfigError, one line, naming the setting); nothing is saved
    then. StoreError when the kb does not exist.
    """
    current = read_kb_settings(client, kb)
    if current is None:
        raise StoreError(f"knowledge base {kb!r} does not exist (`paperscope ingest PATH --kb {kb}` creates it)")
    unset = list(unset)
    for name in unset:
        try:
            check_name(name)
        except SettingError as exc:
            raise exc.at("--unset") from None
    try:
        new_values = _check_overrides(set_values or {})
    except SettingError as exc:
        raise exc.at(f"knowledge base {kb!r}") from None
    overrides = {k: v for k, v in current.overrides.items() if k not in unset} | new_values
    data = {k: _jsonable(v) for k, v in overrides.items()}
    try:
        client.alter_collection_properties(
            chunks_collection(kb), properties={PROP_OVERRIDES: json.dumps(data, sort_keys=True)}
        )
    except Exception as exc:
        raise StoreError(f"knowledge base {kb!r}: saving its settings failed: {exc}") from exc
    return KbSettings(kb, current.created, overrides, current.dim)


def _jsonable(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


def peek_kb_settings(settings: Settings, *, keep_warm: bool = False) -> KbSettings | None:
    """The settings kept with the kb `settings.store.kb` names, read before any store is opened; None when
    that kb does not exist yet. `keep_warm`: a Milvus Lite server started for this stays up for the store opened
    next (see `peek_client`)."""
    with peek_client(settings, keep_warm=keep_warm) as client:
        return None if client is None else read_kb_settings(client, settings.store.kb, lite_path(settings))


def load_kb_layers(
    request: Mapping[str, Any] | None = None, *, ignore_store_errors: bool = False, keep_warm: bool = False
) -> LayeredSettings:
    """Settings from every layer for the kb they name (store.kb): request > its own settings > user file > env >
    defaults. `ignore_store_errors`: when Milvus cannot be read, go on without the kb layer (for `doctor`, which
    reports the store itself). `keep_warm`: the caller opens the store next (see `peek_client`). ConfigError or
    StoreError, one line, else.
    """
    layered = load_layers(request)
    try:
        found = peek_kb_settings(layered.settings, keep_warm=keep_warm)
    except StoreError:
        if not ignore_store_errors:
            raise
        found = None
    layered = layered if found is None else layered.with_kb(found.layer())
    check_operators(layered.settings)
    return layered
