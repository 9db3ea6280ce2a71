"""The user file: `$PAPERSCOPE_HOME/config.toml`, sections as the parts of Settings.

```toml
[retrieval]
k = 7

[llm]
model = "qwen2.5:14b"
api_key = "sk-..."          # secrets may live here or in the environment
```

It sits above the environment and below a knowledge base's own settings and the request (see
settings_layers.py). A missing file is an empty layer; anything wrong in it is one ConfigError line
naming the file, the line and the setting: a TOML syntax error, an unknown setting (with the closest
valid name), a value of the wrong type. `home` cannot be set here: the file lives in it.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .settings_layers import Layer, SettingError, flatten, part_names, validate_values

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
