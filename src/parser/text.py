"""Text clean-up: ligatures, whitespace, words hyphenated across line breaks."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u00ad": "",  # soft hyphen
        "\u00a0": " ",
        "\u2010": "-",
        "\u2011": "-",
    }
)
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_SPACES = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Replace ligatures and odd spaces, collapse whitespace."""
    return _SPACES.sub(" ", text.translate(_LIGATURES)).strip()


def vocabulary(lines: Iterable[str]) -> Counter[str]:
    """Lower-cased words (hyphenated compounds kept whole) seen in a document."""
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(w.lower() for w in _WORD.findall(line))
    return counts


def join_lines(lines: list[str], vocab: Counter[str] | None = None) -> str:
    """Join a paragraph's lines, re-joining words hyphenated at a line break.

    "retrie-" + "val" becomes "retrieval"; "fine-" + "tuning" stays "fine-tuning"
    when the document elsewhere writes "fine-tuning" and never "finetuning".
    """
    vocab = vocab or Counter()
    out = ""
    for raw in lines:
        line = normalize(raw)
        if not line:
            continue
        if not out:
            out = line
            continue
        m = re.search(r"([A-Za-z]+)-$", out)
        first = re.match(r"[a-z][A-Za-z]*", line)
        if m and first:
            head, tail = m.group(1), first.group(0)
            joined, compound = (head + tail).lower(), f"{head}-{tail}".lower()
            if vocab[compound] > vocab[joined]:
                out = out + line  # keep the hyphen: a real compound
            else:
                out = out[:-1] + line
        else:
            out = f"{out} {line}"
    return out
