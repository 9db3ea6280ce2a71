"""Read a .bib file into `LibraryItem`s (each entry's PDF and metadata), and write BibTeX for papers.

Reading: bibtexparser (v2) splits the file into entries; an entry bibtexparser cannot parse is reported by line in
`BibLibrary.failed_blocks` while the rest are read. Each entry's PDF is taken from its `file` field, whose form
depends on the tool that wrote it:

- Zotero's BibTeX export: ``Title:/abs/path.pdf:application/pdf``, several joined by ``;``; ``\\``, ``:``, ``;``
  and ``$`` inside a part are escaped with a backslash (Zotero's translator escapes them that way).
- Better BibTeX: the same shape, or bare paths.
- JabRef: ``Description:path:Type``, the path relative to the .bib's folder or to a ``jabref-meta: fileDirectory``
  comment; JabRef escapes ``\\``, ``:`` and ``;`` with a backslash too.
- Mendeley: ``:C$\\backslash$:/Users/u/x.pdf:pdf`` (the backslash that escapes the drive's colon written as LaTeX,
  ``_`` as ``{\\_}``) and ``:home/u/x.pdf:pdf`` (the leading slash lost).
- a bare path; ``pdf = {...}`` and ``local-url = {...}`` (BibDesk) fields.

Metadata is LaTeX-decoded (pylatexenc, as bibtexparser's LatexDecodingMiddleware does) field by field, never the
file paths and URLs: LaTeX decoding would eat a ``%`` or a ``\\`` in them.

Writing: one entry per paper with a stable citation key, text LaTeX-escaped so that BibTeX and bibtexparser read back
the same title and authors.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from bibtexparser.entrypoint import parse_string, write_string
from bibtexparser.exceptions import BlockAbortedException
from bibtexparser.library import Library
from bibtexparser.middlewares import NormalizeFieldKeys
from bibtexparser.middlewares.names import parse_single_name_into_parts, split_multiple_persons_names
from bibtexparser.model import (
    DuplicateBlockKeyBlock,
    DuplicateFieldKeyBlock,
    Entry,
    ExplicitComment,
    Field,
    ImplicitComment,
    ParsingFailedBlock,
)
from bibtexparser.writer import BibtexFormat
from pydantic import BaseModel
from pydantic import Field as PydanticField
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db
from pylatexenc.latexencode import UnicodeToLatexEncoder

from ..errors import SourceError
from .models import LibraryItem, PaperMeta

__all__ = ["MAX_BIB_BYTES", "BibLibrary", "read_bibtex", "write_bibtex"]

MAX_BIB_BYTES = 50 * 1024 * 1024
"""A .bib file larger than this is refused: real libraries of thousands of entries are a few MB."""


class BibLibrary(BaseModel):
    """What a .bib file gave: an item per entry with a PDF, and counts of what could not be used."""

    path: Path = PydanticField(description="The .bib file read.")
    items: list[LibraryItem] = PydanticField(
        default_factory=list, description="One per entry naming a PDF (pdf=None and a problem when it is missing)."
    )
    without_pdf: int = PydanticField(0, description="Entries whose file fields name no PDF.")
    failed_blocks: list[str] = PydanticField(
        default_factory=list, description="One line per entry bibtexparser could not parse, naming its line."
    )


# ---------------------------------------------------------------------------------------------------------------
# Reading the file


def _read_text(path: Path) -> str:
    """The .bib file's text; SourceError (one line naming the path) when it is missing, too large or not text."""
    try:
        with path.open("rb") as handle:
            # At most one byte more than allowed: a huge file is refused without being read whole.
            data = handle.read(MAX_BIB_BYTES + 1)
    except OSError as exc:
        raise SourceError(f"cannot read BibTeX file {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_BIB_BYTES:
        megabytes, rest = divmod(MAX_BIB_BYTES, 1024 * 1024)
        reason = f"larger than {megabytes} MB" if not rest else f"larger than {MAX_BIB_BYTES} bytes"
        raise SourceError(f"BibTeX file {path} is {reason}, too large to be a .bib file") from ValueError(reason)
    return _decode(data, path)


_JABREF_ENCODING = re.compile(rb"^%\s*Encoding:\s*([A-Za-z0-9_.:-]+)", re.MULTILINE)
# Bytes a text file never holds (NUL and the other C0 controls but tab, newline, form feed, carriage return).
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _decode(data: bytes, path: Path) -> str:
    """Decode as UTF-8, else as the encoding a JabRef header names, else as Windows-1252 if it looks like text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # Some Windows tools write UTF-16 with a byte-order mark.
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise SourceError(f"BibTeX file {path} is not text: {exc.reason}") from exc
    binary = _BINARY_BYTES.search(data)
    if binary is not None:
        reason = f"byte 0x{data[binary.start()]:02x} at offset {binary.start()}"
        raise SourceError(f"BibTeX file {path} is not text ({reason})") from ValueError(reason)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    # Older JabRef and Mendeley files are in a legacy 8-bit encoding; JabRef names it in a header line.
    header = _JABREF_ENCODING.search(data[:4096])
    if header is not None:
        try:
            return data.decode(header.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # every byte is a character, and no control bytes were found above


# ---------------------------------------------------------------------------------------------------------------
# LaTeX to text


@functools.cache
def _decoder() -> LatexNodes2Text:
    """pylatexenc's decoder set up as bibtexparser's LatexDecodingMiddleware sets it up (math kept verbatim)."""
    context = get_default_latex_context_db()
    context.add_context_category("paperscope-bibtex", prepend=True, macros=[MacroTextSpec("url", simplify_repl="%s")])
    return LatexNodes2Text(latex_context=context, keep_braced_groups=False, math_mode="verbatim")


_LATEX_SYNTAX = re.compile(r"[\\{}$~]")


def _latex_to_text(value: str) -> str:
    """A field's LaTeX as plain text: accents decoded, braces gone, whitespace collapsed."""
    text = value
    # Most values are plain text; pylatexenc is slow enough to matter on libraries of thousands of entries.
    if _LATEX_SYNTAX.search(value):
        try:
            text = _decoder().latex_to_text(value)
        except Exception:  # pylatexenc is tolerant; should it still fail, the braces at least go
            text = value.replace("{", "").replace("}", "")
    return " ".join(text.split())


def _unescape_verbatim(value: str) -> str:
    """A URL or DOI as some exporters escape it (``\\_``, ``{\\_}``, ``\\url{...}``), unescaped."""
    value = value.strip()
    url = re.fullmatch(r"\\url\{(.*)\}", value, re.DOTALL)
    if url is not None:
        value = url.group(1)
    value = re.sub(r"\{\\([_%&#$~])\}", r"\1", value)
    value = re.sub(r"\\([_%&#$~])", r"\1", value)
    return "".join(value.split())


# ---------------------------------------------------------------------------------------------------------------
# Metadata


_NEW_ARXIV = r"\d{4}\.\d{4,5}"
_OLD_ARXIV = r"[a-z][a-z\-]*(?:\.[a-z]{2})?/\d{7}"
_ARXIV_ID = rf"(?:{_NEW_ARXIV}|{_OLD_ARXIV})"
_ARXIV_VERSIONED = re.compile(rf"({_ARXIV_ID})(?:v\d+)?", re.IGNORECASE)
_ARXIV_URL = re.compile(rf"arxiv\.org/(?:abs|pdf|html)/({_ARXIV_ID})(?:v\d+)?", re.IGNORECASE)
_ARXIV_DOI = re.compile(rf"10\.48550/arxiv\.({_ARXIV_ID})(?:v\d+)?$", re.IGNORECASE)
_ARXIV_CITED = re.compile(rf"\barxiv:\s*({_ARXIV_ID})(?:v\d+)?", re.IGNORECASE)
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_DOI_URL = re.compile(r"https?://(?:dx\.)?doi\.org/(10\.\S+)", re.IGNORECASE)


def _text_fields(entry: Entry) -> dict[str, str]:
    """The entry's fields with a string value, keys lower-cased (NormalizeFieldKeys ran), values stripped."""
    return {f.key: f.value.strip() for f in entry.fields if isinstance(f.value, str) and f.value.strip()}


def _clean_doi(raw: str) -> str | None:
    doi = unquote(_DOI_PREFIX.sub("", _unescape_verbatim(raw))).lower()
    return doi if doi.startswith("10.") and "/" in doi else None


def _arxiv_id(fields: dict[str, str], doi: str | None) -> str | None:
    """The arXiv id (no version) from eprint + archiveprefix/eprinttype, an arxiv.org URL, or an arXiv DOI."""
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip("{} ").lower()
    eprint = fields.get("eprint", "")
    if eprint and (prefix == "arxiv" or eprint.lower().startswith("arxiv:")):
        found = _ARXIV_VERSIONED.search(eprint)
        if found is not None:
            return found.group(1)
    for key in ("url", "eprint", "howpublished", "note", "journal"):
        found = _ARXIV_URL.search(fields.get(key, ""))
        if found is not None:
            return found.group(1)
    if doi is not None:
        found = _ARXIV_DOI.match(doi)
        if found is not None:
            return found.group(1)
    # Google Scholar's export: journal = {arXiv preprint arXiv:1706.03762}.
    for key in ("journal", "howpublished", "note"):
        found = _ARXIV_CITED.search(fields.get(key, ""))
        if found is not None:
            return found.group(1)
    return None


def _authors(raw: str) -> list[str]:
    """``Family, Given and Given Family and others`` as ["Given Family", ...], LaTeX decoded, "others" dropped."""
    authors: list[str] = []
    for name in split_multiple_persons_names(raw):
        if name.strip().lower() == "others":
            continue
        # Split on the LaTeX source, so braces still protect "{\"u}" and corporate names; decode word by word.
        parts = parse_single_name_into_parts(name, strict=False)
        words = [_latex_to_text(word) for word in [*parts.first, *parts.von, *parts.last, *parts.jr]]
        full = " ".join(word for word in words if word)
        if full:
            authors.append(full)
    return authors


def _year(fields: dict[str, str]) -> int | None:
    for key in ("year", "date"):
        found = re.search(r"(?<!\d)(\d{4})(?!\d)", fields.get(key, ""))
        if found is not None:
            return int(found.group(1))
    return None


def _split_list(raw: str, separators: str) -> list[str]:
    """A keyword-like list split on the separators, each LaTeX decoded, empty and repeated ones dropped."""
    out: list[str] = []
    for part in re.split(f"[{re.escape(separators)}]", raw):
        text = _latex_to_text(part)
        if text and text not in out:
            out.append(text)
    return out


def _meta(entry: Entry, fields: dict[str, str], library: str) -> PaperMeta:
    doi = _clean_doi(fields["doi"]) if "doi" in fields else None
    url = _unescape_verbatim(fields.get("url", ""))
    if doi is None and url:
        found = _DOI_URL.match(url)
        doi = _clean_doi(found.group(1)) if found else None
    arxiv_id = _arxiv_id(fields, doi)
    venue = ""
    for key in ("journal", "journaltitle", "booktitle"):
        if key in fields:
            venue = _latex_to_text(fields[key])
            break
    if not venue:
        # Zotero exports an arXiv preprint as @misc{..., publisher = {arXiv}}; biblatex says eprinttype = {arxiv}.
        repository = " ".join(fields.get(k, "") for k in ("publisher", "eprinttype", "archiveprefix")).lower()
        if arxiv_id is not None or "arxiv" in repository:
            venue = "arXiv"
    return PaperMeta(
        title=_latex_to_text(fields.get("title", "")),
        authors=_authors(fields["author"]) if "author" in fields else [],
        year=_year(fields),
        venue=venue,
        doi=doi,
        arxiv_id=arxiv_id,
        url=url,
        citation_key=entry.key,
        tags=_split_list(fields.get("keywords", ""), ",;"),
        collections=_split_list(fields.get("groups", ""), ","),
        origin="bibtex",
        library=library,
    )


# ---------------------------------------------------------------------------------------------------------------
# The PDF of an entry


class _Link(BaseModel):
    """One attachment of a file field: JabRef's Description:path:Type."""

    description: str = ""
    path: str = ""
    type: str = ""


def _mendeley_unescape(value: str) -> str:
    """Undo the LaTeX Mendeley writes into file fields: $\\backslash$ for a backslash, {\\_} for an underscore."""
    value = value.replace("$\\backslash$", "\\")
    value = re.sub(r"\{\\([_&$#%])\}", r"\1", value)
    return value.replace("{\\~{}}", "~")


def _split_file_field(value: str) -> list[_Link]:
    """The attachments of a file field, with JabRef's and Zotero's escapes (backslash before : ; \\ $) undone.

    A backslash before a letter, digit or dot is a Windows path separator, not an escape (Zotero's decoder reads
    it so too). A colon after a lone drive letter followed by a slash belongs to the path (an unescaped
    ``C:\\Users``), as in JabRef's parser.
    """
    links: list[_Link] = []
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(value):
        char = value[i]
        following = value[i + 1] if i + 1 < len(value) else ""
        if char == "\\" and following and not (following.isalnum() or following == "."):
            current.append(following)
            i += 2
            continue
        if char == ":" and len(current) == 1 and current[0].isalpha() and following in ("\\", "/"):
            current.append(char)
        elif char == ":":
            parts.append("".join(current))
            current = []
        elif char == ";":
            parts.append("".join(current))
            links.append(_link_from_parts(parts))
            parts, current = [], []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    links.append(_link_from_parts(parts))
    return [link for link in links if link.path]


def _link_from_parts(parts: list[str]) -> _Link:
    parts = [p.strip() for p in parts]
    if len(parts) == 1:
        return _Link(path=parts[0])  # a bare path
    if len(parts) == 2:
        # "path:Type" or "Description:path": the part that looks like a file is the path.
        first, second = parts
        if Path(first).suffix and not Path(second).suffix and "/" not in second:
            return _Link(path=first, type=second)
        return _Link(description=first, path=second)
    # More than three parts: an unescaped colon inside the path (a URL, an old Windows path); keep it whole.
    return _Link(description=parts[0], path=":".join(parts[1:-1]), type=parts[-1])


def _is_pdf(link: _Link) -> bool:
    return link.path.lower().endswith(".pdf") or link.type.strip().lower() in ("application/pdf", "pdf")


def _is_online(path: str) -> bool:
    return re.match(r"^(?:https?|ftp)://", path, re.IGNORECASE) is not None


def _pdf_link(fields: dict[str, str]) -> str | None:
    """The first PDF the entry names on disk: from `file`, else `pdf`, else `local-url`; None when it names none."""
    if "file" in fields:
        for link in _split_file_field(_mendeley_unescape(fields["file"])):
            if _is_pdf(link) and not _is_online(link.path):
                return link.path
    for key in ("pdf", "local-url"):
        value = _mendeley_unescape(fields.get(key, "")).strip()
        if value and not _is_online(value):
            return value
    return None


# Top folders of absolute paths on Linux and macOS: Mendeley's "home/u/x.pdf" lost its leading slash.
_ROOT_FOLDERS = {"home", "Users", "Volumes", "media", "mnt", "tmp", "var", "opt", "srv", "private", "data", "run"}


def _candidates(link: str, folders: Sequence[Path]) -> list[Path]:
    """Where the link's file may be, most likely first."""
    if link.lower().startswith("file:"):
        link = unquote(urlparse(link).path)  # file:///x, file://localhost/x (BibDesk)
    if re.match(r"^[A-Za-z]:[\\/]", link) or link.startswith("\\\\"):
        return [Path(link)]  # a Windows path: found only on Windows
    path = Path(link)
    if link.startswith("~"):
        with contextlib.suppress(RuntimeError):  # no home directory known: leave "~" as it is
            path = path.expanduser()
    if path.is_absolute():
        return [path]
    relative = [folder / path for folder in folders]
    rooted = Path("/") / path
    return [rooted, *relative] if path.parts and path.parts[0] in _ROOT_FOLDERS else [*relative, rooted]


def _resolve(link: str, folders: Sequence[Path]) -> tuple[Path | None, Path]:
    """The first candidate that is a file (resolved), else None and the most likely path for the message."""
    candidates = _candidates(link, folders)
    for candidate in candidates:
        try:
            if candidate.is_file():
                return candidate.resolve(), candidate
        except OSError:  # a path too long or unreadable folder: not this one
            continue
    return None, candidates[0]


_JABREF_FILE_DIRECTORY = re.compile(r"jabref-meta:\s*(fileDirectory(?!Latex)[^:]*|pdfDirectory):(.*)", re.DOTALL)


def _jabref_file_directories(library: Library, bib_folder: Path) -> list[Path]:
    """JabRef's file directories (user-specific ones first, as JabRef tries them), relative to the .bib's folder."""
    specific: list[Path] = []
    general: list[Path] = []
    for block in library.comments:
        if not isinstance(block, ExplicitComment | ImplicitComment):
            continue
        found = _JABREF_FILE_DIRECTORY.search(block.comment)
        if found is None:
            continue
        # JabRef ends a value with ";" and escapes "\" and ";" inside it with a backslash.
        raw = found.group(2).strip()
        raw = raw[:-1] if raw.endswith(";") and not raw.endswith("\\;") else raw
        value = re.sub(r"\\(.)", r"\1", raw).strip()
        if not value:
            continue
        folder = Path(value).expanduser() if value.startswith("~") else Path(value)
        folder = folder if folder.is_absolute() else bib_folder / folder
        (general if found.group(1) in ("fileDirectory", "pdfDirectory") else specific).append(folder)
    return [*specific, *general]


def _describe_failed(block: ParsingFailedBlock) -> str:
    """One line for an entry bibtexparser could not parse: its line, its key when known, and why."""
    line = f"line {block.start_line + 1}" if block.start_line is not None else "line ?"
    head = re.match(r"\s*@\s*(\w+)\s*[{(]\s*([^,\s{}()=]*)", block.raw or "")
    what = f"@{head.group(1)}{{{head.group(2)}}}" if head else "block"
    error = block.error
    if isinstance(block, DuplicateBlockKeyBlock):
        reason = f"duplicate key {block.key!r}, the entry is skipped"
    elif isinstance(block, DuplicateFieldKeyBlock):
        reason = f"field(s) {', '.join(sorted(block.duplicate_keys))} given twice"
    elif isinstance(error, BlockAbortedException):
        reason = error.abort_reason
    else:
        reason = str(error) or type(error).__name__
    reason = " ".join(reason.split())
    return f"{line}: {what}: {reason}"


def read_bibtex(path: Path) -> BibLibrary:
    """Read a .bib file: a LibraryItem per entry naming a PDF, a count of those naming none, failed entries.

    Raises SourceError when the file is missing, unreadable, larger than 50 MB or not text.
    """
    text = _read_text(path)
    library = parse_string(text, append_middleware=[NormalizeFieldKeys()])
    bib_folder = path.resolve().parent
    folders = [*_jabref_file_directories(library, bib_folder), bib_folder]
    library_name = str(path.resolve())
    items: list[LibraryItem] = []
    without_pdf = 0
    for entry in library.entries:
        fields = _text_fields(entry)
        link = _pdf_link(fields)
        if link is None:
            without_pdf += 1
            continue
        meta = _meta(entry, fields, library_name)
        pdf, likely = _resolve(link, folders)
        if pdf is not None:
            items.append(LibraryItem(pdf=pdf, meta=meta))
        else:
            problem = f"{entry.key}: its PDF {likely} does not exist"
            items.append(LibraryItem(pdf=None, meta=meta, problem=problem))
    failed = [_describe_failed(block) for block in library.failed_blocks]
    return BibLibrary(path=path, items=items, without_pdf=without_pdf, failed_blocks=failed)


# ---------------------------------------------------------------------------------------------------------------
# Writing


# Characters BibTeX or LaTeX give a meaning, as LaTeX that prints them. "--" would become a dash.
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX_SPECIAL_RE = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))


