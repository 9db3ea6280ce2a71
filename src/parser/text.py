"""Text clean-up: ligatures, whitespace, words hyphenated across line breaks."""

from __future__ import annotations

import re
import unicodedata
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
# LaTeX PDFs often place a spacing accent before its letter ("´a", "¨o", "˘g") or after it ("ˆı").
_COMBINING = {
    "\u00b4": "\u0301",  # ´ acute
    "\u0060": "\u0300",  # ` grave
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02dc": "\u0303",  # ˜ tilde
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02d8": "\u0306",  # ˘ breve
    "\u02c7": "\u030c",  # ˇ caron
    "\u02da": "\u030a",  # ˚ ring
    "\u02db": "\u0328",  # ˛ ogonek ("J˛edrzej" -> "Jędrzej")
    "\u02d9": "\u0307",  # ˙ dot above ("˙Zółw" -> "Żółw")
    "\u02dd": "\u030b",  # ˝ double acute ("Erd˝os" -> "Erdős")
}
_SPACING_ACCENT = re.compile(
    "([\u00b4\u00a8\u02c6\u02dc\u00b8\u02d8\u02c7\u02da\u02db\u02d9\u02dd])([A-Za-z\u0131])|(\u0131)(\u02c6)"
)
# A spacing ring before a temperature unit, or after a figure and before no letter, is a degree sign as printed
# ("35 ˚C", "0.08˚C", "a 45˚ angle"), not a ring over the next letter ("10 ˚A" is 10 Å).
_DEGREE = re.compile(r"\u02da(?=\s?[CF](?![A-Za-z]))|(?<=\d)\u02da(?![A-Za-z])")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_SPACES = re.compile(r"\s+")


# The characters Unicode has for raised and lowered type; each folds back to its plain one under NFKC (a raised
# hyphen stays a hyphen: "⁻" folds to the minus sign).
_RAISED = str.maketrans(
    "0123456789+\u2212=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW",
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207c\u207d\u207e"
    "\u1d43\u1d47\u1d9c\u1d48\u1d49\u1da0\u1d4d\u02b0\u2071\u02b2\u1d4f\u02e1\u1d50\u207f\u1d52\u1d56\u02b3"
    "\u02e2\u1d57\u1d58\u1d5b\u02b7\u02e3\u02b8\u1dbb"
    "\u1d2c\u1d2e\u1d30\u1d31\u1d33\u1d34\u1d35\u1d36\u1d37\u1d38\u1d39\u1d3a\u1d3c\u1d3e\u1d3f\u1d40\u1d41"
    "\u2c7d\u1d42",
)
_LOWERED = str.maketrans(
    "0123456789+\u2212=()aehijklmnoprstuvx",
    "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089\u208a\u208b\u208c\u208d\u208e"
    "\u2090\u2091\u2095\u1d62\u2c7c\u2096\u2097\u2098\u2099\u2092\u209a\u1d63\u209b\u209c\u1d64\u1d65\u2093",
)
_PLAIN = {v: k for table in (_RAISED, _LOWERED) for k, v in table.items()}


def raised(text: str) -> str:
    """`text` in superscript characters where Unicode has them ("10" -> "¹⁰", "Q" stays "Q")."""
    return text.translate(_RAISED)


def lowered(text: str) -> str:
    """`text` in subscript characters where Unicode has them ("i" -> "ᵢ", "B" stays "B")."""
    return text.translate(_LOWERED)


def unscripted(text: str) -> str:
    """`text` with superscript and subscript characters read plain, as the PDF's text layer has them ("10¹⁰" ->
    "1010", "SPECTER,²" -> "SPECTER,2"): what a search matches a pasted passage or a question against."""
    return text.translate(_PLAIN)


# What no chunk may hold: C0 controls but tab, newline and carriage return (spaces, collapsed below), DEL and the
# C1 controls, and U+FFFD, which a reader puts where it found no Unicode.
UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")


def normalize(text: str) -> str:
    """Replace ligatures and odd spaces, print degree signs as such, put LaTeX's spacing accents on their letters,
    collapse whitespace, drop control characters and U+FFFD (what a reader leaves for a glyph it cannot name)."""
    text = UNPRINTABLE.sub("", text.translate(_LIGATURES))
    if "\u02da" in text:
        text = _DEGREE.sub("\u00b0", text)
    if _SPACING_ACCENT.search(text):
        text = _SPACING_ACCENT.sub(_accented, text)
    return _SPACES.sub(" ", text).strip()


def _accented(m: re.Match[str]) -> str:
    # "Zolt´an Gy¨ongyi" -> "Zoltán Gyöngyi"; "Lemaˆıtre" -> "Lemaître" (a dotless i takes the accent as i)
    accent, letter = m.group(1) or m.group(4), m.group(2) or m.group(3)
    base = "i" if letter == "\u0131" else letter
    return unicodedata.normalize("NFC", base + _COMBINING[accent])


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
    return join_lines_at(lines, vocab)[0]


def join_lines_at(lines: list[str], vocab: Counter[str] | None = None) -> tuple[str, list[int]]:
    """join_lines, and for each line the offset in the joined text where its text begins."""
    vocab = vocab or Counter()
    out = ""
    starts: list[int] = []
    for raw in lines:
        line = normalize(raw)
        if not line:
            starts.append(len(out))
            continue
        if not out:
            starts.append(0)
            out = line
            continue
        m = re.search(r"([A-Za-z]+)-$", out)
        first = re.match(r"[a-z][A-Za-z]*", line)
        if m and first:
            head, tail = m.group(1), first.group(0)
            joined, compound = (head + tail).lower(), f"{head}-{tail}".lower()
            if vocab[compound] > vocab[joined]:
                starts.append(len(out))
                out = out + line  # keep the hyphen: a real compound
            else:
                # The word now begins on the line before: that line holds its start.
                starts.append(len(out) - 1)
                out = out[:-1] + line
        else:
            starts.append(len(out) + 1)
            out = f"{out} {line}"
    return out, starts
