"""File paths as the catalogue stores them: printable, filterable, and reversible.

A file name may hold control characters or bytes that are not UTF-8 (Python hands those over as lone
surrogates). Neither can go into a Milvus filter literal or a terminal, so stored paths escape them:
a backslash doubles, and each such character becomes `\\xNN` or `\\uNNNN`. `unescape_path` gives the
original path back, so a stored source can be opened again (re-ingest, `check --repair`).
"""

from __future__ import annotations

import re
from pathlib import Path

# C0 and C1 controls, DEL, bidi embeddings/overrides and isolates, lone surrogates.
_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})")


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\\":
        return "\\\\"
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_path(path: str | Path) -> str:
    """The path as stored and shown: unchanged unless it holds a backslash or an unprintable character."""
    return _UNSAFE.sub(_escape, str(path))


def unescape_path(stored: str) -> Path:
    """The path `escape_path` was given."""
    return Path(_ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), stored))