@functools.cache
def _encoder() -> UnicodeToLatexEncoder:
    # Accents as {\"u}: classic BibTeX reads them whatever the input encoding; symbols it has no macro for stay.
    return UnicodeToLatexEncoder(
        non_ascii_only=True,
        replacement_latex_protection="braces-all",
        unknown_char_policy="keep",
        unknown_char_warning=False,
    )


def _escape(text: str) -> str:
    """Plain text as BibTeX field content that prints (and decodes back to) the same text."""
    text = " ".join(text.split())
    escaped = _LATEX_SPECIAL_RE.sub(lambda m: _LATEX_SPECIAL[m.group(0)], text)
    escaped = re.sub(r"-(?=-)", "-{}", escaped)
    return str(_encoder().unicode_to_latex(escaped))


_PARTICLES = {
    "van", "von", "der", "den", "de", "del", "della", "di", "da", "dos", "das", "du", "la", "le", "ten", "ter", "zu",
    "al", "el", "bin", "ibn",
}  # fmt: skip
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


def _name_parts(name: str) -> tuple[list[str], list[str], list[str]]:
    """ "Given von Family Jr." as (given words, von+family words, suffix words)."""
    words = name.split()
    suffix: list[str] = []
    if len(words) > 2 and words[-1].lower().rstrip(",") in _SUFFIXES:
        suffix = [words.pop().rstrip(",")]
    words = [w.rstrip(",") for w in words]
    if len(words) <= 1:
        return [], words, suffix
    start = len(words) - 1
    while start > 1 and words[start - 1].lower() in _PARTICLES:
        start -= 1
    return words[:start], words[start:], suffix


