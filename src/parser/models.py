"""The Paper model shared by the PDF and Markdown parsers."""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

from pydantic import BaseModel, Field


class SectionCategory(IntEnum):
    """Section categories: names are the API, ids are what the store keeps."""

    ABSTRACT = 0
    INTRODUCTION = 1
    METHOD = 2
    EVALUATION = 3
    CONCLUSION = 4
    OTHER = 5
    RELATED_WORK = 6

    @classmethod
    def from_name(cls, name: str) -> SectionCategory:
        """Look a category up by its name, case-insensitively ("method" -> METHOD)."""
        key = name.strip().upper().replace(" ", "_").replace("-", "_")
        try:
            return cls[key]
        except KeyError:
            valid = ", ".join(c.name for c in cls)
            raise ValueError(f"unknown section category {name!r}; expected one of {valid}") from None


class Section(BaseModel):
    """One heading of the paper and where it sits in the tree."""

    id: int = Field(description="Position of the section in reading order, 0-based.")
    title: str = Field(description='Heading as printed, numbering included, e.g. "4.1 Ablation Study".')
    number: str | None = Field(default=None, description='Numbering alone, e.g. "4.1", "IV", "A.2".')
    level: int = Field(description="0 = top-level section, 1 = subsection, 2 = below.")
    category: SectionCategory
    page: int = Field(description="1-based page where the heading stands.")
    parent_id: int | None = Field(default=None, description="id of the enclosing section.")
    printed: bool = Field(
        default=True, description="False for a section the parser supplied: an abstract without a heading, or Text."
    )


class Box(BaseModel):
    """Where a line of text stands on its page, in PDF points (origin top left)."""

    page: int = Field(description="1-based page.")
    rect: tuple[float, float, float, float] = Field(description="x0, y0, x1, y1, rounded to 0.1 pt.")

    @classmethod
    def of(cls, page: int, x0: float, y0: float, x1: float, y1: float) -> Box:
        """A box with its coordinates rounded to 0.1 pt (what highlighting needs, and compact)."""
        return cls(page=page, rect=(round(x0, 1), round(y0, 1), round(x1, 1), round(y1, 1)))


class Table(BaseModel):
    """A table read as rows under their column headers, with the caption that labels it."""

    label: str = Field(description='The caption\'s label as printed, e.g. "Table 3" or "TABLE IV".')
    caption: str = Field(description="The whole caption.")
    page: int = Field(description="1-based page of the table.")
    header: list[str] = Field(description="Column names, top to bottom where the header has several rows.")
    rows: list[list[str]] = Field(description="Body rows, one cell per column (empty when blank).")


class Paragraph(BaseModel):
    """A block of body text, a caption or a table, in reading order."""

    text: str
    page: int = Field(description="1-based page where the block starts.")
    page_end: int = Field(description="1-based page where the block ends.")
    section_id: int = Field(description="id of the section the block belongs to.")
    kind: Literal["body", "caption", "table"] = "body"
    captions: list[str] = Field(default_factory=list, description="Figure/table captions tied to this body paragraph.")
    boxes: list[Box] = Field(
        default_factory=list, description="One box per line the text came from (a table: caption lines, then rows)."
    )
    box_starts: list[int] = Field(
        default_factory=list, description="For each box, the offset in `text` where its line's text begins."
    )
    table: Table | None = Field(default=None, description="The table's cells, for a paragraph of kind table.")


class Paper(BaseModel):
    """A parsed paper: metadata, section tree and paragraphs in reading order."""

    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    arxiv_id: str | None = Field(default=None, description="arXiv id printed on the first page, e.g. 2203.00274.")
    doi: str | None = Field(default=None, description="DOI printed on the first page.")
    pages: int = Field(default=0, description="Number of pages (0 for Markdown sources).")
    source: str = Field(default="", description="Path of the file the paper came from.")
    sections: list[Section] = Field(default_factory=list)
    paragraphs: list[Paragraph] = Field(default_factory=list)

    @property
    def tables(self) -> list[Table]:
        """The tables read as tables, in reading order."""
        return [p.table for p in self.paragraphs if p.table is not None]

    @property
    def structure_found(self) -> bool:
        """True when at least one heading was found in the text (not only sections the parser supplied)."""
        return any(s.printed for s in self.sections)

    def section(self, section_id: int) -> Section:
        """Return the section with this id."""
        return self.sections[section_id]

    def parent_of(self, section: Section) -> Section | None:
        """Return the enclosing section, or None for a top-level one."""
        return None if section.parent_id is None else self.sections[section.parent_id]

    def top_section(self, section: Section) -> Section:
        """Return the level-0 ancestor of a section (itself when top-level)."""
        while section.parent_id is not None:
            section = self.sections[section.parent_id]
        return section
