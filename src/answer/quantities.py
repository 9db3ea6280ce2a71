"""The quantities a sentence states: "39%", "1.5 million", "100-200 MB", "2x-20x", "five", "16 h".

Numbers that are not quantities are left out: years, table/figure/section/equation numbers, reference
numbers ("[12]"), list and equation labels ("(2)"), and digits inside names ("GSM8K", "T5", "3D").
"""

from __future__ import annotations

import re

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    "hundred|hundreds|thousand|thousands|million|millions|billion|dozen|dozens|twice|half|double|triple"
)
_NUM = r"\d[\d,]*(?:\.\d+)?"
_UNIT = (
    r"%|×|x\b|-?fold|times|million|billion|thousand|hundred|[kKMGT]?B\b|[kKMG]?Hz|ms\b|s\b|sec(?:ond)?s?|"
    r"min(?:ute)?s?|h\b|hours?|days?|weeks?|months?|years?|rpm|wt\s?%|vol\s?%|°\s?C?|K\b|mm|cm|nm|µm|kg|mg|g\b|"
    r"ml|mL|dB|points?|pp\b"
)
_QUANTITY = re.compile(
    rf"(?<![\w.])[-+±]?{_NUM}(?:\s*(?:{_UNIT}))?(?:\s*[-–]\s*{_NUM}(?:\s*(?:{_UNIT}))?)?|\b(?:{_NUMBER_WORDS})\b",
    re.I,
)
# What stands before a number that is a label, not an amount.
_LABEL_BEFORE = re.compile(
    r"(?:Table|Tab\.|Figure|Fig\.|Figs\.|Section|Sec\.|Eq\.|Eqs\.|Eqn\.|Equation|Algorithm|Appendix|Chapter|"
    r"Theorem|Lemma|Step|Line|page|p\.|pp\.)s?\s*\(?"
    # the later labels of a list: "Table 1, 2, and 3", "Figs. 4 and 5", "Sections 2-4"
    r"(?:[\dIVX]+[a-z]?\s*(?:,\s*(?:and\s+)?|and\s+|&\s*|[-–]\s*))*$",
    re.I,
)
_YEAR = re.compile(r"^(?:19|20)\d\d[a-z]?$")
# A bare number right after a capitalised word is a name or label: "Group 2", "Stewarts Creek 5", "Python 2.7".
_NAMED_BEFORE = re.compile(r"\b[A-Z][A-Za-z]*\s$")
_BARE = re.compile(r"\d[\d,.]*")
# Reference and label groups: "[9, 23]", "[12–14]", "(2)", "(3a)".
_GROUPS = re.compile(r"\[\s*\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\s*\]|\(\s*\d{1,2}[a-z]?\s*\)")
_MARKER = re.compile(r"\d{1,2}\s+[A-Z][a-z]")
_ONE_OF = re.compile(r"one\s+of\s+(?:the|these|those|its|their|our|his|her|them|us)\b", re.I)
NUMBER_WORDS = re.compile(rf"^(?:{_NUMBER_WORDS})$", re.I)

# What a quantity measures, read from its unit: a duration, a ratio ("5.95x"), a percentage, an amount of data,
# a temperature. A question that asks for one of them ("how long", "what speedup") is answered by a quantity in it.
DIMENSIONS: dict[str, re.Pattern[str]] = {
    "time": re.compile(r"(?:\d|\s)(?:ms|s|sec(?:ond)?s?|min(?:ute)?s?|h|hours?|days?|weeks?|months?|years?)$", re.I),
    "ratio": re.compile(r"(?:×|x|-?fold|times)$", re.I),
    "percent": re.compile(r"%$"),
    "data": re.compile(r"(?:\d|\s)[kKMGT]?B$"),
    "temperature": re.compile(r"°\s?C?$|\dK$"),
}


def dimension(quantity: str) -> str | None:
    """What `quantity` measures by its unit ("15 hours" -> "time", "2x-20x" -> "ratio"), or None (a bare number)."""
    return next((name for name, unit in DIMENSIONS.items() if unit.search(quantity.strip())), None)


def quantities(sentence: str) -> list[tuple[int, str]]:
    """(character offset, text) of the quantities `sentence` states, in order."""
    found: list[tuple[int, str]] = []
    groups = [g.span() for g in _GROUPS.finditer(sentence)]
    for m in _QUANTITY.finditer(sentence):
        if any(a <= m.start() < b for a, b in groups):
            continue  # a reference "[9, 23]" or a label "(2)"
        text = m.group(0).strip().rstrip(",")  # "in 2006, 2007": the comma is the list's, not the number's
        before, after = sentence[max(0, m.start() - 30) : m.start()], sentence[m.end() : m.end() + 1]
        if after and after.isalnum() and text[-1].isdigit():
            continue  # part of a name: "3D", "T5-XXL"
        if _YEAR.match(text) or _LABEL_BEFORE.search(before):
            continue
        if _BARE.fullmatch(text) and _NAMED_BEFORE.search(before):
            continue
        if _MARKER.match(sentence, m.start()) and not before.strip():
            continue  # a footnote or list marker opening the line: "1 Millions of Disparity Estimates per Second."
        if _ONE_OF.match(sentence, m.start()):
            continue  # "one of the reasons": a pronoun, not a count
        found.append((m.start(), text))
    return found