def _protect_word(word: str) -> str:
    escaped = _escape(word)
    # "and" separates authors and a comma separates name parts: inside braces they are just text.
    return f"{{{escaped}}}" if word.lower() == "and" or "," in word else escaped


def _bibtex_name(name: str) -> str:
    """ "Given Family" as "Family, Given" ("von Family, Jr, Given"); a one-word name braced (a corporate author)."""
    given, family, suffix = _name_parts(name)
    family_text = " ".join(_protect_word(w) for w in family)
    if not given and not suffix:
        return f"{{{family_text}}}"
    parts = [family_text, *([" ".join(_protect_word(w) for w in suffix)] if suffix else [])]
    parts.append(" ".join(_protect_word(w) for w in given))
    return ", ".join(parts)


_TITLE_STOPWORDS = {"a", "an", "the", "on", "of", "in", "for", "to", "and", "with", "at", "by", "from", "towards"}


def _ascii_word(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]", "", folded.lower())


def _generated_key(paper: PaperMeta) -> str:
    """ "familyYEARfirstword", ASCII lower-case (vaswani2017attention); leading stop words of the title skipped."""
    family = ""
    if paper.authors:
        _, family_words, _ = _name_parts(paper.authors[0])
        # Without particles, as Google Scholar's keys: "van Beethoven" gives "beethoven".
        family = _ascii_word("".join(w for w in family_words if w.lower() not in _PARTICLES))
        family = family or _ascii_word("".join(family_words))
    first_word = ""
    for word in re.split(r"[\s\-:–—/]+", paper.title):
        candidate = _ascii_word(word)
        if candidate and candidate not in _TITLE_STOPWORDS:
            first_word = candidate
            break
    key = f"{family}{paper.year or ''}{first_word}"
    return key or "paper"


