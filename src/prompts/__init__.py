"""Prompt loader: every prompt is a ``src/prompts/<name>.md`` file, read once and checked when formatted.

Placeholders are ``str.format`` fields (``{query}``); ``{{`` and ``}}`` are literal braces. Formatting with a
missing or an unexpected value is a `ConfigError` naming the file, so a prompt and its caller cannot drift apart
silently (``str.format`` alone would ignore extra values and fail with a bare KeyError on missing ones).
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..errors import ConfigError

__all__ = ["Prompt", "load_prompt"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class Prompt:
    """One prompt file: its text and the placeholders it expects."""

    name: str
    text: str
    placeholders: frozenset[str]
    path: str

    @property
    def filename(self) -> str:
        """The file the prompt came from, e.g. ``router.md``."""
        return f"{self.name}.md"

    def format(self, **values: Any) -> str:
        """Fill every placeholder; a missing or unexpected value raises `ConfigError` naming the file."""
        missing = sorted(self.placeholders - values.keys())
        unexpected = sorted(values.keys() - self.placeholders)
        problems = []
        if missing:
            problems.append(f"missing value(s) for placeholder(s) {', '.join(missing)}")
        if unexpected:
            problems.append(f"unexpected value(s) {', '.join(unexpected)} (no such placeholder)")
        if problems:
            expected = ", ".join(sorted(self.placeholders)) or "none"
            raise ConfigError(f"prompt {self.filename}: {'; '.join(problems)}; placeholders are: {expected}")
        return self.text.format(**values)


def _placeholders(name: str, text: str) -> frozenset[str]:
    """The named ``{fields}`` of a prompt; positional or malformed fields are an error in the file."""
    fields: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # e.g. a lone "}" or an unclosed "{"
        raise ConfigError(
            f"prompt {name}.md: malformed placeholder ({exc}); write literal braces as {{{{ }}}}"
        ) from exc
    for _literal, field, _spec, _conversion in parsed:
        if field is None:
            continue
        # "{a.b}" / "{a[0]}" look up attributes of the value "a": the placeholder is "a".
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        if not root.isidentifier():
            raise ConfigError(f"prompt {name}.md: placeholder {{{field}}} must be a name, e.g. {{query}}")
        fields.add(root)
    return frozenset(fields)


@functools.cache
def load_prompt(name: str) -> Prompt:
    """Read ``prompts/<name>.md`` (once per process) and find its placeholders."""
    package = resources.files(__name__)
    resource = package / f"{name}.md"
    if not _NAME.match(name) or not resource.is_file():
        raise ConfigError(f"unknown prompt {name!r}: no file {resource}")
    text = resource.read_text(encoding="utf-8")
    return Prompt(name=name, text=text, placeholders=_placeholders(name, text), path=str(resource))
