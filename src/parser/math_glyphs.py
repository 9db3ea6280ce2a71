"""What TeX's math fonts draw at the character codes their PDFs give no Unicode for.

TeX's Computer Modern and Latin Modern math fonts are often embedded without a ToUnicode map, and the
glyph names of the extension font ("parenleftbigg", "bracelefttp") are in no glyph list, so PyMuPDF reads
those glyphs as U+FFFD (or, where a ToUnicode map is the identity, as the control characters at the codes).
The tables below give what each code draws, from TeX's font encodings:

* OMX, the math extension encoding (cmex10, lmex10): delimiters in four sizes, their pieces, big operators;
* OMS, the math symbol encoding (cmsy, cmbsy, lmsy): binary operators, relations, arrows, calligraphic capitals;
* OML, the math italic encoding (cmmi, cmmib, lmmi): Greek letters below code 0x28 (only those codes and the few
  symbols above are listed; letters and digits sit at their ASCII codes);
* OT1, the text encoding of cmr and its relatives, for the codes below 0x20 (Greek capitals, ligatures, accents);
* the AMS "U" encoding of msbm (blackboard capitals).

msam's codes are not listed: its arrows and relations have no single agreed reading, and a glyph without a
table is dropped rather than guessed (see decode).
"""

from __future__ import annotations

import re

from .text import UNPRINTABLE

# OMX (cmex10). Each delimiter comes in several sizes (\big, \Big, \bigg, \Bigg) that all read as the one
# character; the pieces that build a delimiter of any height (top, middle, bottom, extension) read as
# Unicode's bracket pieces, which exist for exactly that. Extensions with no character of their own (the
# vertical rule of a tall radical) read as nothing.
_OMX_DELIMITERS = "()[]⌊⌋⌈⌉{}⟨⟩|‖/\\"
OMX: dict[int, str] = {
    **{i: c for i, c in enumerate(_OMX_DELIMITERS)},  # 0x00-0x0F: \big
    **{0x10 + i: c for i, c in enumerate("()()[]⌊⌋⌈⌉{}⟨⟩/\\")},  # 0x10-0x11 \Big, 0x12-0x1F \bigg
    **{0x20 + i: c for i, c in enumerate("()[]⌊⌋⌈⌉{}⟨⟩/\\/\\")},  # 0x20-0x2F: \Bigg
    **{0x30 + i: c for i, c in enumerate("⎛⎞⎡⎤⎣⎦⎢⎥⎧⎫⎩⎭⎨⎬⎪⏐")},  # 0x30-0x3F: pieces
    **{0x40 + i: c for i, c in enumerate("⎝⎠⎜⎟⟨⟩⨆⨆∮∮⨀⨀⨁⨁⨂⨂")},  # 0x40-0x4F
    **{0x50 + i: c for i, c in enumerate("∑∏∫⋃⋂⨄⋀⋁∑∏∫⋃⋂⨄⋀⋁")},  # 0x50-0x5F: text and display sizes
    0x60: "∐",
    0x61: "∐",
    0x62: "\u02c6",  # wide hats and tildes, three widths each
    0x63: "\u02c6",
    0x64: "\u02c6",
    0x65: "\u02dc",
    0x66: "\u02dc",
    0x67: "\u02dc",
    **{0x68 + i: c for i, c in enumerate("[]⌊⌋⌈⌉{}")},  # 0x68-0x6F: \Big
    **{0x70 + i: "√" for i in range(5)},  # 0x70-0x74: radicals in four sizes and the bottom of a tall one
    0x75: "",  # the vertical rule and the top of a tall radical
    0x76: "",
    0x77: "‖",
    0x78: "↑",
    0x79: "↓",
    0x7A: "",  # the tips of horizontal braces (\overbrace, \underbrace)
    0x7B: "",
    0x7C: "",
    0x7D: "",
    0x7E: "⇑",
    0x7F: "⇓",
}

# OMS (cmsy10). The calligraphic capitals (0x41-0x5A) read as plain capitals: that is what PyMuPDF gives for
# them when the font names its glyphs (a \mathcal{L} arrives as "L"), so a symbol reads the same in every PDF.
_OMS_LOW = (
    "−·×∗÷⋄±∓⊕⊖⊗⊘⊙◯∘•"  # 0x00-0x0F
    "≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻"  # 0x10-0x1F
    "←→↑↓↔↗↘≃⇐⇒⇑⇓⇔↖↙∝"  # 0x20-0x2F
    "′∞∈∋△▽\u0338_∀∃¬∅ℜℑ⊤⊥"  # 0x30-0x3F (0x36: the negating slash, 0x37: the bar of \mapsto)
    "ℵ"  # 0x40
)
OMS: dict[int, str] = {
    **{i: c for i, c in enumerate(_OMS_LOW)},
    0x37: "",  # \mapsto draws this bar and then the arrow (0x21): the arrow alone reads well enough
    **{0x41 + i: chr(ord("A") + i) for i in range(26)},
    **{0x5B + i: c for i, c in enumerate("∪∩⊎∧∨⊢⊣⌊⌋⌈⌉{}⟨⟩|‖↕⇕\\≀√⨿∇∫⊔⊓⊑⊒§†‡¶♣♢♡♠")},  # 0x5B-0x7F
}