_KEY_FORBIDDEN = re.compile(r"[\s,{}()\"#%'=\\~]")


def _suffixes() -> Iterator[str]:
    """a, b, ..., z, aa, ab, ...: the suffixes that tell generated keys apart."""
    for length in itertools.count(1):
        for letters in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=length):
            yield "".join(letters)


def _unique_keys(papers: Sequence[PaperMeta]) -> list[str]:
    """A key per paper: its citation key (cleaned of characters a key cannot hold) or a generated one, unique.

    A paper's own key is kept by the first paper that has it; generated keys and repeats get a suffix a, b, ...
    BibTeX compares keys ignoring case, so the comparisons here do too.
    """
    own = [_KEY_FORBIDDEN.sub("", p.citation_key) for p in papers]
    claimed: dict[str, int] = {}
    for index, key in enumerate(own):
        if key:
            claimed.setdefault(key.lower(), index)
    taken = set(claimed)
    keys: list[str] = []
    for index, (paper, key) in enumerate(zip(papers, own, strict=True)):
        if key and claimed[key.lower()] == index:
            keys.append(key)
            continue
        base = key or _generated_key(paper)
        unique = base
        if unique.lower() in taken:
            unique = next(base + s for s in _suffixes() if (base + s).lower() not in taken)
        taken.add(unique.lower())
        keys.append(unique)
    return keys


