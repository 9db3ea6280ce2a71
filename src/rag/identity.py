"""What people call a paper: its title and short title, the names it introduces, its authors, its ids.

Computed once at ingest from the parsed paper and kept in the papers catalogue (`aliases`), where paper
location matches them as phrases and BM25 searches them with the title and abstract.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..parser.models import Paper
from .cues import STOPWORDS

# A name as papers coin them: TrustRank, XYLayoutLM, REALM, NG-Scope, GPT-2, T5 (not a title-case compound such
# as "Retrieval-Augmented" or "Open-Domain").
_NAME = re.compile(
    r"(?<![\w-])(?:[A-Z][a-z]*[A-Z][\w]*(?:-[\w]+)*|[A-Z]{2,}[A-Z\d]*(?:-[\w]+)*|[A-Z]+\d[\w]*)(?![\w-])"
)
# "Dense Passage Retrieval (DPR)": a long form followed by its acronym in parentheses.
_DEFINED = re.compile(r"((?:[A-Za-z][\w-]*\s+){1,6}[A-Za-z][\w-]*)\s*\(([A-Z][A-Za-z\d-]{1,12}s?)\)")
# What a paper says it introduces: "we present PaSa", "We propose a new ... architecture, the Transformer,",
# "called ScholarNav". The verb part ignores case ("We"), the name keeps its capitals.
_INTRODUCES = re.compile(
    r"(?i:\b(?:we|this paper|this work|here we)\s+(?:introduce|present|propose|describe|develop|release|build|call)\w*)"
    r"\s+(?:(?:\w+\s+){0,6}?([A-Z][\w-]*[A-Z\d][\w-]*)\b|(?:[\w-]+\s+){1,8}?[\w-]+,\s+the\s+([A-Z][a-z][\w-]+)\b)"
    r"|\b(?:called|named|dubbed|termed)\s+([A-Z][\w-]*)",
)
_PARTICLES = {"de", "van", "von", "der", "den", "di", "da", "del", "la", "le", "du", "dos", "das", "bin", "al", "e"}
_NOT_NAMES = {"AND", "OF", "THE", "FOR", "IN", "ON", "TO", "A", "AN", "WITH", "USA", "UK", "II", "III", "IV"}
# Where papers are published and how they are found, which a reference list repeats on every line: never the name
# of a paper's own system ("What does arXiv:2004.07180 propose?" names an id, not the paper citing arXiv most).
_NOT_NAMES |= {"ARXIV", "BIORXIV", "MEDRXIV", "SSRN", "DOI", "URL", "HTTP", "HTTPS", "ACM", "IEEE", "PUBMED", "PMID"}
_NOT_NAMES |= {"ISBN", "ISSN", "CORR", "ABS"}


@dataclass(frozen=True)
class Alias:
    """One name of a paper and how strongly it points at that paper (1 = it is the paper's name)."""

    text: str
    kind: str  # title | short | stem | subtitle | name | acronym | body | mention | author | first_author | id | year
    weight: float


@dataclass
class Identity:
    """Everything a paper is called, strongest first."""

    aliases: list[Alias] = field(default_factory=list)

    def texts(self) -> list[str]:
        """The alias strings, without repeats (for the catalogue and `papers --json`)."""
        return list(dict.fromkeys(a.text for a in self.aliases))

    def add(self, text: str, kind: str, weight: float) -> None:
        text = " ".join(text.split()).strip(" .,;:")
        if kind not in ("author", "first_author", "title") and text.casefold() in STOPWORDS:
            return  # "Paper", "Study": every question says them; they name no paper
        if len(text) >= 2 and not any(
            a.text.casefold() == text.casefold() and a.weight >= weight for a in self.aliases
        ):
            self.aliases.append(Alias(text, kind, weight))


def surnames(author: str) -> list[str]:
    """The family-name words of an author ("Luca Di Gaspero" -> ["Gaspero"], "Ivan Rodriguez Montoya" -> both)."""
    words = [w.strip(".,") for w in author.split()]
    if len(words) < 2:
        return [w for w in words if len(w) >= 3]
    if re.fullmatch(r"[\u4e00-\u9fff]+", author):
        return [author]
    rest = words[1:]
    out = [w for w in rest if len(w) >= 2 and "." not in w and w.lower() not in _PARTICLES]
    return [w.capitalize() if w.isupper() else w for w in out]


def paper_identity(paper: Paper, citation_key: str = "") -> Identity:
    """The aliases of a parsed paper (and the citation key its library files it under)."""
    body = Counter(n for p in paper.paragraphs for n in _NAME.findall(p.text) if n.upper() not in _NOT_NAMES)
    return identity_of(
        paper.title, paper.abstract, paper.authors, paper.year, paper.arxiv_id, paper.doi, body, citation_key
    )


def identity_of(
    title: str,
    abstract: str,
    authors: list[str],
    year: int | None = None,
    arxiv_id: str | None = None,
    doi: str | None = None,
    body_names: Counter[str] | None = None,
    citation_key: str = "",
) -> Identity:
    """The aliases of a paper from its title, abstract, authors and ids (and the names its text uses most)."""
    ident = Identity()
    ident.add(title, "title", 1.0)
    head, sep, tail = _split(title)
    if sep and 1 <= len(head.split()) <= 5:
        ident.add(head, "short", 0.9)  # "Bigtable", "TIMP", "Computational Rationalization"
        stem = _STEM.fullmatch(head)
        if stem:
            ident.add(stem.group(1), "stem", 0.7)  # "Marten" for "Marten-1B", as people shorten it
        if len(tail.split()) >= 3:
            ident.add(tail, "subtitle", 0.8)  # "The Inverse Equilibrium Problem"
    shouting = title.isupper()
    for name in _NAME.findall(title):
        if not shouting and name.upper() not in _NOT_NAMES:
            ident.add(name, "name", 0.9)
    for long_form, acronym in _DEFINED.findall(f"{title} . {abstract}"):
        words = long_form.split()[-len(acronym.rstrip("s")) :]
        if "".join(w[0] for w in words).lower() == acronym.rstrip("s").lower():
            in_title = " ".join(words).lower() in title.lower()
            ident.add(acronym.rstrip("s"), "acronym", 0.9 if in_title else 0.5)
            ident.add(" ".join(words), "acronym", 0.9 if in_title else 0.5)
    for match in _INTRODUCES.finditer(abstract):
        ident.add(next(g for g in match.groups() if g), "name", 0.8)
    initials = _initialism(head if sep else title)
    if initials:
        ident.add(initials, "acronym", 0.5)  # "Dense Passage Retrieval ..." -> DPR, as people abbreviate it
    # The names the paper keeps using are what readers call its system, model or data ("DPR", "REALM").
    for name, n in (body_names or Counter()).most_common(8):
        if n >= 4 and len(name) >= 2:
            ident.add(name, "body", 0.6)
    for name in _NAME.findall(abstract):
        if name.upper() not in _NOT_NAMES and len(name) >= 2:
            ident.add(name, "mention", 0.3)  # methods, data and systems the abstract names
    people = [a for a in authors if 2 <= len(a.split()) <= 5 or re.fullmatch(r"[\u4e00-\u9fff]{2,4}", a)]
    for i, author in enumerate(people):
        ident.add(author, "author", 0.5)
        for surname in surnames(author):
            ident.add(surname, "first_author" if i == 0 else "author", 0.5)
    if people and surnames(people[0]):
        ident.add(f"{surnames(people[0])[-1]} et al.", "first_author", 0.8)
    if arxiv_id:
        ident.add(f"arXiv:{arxiv_id}", "id", 1.0)
    if doi:
        ident.add(doi, "id", 1.0)
    if citation_key:
        ident.add(citation_key, "id", 1.0)  # "vaswani2017attention", as a LaTeX writer names it
    if year:
        ident.add(str(year), "year", 0.0)
    return ident


def alias_rows(ident: Identity) -> list[list[str | float]]:
    """The aliases as the papers catalogue stores them (its JSON `aliases` field): [text, kind, weight] lists."""
    return [[a.text, a.kind, a.weight] for a in ident.aliases]


def search_text(title: str, ident: Identity, abstract: str) -> str:
    """What BM25 paper search reads: the title, every alias but the year (authors included) and the abstract.

    Not cut to length: the store clips it to its field's byte limit (`clip(..., "search_text")`, store/records.py).
    """
    return "\n".join([title, " ; ".join(a.text for a in ident.aliases if a.kind != "year"), abstract])


# A name with a size or version after it: "Marten-1B", "LLaMA 2", "GPT-4o", "BERT-Large" (not "Paper Plain").
_STEM = re.compile(
    r"([A-Za-z][A-Za-z]{3,})[-_ ](?:[\w.]*\d[\w.]*|(?:base|large|small|mini|tiny|xl|xxl|lite|pro|plus|turbo)\b)",
    re.IGNORECASE,
)


def _split(title: str) -> tuple[str, str, str]:
    """Title -> (head, separator, tail) at its first colon or dash ("Bigtable: A Distributed ...")."""
    m = re.search(r"\s*[:\u2014]\s+|\s+[-\u2013]\s+", title)
    if not m:
        return title, "", ""
    return title[: m.start()].strip(), m.group(0), title[m.end() :].strip()


def _initialism(phrase: str) -> str:
    """DPR for "Dense Passage Retrieval for ...": the capitals of the leading capitalised words (3 to 5)."""
    words = []
    for w in phrase.split():
        if not w[:1].isupper() or w.isupper():
            break
        words.append(w)
    return "".join(w[0] for w in words) if 3 <= len(words) <= 5 else ""
