"""Settings in layers, each value from the highest layer that gives it, and where every value came from.

From the lowest to the highest: defaults, the environment (PAPERSCOPE_*, MILVUS_URI and friends, see
config.py), the user file `$PAPERSCOPE_HOME/config.toml` (below), the knowledge base (the
settings saved when it was created and its own overrides, rag/kb_settings.py) and the request (CLI
flags, an HTTP body). `load_layers` is the one way to build them; `LayeredSettings.provenance` tells
each value's source.

Settings are named with dots, as in the file's sections: `retrieval.k`, `llm.model`, `home`. Every layer
is validated on its own, so an error names the layer it is in (the file, the variable, the knowledge base).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr, TypeAdapter, ValidationError
from pydantic_settings import SettingsError

from .backend_logs import env_problem
from .config import ENV_PREFIX, Settings, check_home, env_error, env_validation_error, hint, unknown_env
from .errors import ConfigError

log = logging.getLogger(__name__)

Source = Literal["default", "env", "user", "kb", "request"]
#: Lowest first: a value of a later source wins.
SOURCES: tuple[Source, ...] = ("default", "env", "user", "kb", "request")
#: Shown masked by `provenance`, never echoed in an error.
SECRETS = frozenset({"llm.api_key", "store.token", "service.api_key"})
MASK = "********"
#: Variables read by their usual names; each wins over its PAPERSCOPE_* spelling.
ENV_ALIASES = {
    "store.uri": "MILVUS_URI",
    "store.token": "MILVUS_TOKEN",
    "llm.model": "PAPERSCOPE_LLM_MODEL",
    "llm.base_url": "OPENAI_BASE_URL",
    "llm.api_key": "OPENAI_API_KEY",
    "service.api_key": "PAPERSCOPE_API_KEY",
}
_PATH = TypeAdapter(Path)


def _parts() -> dict[str, type[BaseModel]]:
    """{part name: its model} for the nested parts of Settings (retrieval, llm, ...)."""
    out: dict[str, type[BaseModel]] = {}
    for name, info in Settings.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out[name] = info.annotation
    return out


def part_names() -> list[str]:
    """The groups of settings ([retrieval], [llm], ...), as the user file's sections."""
    return list(_parts())


def setting_names() -> list[str]:
    """Every setting by its dotted name, in the order Settings declares them: home, parsing.use_outline, ..."""
    parts = _parts()
    names: list[str] = []
    for name in Settings.model_fields:
        names.extend(f"{name}.{sub}" for sub in parts[name].model_fields) if name in parts else names.append(name)
    return names


def closest_setting(name: str) -> str | None:
    """The valid dotted name nearest to `name`: by the whole name, else by its last part (`k` -> `retrieval.k`)."""
    names = setting_names()
    found = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.6)
    if found:
        return found[0]
    last = {n.rpartition(".")[2]: n for n in reversed(names)}  # the first part's field wins a shared name
    found = difflib.get_close_matches(name.lower().rpartition(".")[2], list(last), n=1, cutoff=0.75)
    return last[found[0]] if found else None


class SettingError(ConfigError):
    """One setting is wrong; `name` is its dotted name, `text` the message without saying where it was given."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        super().__init__(text)

    def at(self, where: str) -> ConfigError:
        """The same error as one line starting with where the setting was given ("" for nowhere in particular)."""
        return ConfigError(f"{where}: {self.text}" if where else self.text)


def check_name(name: str) -> None:
    """Raise SettingError unless `name` is a setting: an unknown one names the closest valid name."""
    if name in setting_names():
        return
    parts = _parts()
    if name in parts:
        first = next(iter(parts[name].model_fields))
        raise SettingError(name, f"{name} is a group of settings, not one (e.g. {name}.{first})")
    close = closest_setting(name)
    raise SettingError(name, f"unknown setting {name}" + (f"; did you mean {close}?" if close else ""))


def _shown(name: str, value: Any) -> str:
    """A given value for an error message: secrets never, long values cut."""
    if name in SECRETS:
        return "the value given"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted values checked and converted by Settings' own fields (`"7"` -> 7 for an int); SettingError else."""
    out: dict[str, Any] = {}
    by_part: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        check_name(name)
        part, _, sub = name.partition(".")
        if sub:
            by_part.setdefault(part, {})[sub] = value
            continue
        try:
            out[name] = _PATH.validate_python(value)
        except ValidationError as exc:
            why = f"invalid setting {name}: {exc.errors()[0]['msg']} (got {_shown(name, value)})"
            raise SettingError(name, why) from None
    parts = _parts()
    for part, given in by_part.items():
        try:
            model = parts[part].model_validate(given)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = f"{part}.{first['loc'][0]}" if first["loc"] else part
            got = f" (got {_shown(name, first['input'])})" if first["type"] != "missing" else ""
            raise SettingError(name, f"invalid setting {name}: {first['msg']}{got}") from None
        out.update({f"{part}.{sub}": getattr(model, sub) for sub in given})
    return out