_PROCEEDINGS = re.compile(
    r"proceedings|\bproc\b|\bconf\b|conference|workshop|symposium|congress|meeting|colloquium|"
    r"\b(?:neurips|nips|icml|iclr|cvpr|iccv|eccv|acl|emnlp|naacl|eacl|coling|aaai|ijcai|kdd|sigir|sigmod|vldb|"
    r"chi|uist|siggraph|interspeech|icassp|www)\b",
    re.IGNORECASE,
)


# A journal's name may hold a conference's acronym ("Transactions of the ACL"): these words make it a journal.
_JOURNAL = re.compile(r"\b(?:journal|transactions|letters|review|magazine|annals)\b", re.IGNORECASE)


def _verbatim(value: str) -> str:
    """A URL or DOI as a field: braces and spaces percent-encoded so the field's braces stay balanced."""
    return value.strip().replace("{", "%7B").replace("}", "%7D").replace(" ", "%20")


def _entry(paper: PaperMeta, key: str) -> Entry:
    venue = paper.venue.strip()
    arxiv_venue = venue.lower().startswith("arxiv") or venue.lower() == "corr"
    fields: list[tuple[str, str]] = []
    if paper.authors:
        fields.append(("author", " and ".join(_bibtex_name(a) for a in paper.authors)))
    if paper.title:
        fields.append(("title", f"{{{_escape(paper.title)}}}"))  # inner braces keep the title's case
    if paper.year:
        fields.append(("year", str(paper.year)))
    if venue and not arxiv_venue and _PROCEEDINGS.search(venue) and not _JOURNAL.search(venue):
        entry_type = "inproceedings"
        fields.append(("booktitle", _escape(venue)))
    elif venue and not arxiv_venue:
        entry_type = "article"
        fields.append(("journal", _escape(venue)))
    else:
        entry_type = "misc"
    if paper.doi:
        fields.append(("doi", _verbatim(paper.doi)))
    if paper.arxiv_id:
        fields.append(("eprint", _verbatim(paper.arxiv_id)))
        fields.append(("archiveprefix", "arXiv"))
    if paper.url:
        fields.append(("url", _verbatim(paper.url)))
    return Entry(entry_type, key, [Field(name, value) for name, value in fields])


def write_bibtex(papers: Sequence[PaperMeta]) -> str:
    """BibTeX for the papers, an entry each, in order; keys are their citation keys or generated, all unique."""
    keys = _unique_keys(papers)
    library = Library([_entry(paper, key) for paper, key in zip(papers, keys, strict=True)])
    layout = BibtexFormat()  # type: ignore[no-untyped-call]  # bibtexparser leaves __init__ unannotated
    layout.indent = "  "
    layout.block_separator = "\n"  # one blank line between entries, as Zotero and JabRef write them
    return write_string(library, bibtex_format=layout)