# OML (cmmi10): Greek, then the few symbols away from the ASCII positions of letters and digits.
OML: dict[int, str] = {
    **{i: c for i, c in enumerate("ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχψωεϑϖϱςφ")},  # 0x00-0x27
    **{0x28 + i: c for i, c in enumerate("↼↽⇀⇁‘’▷◁")},  # 0x28-0x2F: harpoon halves, hooks, triangles
    0x3A: ".",
    0x3B: ",",
    0x3C: "<",
    0x3D: "/",
    0x3E: ">",
    0x3F: "⋆",
    0x40: "∂",
    0x5B: "♭",
    0x5C: "♮",
    0x5D: "♯",
    0x5E: "⌣",
    0x5F: "⁀",
    0x60: "ℓ",
    0x7B: "ı",
    0x7C: "ȷ",
    0x7D: "℘",
    0x7E: "\u20d7",  # the vector arrow accent
    0x7F: "\u0361",  # the tie accent
}

# OT1 (cmr10 and the other text fonts of Computer Modern) below 0x20; above, ASCII but for a few accents.
OT1: dict[int, str] = {
    **{i: c for i, c in enumerate("ΓΔΘΛΞΠΣΥΦΨΩ")},  # 0x00-0x0A
    0x0B: "ff",
    0x0C: "fi",
    0x0D: "fl",
    0x0E: "ffi",
    0x0F: "ffl",
    **{0x10 + i: c for i, c in enumerate("ıȷ`´ˇ˘¯˚¸ßæœøÆŒØ")},  # 0x10-0x1F
}

# U encoding of msbm10: the blackboard capitals at the codes of their letters.
MSBM: dict[int, str] = {0x41 + i: c for i, c in enumerate("𝔸𝔹ℂ𝔻𝔼𝔽𝔾ℍ𝕀𝕁𝕂𝕃𝕄ℕ𝕆ℙℚℝ𝕊𝕋𝕌𝕍𝕎𝕏𝕐ℤ")}

# Font names as embedded, after any subset prefix: "CMEX10", "LMMathExtension10-Regular", "cmsy7", "CMBSY10".
_TABLES: list[tuple[re.Pattern[str], dict[int, str]]] = [
    # MathTime's extension font (mtex) keeps cmex's layout; a converter's "TeX_CM_Maths_Symbols" is cmsy renamed.
    (re.compile(r"^(cmex|lmex|lmmathextension|mtex|tex_cm_maths_extension)", re.I), OMX),
    (re.compile(r"^(cmsy|cmbsy|lmsy|lmmathsymbols|tex_cm_maths_symbols)", re.I), OMS),
    (re.compile(r"^(cmmi|lmmi|lmmathitalic)", re.I), OML),
    (re.compile(r"^(cmr|cmbx|cmti|cmsl|cmss|cmtt|cmcsc|cmb\d|lmr|lmroman)", re.I), OT1),
    (re.compile(r"^msbm", re.I), MSBM),
]


def table_for(font: str) -> dict[int, str] | None:
    """The encoding table of a TeX font (the name may carry a subset prefix), or None for any other font."""
    name = font.split("+", 1)[-1]
    return next((table for pattern, table in _TABLES if pattern.match(name)), None)


def needs_codes(font: str, text: str) -> bool:
    """True when a span in a font with a table holds glyphs PyMuPDF could not name."""
    return bool(UNPRINTABLE.search(text)) and table_for(font) is not None


def decode(font: str, text: str, codes: str) -> str:
    """The span's text with each unnamed glyph read off its character code.

    `codes` is the same span read with PyMuPDF's TEXT_USE_CID_FOR_UNKNOWN_UNICODE: character for character,
    the code where `text` has U+FFFD. A glyph `text` already names keeps its name (its code means something
    else in the table: '(' named by the font sits at 0x00 of cmex, not at 0x28). A glyph that cannot be read
    is dropped: a missing bracket costs a reader less than a stray box.
    """
    table = table_for(font) or {}
    if len(codes) != len(text):
        return UNPRINTABLE.sub("", text)
    out = []
    for named, code in zip(text, codes, strict=True):
        if UNPRINTABLE.fullmatch(named):
            out.append(table.get(ord(code), ""))
        else:
            out.append(named)
    return UNPRINTABLE.sub("", "".join(out))


def printable(text: str) -> str:
    """The text without control characters and replacement characters."""
    return UNPRINTABLE.sub("", text) if UNPRINTABLE.search(text) else text
