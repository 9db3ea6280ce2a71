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


class Paragraph(BaseModel):
    """A block of body text (or a caption) in reading order."""

    text: str
    page: int = Field(description="1-based page where the block starts.")
    page_end: int = Field(description="1-based page where the block ends.")
    section_id: int = Field(description="id of the section the block belongs to.")
    kind: Literal["body", "caption"] = "body"
    captions: list[str] = Field(default_factory=list, description="Figure/table captions tied to this body paragraph.")


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