def flatten(nested: Mapping[str, Any]) -> dict[str, Any]:
    """{"retrieval": {"k": 7}} -> {"retrieval.k": 7}; dotted keys stay as they are; a part given whole is opened."""
    out: dict[str, Any] = {}
    parts = _parts()
    for key, value in nested.items():
        if key in parts and isinstance(value, Mapping):
            out.update({f"{key}.{sub}": v for sub, v in value.items()})
        elif key in parts and isinstance(value, BaseModel):
            out.update({f"{key}.{sub}": getattr(value, sub) for sub in type(value).model_fields})
        else:
            out[key] = value
    return out


def _nest(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        part, _, sub = name.partition(".")
        if sub:
            out.setdefault(part, {})[sub] = value
        else:
            out[part] = value
    return out


@dataclass(frozen=True)
class Layer:
    """The values one source gives (dotted names), and where each came from, for messages and provenance."""

    source: Source
    values: Mapping[str, Any]
    #: name -> where the value was given: a variable, the file (with its line), a knowledge base, a flag.
    origins: Mapping[str, str] = field(default_factory=dict)
    #: What this layer is, in a message: "the user file /x/config.toml", "knowledge base 'papers'".
    label: str = ""
    #: Names no other layer may give another value for (a knowledge base's embedding model).
    fixed: frozenset[str] = frozenset()
    #: name -> a few words said with the value in messages, e.g. "dim 384" for an embedding model.
    notes: Mapping[str, str] = field(default_factory=dict)

    def origin(self, name: str) -> str:
        """Where this layer's value of `name` came from."""
        return self.origins.get(name) or self.label or self.source


class Provenance(BaseModel):
    """One effective setting: its value (secrets masked), its source and where exactly it came from."""

    name: str
    value: Any
    source: Source
    origin: str


def _json_value(name: str, value: Any) -> Any:
    if name in SECRETS or isinstance(value, SecretStr):
        return None if value is None else MASK
    if isinstance(value, Path):
        return str(value)
    return value


@dataclass(frozen=True)
class LayeredSettings:
    """The effective Settings and the layers they were built from (lowest first)."""

    settings: Settings
    layers: tuple[Layer, ...]

    def layer(self, source: Source) -> Layer | None:
        """The layer of `source`, if there is one."""
        return next((layer for layer in self.layers if layer.source == source), None)

    def with_kb(self, kb: Layer | None) -> LayeredSettings:
        """The same layers with `kb` as the knowledge-base layer (None: without one), merged again."""
        rest = [layer for layer in self.layers if layer.source != "kb"]
        if kb is not None:
            rest.insert(next((i for i, lay in enumerate(rest) if lay.source == "request"), len(rest)), kb)
        return LayeredSettings(_merge(rest), tuple(rest))

    def with_request(self, request: Mapping[str, Any] | None, label: str = "the request") -> LayeredSettings:
        """The same layers with `request` (nested or dotted; None values not given) as the request layer, merged
        again: a server builds each request's settings over the layers it read once at start."""
        rest = [layer for layer in self.layers if layer.source != "request"]
        rest.append(request_layer(request, label))
        return LayeredSettings(_merge(rest), tuple(rest))

    def source_of(self, name: str) -> tuple[Source, str]:
        """(source, origin) of the effective value of setting `name`."""
        for layer in reversed(self.layers):
            if name in layer.values:
                return layer.source, layer.origin(name)
        return "default", "default"

    def provenance(self) -> list[Provenance]:
        """Every setting (dotted, in declaration order) with its effective value and where it came from."""
        effective = flatten(self.settings.model_dump())
        out = []
        for name in setting_names():
            source, origin = self.source_of(name)
            out.append(Provenance(name=name, value=_json_value(name, effective[name]), source=source, origin=origin))
        return out

    def provenance_json(self) -> dict[str, dict[str, Any]]:
        """{"retrieval.k": {"value": 7, "source": "user"}, ...}: every setting, secrets masked."""
        return {p.name: {"value": p.value, "source": p.source} for p in self.provenance()}


def _defaults() -> dict[str, Any]:
    """Every setting at its default, nested; built without reading the environment."""
    return Settings.model_construct().model_dump()


def _check_fixed(layers: Iterable[Layer]) -> None:
    """A value a knowledge base fixed at creation may be given by no other layer with another value."""
    layers = list(layers)
    for kb in layers:
        for name in sorted(kb.fixed & set(kb.values)):
            for other in layers:
                if other is kb or name not in other.values or other.values[name] == kb.values[name]:
                    continue
                note = f" ({kb.notes[name]})" if name in kb.notes else ""
                raise ConfigError(
                    f"{kb.label} was created with {name} {kb.values[name]!r}{note} and keeps it; "
                    f"{other.values[name]!r} from {other.origin(name)} differs: remove that setting, "
                    "or use another knowledge base"
                )


def _merge(layers: Iterable[Layer]) -> Settings:
    """Settings from the layers, the highest winning value by value; every layer was validated on its own."""
    layers = list(layers)
    _check_fixed(layers)
    data = _defaults()
    for layer in layers:
        for name, value in layer.values.items():
            part, _, sub = name.partition(".")
            if sub:
                data[part][sub] = value
            else:
                data[part] = value
    try:
        # Every field is given, so the environment (which BaseSettings reads here too) changes nothing.
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"])
        origin = next((lay.origin(name) for lay in reversed(layers) if name in lay.values), "the settings")
        raise ConfigError(f"invalid setting {name} from {origin}: {first['msg']}") from exc


# --- the user file: $PAPERSCOPE_HOME/config.toml ---------------------------------------------------------------
#
#     [retrieval]
#     k = 7
#
#     [llm]
#     model = "qwen2.5:14b"
#     api_key = "sk-..."          # secrets may live here or in the environment
#
# It sits above the environment and below a knowledge base's own settings and the request. A missing file is an
# empty layer; anything wrong in it is one ConfigError line naming the file, the line and the setting: a TOML
# syntax error, an unknown setting (with the closest valid name), a value of the wrong type. `home` cannot be
# set here: the file lives in it.

USER_FILE = "config.toml"
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\s\"']+?)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\s\"']+?)\s*=")


def user_file(home: Path) -> Path:
    """Where the user file of the data directory `home` is."""
    return Path(home).expanduser() / USER_FILE


def _plain(key: str) -> str:
    return re.sub(r"[\s\"']", "", key)


def line_of(text: str, name: str) -> int | None:
    """The line (1-based) that sets the dotted setting `name` in TOML `text`, if it can be found."""
    table = ""
    for number, line in enumerate(text.splitlines(), 1):
        if m := _TABLE.match(line):
            table = _plain(m.group(1))
            continue
        if m := _KEY.match(line):
            key = _plain(m.group(1))
            full = f"{table}.{key}" if table else key
            if full == name:
                return number
    # A whole section that is wrong ([retrival]) is named by its header.
    for number, line in enumerate(text.splitlines(), 1):
        if (m := _TABLE.match(line)) and _plain(m.group(1)) == name:
            return number
    return None


def read_user_file(path: Path) -> Layer:
    """The user layer from the TOML file at `path` (empty when there is none); ConfigError, one line, if bad."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Layer("user", {}, label=f"the user file {path}")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the settings file: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        at = _TOML_AT.search(msg)
        where = f"{path}:{at.group(1)}" if at else str(path)
        column = f" (column {at.group(2)})" if at else ""
        raise ConfigError(f"{where}: TOML syntax error: {_TOML_AT.sub('', msg)}{column}") from exc
    values: dict[str, Any] = {}
    sections = part_names()
    for key, value in data.items():
        if isinstance(value, dict) and key not in sections:
            close = difflib.get_close_matches(key, sections, n=1, cutoff=0.6)
            hint = f"did you mean [{close[0]}]?" if close else f"the sections are {', '.join(sections)}"
            raise _at(path, text, SettingError(key, f"unknown section [{key}]; {hint}"))
        values.update(flatten({key: value}))
    if "home" in values:
        why = "home cannot be set here: this file lives in it; set PAPERSCOPE_HOME"
        raise _at(path, text, SettingError("home", why))
    try:
        checked = validate_values(values)
    except SettingError as exc:
        raise _at(path, text, exc) from None
    origins = {name: f"{path}:{line}" if (line := line_of(text, name)) else str(path) for name in checked}
    return Layer("user", checked, origins, label=f"the user file {path}")


def _at(path: Path, text: str, exc: SettingError) -> ConfigError:
    """`exc` as one line starting with the file and the line that sets the setting."""
    line = line_of(text, exc.name)
    return exc.at(f"{path}:{line}" if line else str(path))


def env_layer() -> Layer:
    """What the environment sets: PAPERSCOPE_* (nested as PART__FIELD or a PART JSON object) and the usual names.

    Raises ConfigError naming the variable; unknown PAPERSCOPE_* variables are logged as warnings.
    """
    for name in unknown_env(os.environ):
        log.warning("unknown setting %s is ignored%s", name, hint(name))
    if problem := env_problem():
        log.warning("%s", problem)
    try:
        env = Settings()
    except SettingsError as exc:
        raise env_error(exc) from exc
    except ValidationError as exc:
        raise env_validation_error(exc, os.environ) from exc
    values = flatten(env.model_dump(exclude_unset=True))
    given = {k.upper() for k in os.environ}
    origins = {}
    for name in values:
        part, _, sub = name.partition(".")
        var = f"{ENV_PREFIX}{part.upper()}" + (f"__{sub.upper()}" if sub else "")
        origins[name] = var if var in given or not sub else f"{ENV_PREFIX}{part.upper()}"
    for name, var in ENV_ALIASES.items():
        raw = os.environ.get(var)
        if raw:
            try:
                values.update(validate_values({name: raw}))
            except SettingError as exc:
                raise exc.at(var) from None
            origins[name] = var
    return Layer("env", values, origins, label="the environment")


def request_layer(request: Mapping[str, Any] | None = None, label: str = "the request") -> Layer:
    """A request's values (nested {"retrieval": {"k": 7}} or dotted {"retrieval.k": 7}); None means not given."""
    values = {k: v for k, v in flatten(request or {}).items() if v is not None}
    if "home" in values:
        raise ConfigError(f"home cannot be set by {label}: it comes from PAPERSCOPE_HOME")
    return Layer("request", validate_values(values), label=label)


def load_layers(request: Mapping[str, Any] | None = None, kb: Layer | None = None) -> LayeredSettings:
    """Settings from every layer: `request` > `kb` > user file > environment > defaults, and where each value came
    from. The one way paperscope builds its settings (`config.load_settings` returns `.settings`).

    `request` is nested ({"retrieval": {"k": 7}}) or dotted ({"retrieval.k": 7}); None values are not given.
    `kb` is a knowledge base's own layer (`rag.kb_settings.KbSettings.layer()`; `rag.kb_settings.load_kb_layers`
    reads it for the kb the other layers name). Raises ConfigError, one line naming the file, variable or setting.
    """

    env = env_layer()
    home = env.values.get("home", Settings.model_fields["home"].default)
    check_home(home)
    user = read_user_file(user_file(home))
    req = request_layer(request)
    layers = [env, user, *([kb] if kb is not None else []), req]
    return LayeredSettings(_merge(layers), tuple(layers))


def load_settings(
    request: Mapping[str, Any] | None = None, kb: Layer | None = None, **parts: dict[str, Any]
) -> Settings:
    """Settings from every layer: `request` and `parts` (e.g. store={"kb": "x"}; None values are not given) >
    `kb` (a knowledge base's layer, see rag/kb_settings.py) > `$PAPERSCOPE_HOME/config.toml` > the environment
    (including MILVUS_URI and friends) > defaults. See `load_layers`, which also says where
    each value came from.

    Raises ConfigError (one line, naming the file, variable or setting); unknown PAPERSCOPE_* variables are
    logged as warnings with the closest valid name.
    """
    return load_layers({**flatten(request or {}), **flatten(parts)}, kb).settings
