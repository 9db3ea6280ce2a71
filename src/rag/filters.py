"""Validated search filters rendered as Milvus boolean expressions.

Arguments often come from a language model, so nothing a caller passes is pasted raw:
every value is validated first (doc_id format, category names, allowed kinds, year range)
and every string literal is escaped again when the expression is built, so a value that
bypassed validation still only ever compares as one string.

Milvus also offers templated filters (``filter="doc_id in {ids}"`` plus ``filter_params``);
`SearchFilter.to_template` renders that form. The store uses `to_expr` (escaped literals)
because Milvus Lite 3.2 ignores ``filter_params`` and fails to parse ``{name}``
placeholders, and one code path for Lite and servers is worth more than the second form.
"""

from __future__ import annotations

import re
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..parser.models import SectionCategory
from .chunking import ChunkKind

DOC_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_DOC_ID = re.compile(DOC_ID_PATTERN)
KINDS: frozenset[str] = frozenset(get_args(ChunkKind))
MAX_DOC_IDS = 1024  # keeps expressions small; a wider scope is "all papers" (None)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# An expression no row satisfies: chunk ids are non-negative 63-bit integers.
MATCH_NOTHING = "id < 0"
# Rows without the key are kept: comparisons on a missing JSON key are null (neither true nor false)
# in Milvus Lite, so the missing case is tested explicitly with `exists`.
_NOT_CAPTION = '(not (exists metadata["is_caption"])) or (metadata["is_caption"] == false)'
_RAPTOR_ROOT = 'metadata["root"] == true'


def validate_doc_id(value: object) -> str:
    """Return `value` if it is a well-formed doc_id (letters, digits, '_' and '-', 1-64 chars)."""
    if not isinstance(value, str) or not _DOC_ID.fullmatch(value):
        shown = value if not isinstance(value, str) else value[:80]
        raise ValueError(f"invalid doc_id {shown!r}: expected 1-64 letters, digits, '_' or '-'")
    return value


def parse_category(value: object) -> SectionCategory:
    """A SectionCategory from itself, its name ("METHOD", "method", "related work") or its id (2)."""
    if isinstance(value, SectionCategory):
        return value
    if isinstance(value, bool):  # bool is an int: True must not mean INTRODUCTION
        raise ValueError(f"invalid section category {value!r}")
    if isinstance(value, int):
        try:
            return SectionCategory(value)
        except ValueError:
            valid = ", ".join(f"{c.value}={c.name}" for c in SectionCategory)
            raise ValueError(f"unknown section category id {value}; expected one of {valid}") from None
    if isinstance(value, str):
        return SectionCategory.from_name(value)
    raise ValueError(f"invalid section category {value!r}: give a name like 'METHOD' or an id")


def quote_string(value: str) -> str:
    """A Milvus string literal holding exactly `value` (backslashes, quotes and newlines escaped)."""
    if any(ord(ch) < 32 and ch not in "\n\r\t" for ch in value):
        raise ValueError("control characters are not allowed in filter values")
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def string_in(field: str, values: list[str]) -> str:
    """`field == "v"` or `field in ["a", "b"]` with every value escaped."""
    if len(values) == 1:
        return f"{field} == {quote_string(values[0])}"
    return f"{field} in [{', '.join(quote_string(v) for v in values)}]"


def int_in(field: str, values: list[int]) -> str:
    """`field == 3` or `field in [1, 2]`; values are forced through int()."""
    ints = [int(v) for v in values]
    if len(ints) == 1:
        return f"{field} == {ints[0]}"
    return f"{field} in [{', '.join(str(v) for v in ints)}]"


class SearchFilter(BaseModel):
    """Hard constraints on the chunks a search may return. Empty = every body chunk."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_ids: list[str] | None = Field(default=None, description="Only these papers (None = all; [] = none).")
    categories: list[SectionCategory] | None = Field(
        default=None, description='Only these section categories: names ("METHOD") or ids.'
    )
    year_min: int | None = Field(default=None, ge=0, le=32767, description="Earliest conference year.")
    year_max: int | None = Field(default=None, ge=0, le=32767, description="Latest conference year.")
    kinds: list[str] = Field(default_factory=lambda: ["chunk"], description="Row kinds to search.")
    exclude_captions: bool = Field(default=False, description="Skip chunks made only of figure/table captions.")
    chunk_indexes: list[int] | None = Field(
        default=None, description="Only rows with these chunk_index values (a RAPTOR tree's children)."
    )
    raptor_roots: bool = Field(default=False, description="Only the top nodes of RAPTOR trees (kind raptor).")

    @field_validator("chunk_indexes", mode="before")
    @classmethod
    def _check_indexes(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("chunk_indexes must be a list of integers")
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**31:
                raise ValueError(f"invalid chunk_index {v!r}: expected an integer >= 0")
            out.append(v)
        if len(out) > MAX_DOC_IDS:
            raise ValueError(f"at most {MAX_DOC_IDS} chunk indexes per filter, got {len(out)}")
        return sorted(set(out))

    @field_validator("doc_ids", mode="before")
    @classmethod
    def _check_doc_ids(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("doc_ids must be a list of doc_id strings")
        ids = list(dict.fromkeys(validate_doc_id(v) for v in value))
        if len(ids) > MAX_DOC_IDS:
            raise ValueError(f"at most {MAX_DOC_IDS} doc_ids per filter, got {len(ids)}")
        return ids

    @field_validator("categories", mode="before")
    @classmethod
    def _check_categories(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str | int):
            value = [value]
        if not isinstance(value, list | tuple | set | frozenset):
            raise ValueError("categories must be a list of category names or ids")
        return list(dict.fromkeys(parse_category(v) for v in value))

    @field_validator("kinds", mode="before")
    @classmethod
    def _check_kinds(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple | set | frozenset) or not value:
            raise ValueError(f"kinds must be a non-empty list drawn from {sorted(KINDS)}")
        for kind in value:
            if kind not in KINDS:
                raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _check_years(self) -> SearchFilter:
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise ValueError(f"year_min {self.year_min} is after year_max {self.year_max}")
        return self

    @property
    def matches_nothing(self) -> bool:
        """True when the filter excludes every row (an empty doc_ids, categories or chunk_indexes list)."""
        return self.doc_ids == [] or self.categories == [] or self.chunk_indexes == []

    def to_expr(self) -> str:
        """The filter as a Milvus boolean expression with escaped literals ("" = no constraint)."""
        if self.matches_nothing:
            return MATCH_NOTHING
        parts: list[str] = []
        if self.doc_ids is not None:
            parts.append(string_in("doc_id", self.doc_ids))
        if self.categories is not None:
            parts.append(int_in("section_category", [int(c) for c in self.categories]))
        if self.year_min is not None:
            parts.append(f"conference_year >= {int(self.year_min)}")
        if self.year_max is not None:
            parts.append(f"conference_year <= {int(self.year_max)}")
        parts.append(string_in("kind", self.kinds))
        if self.exclude_captions:
            parts.append(_NOT_CAPTION)
        if self.chunk_indexes is not None:
            parts.append(int_in("chunk_index", self.chunk_indexes))
        if self.raptor_roots:
            parts.append(_RAPTOR_ROOT)
        return " and ".join(f"({p})" for p in parts)

    def to_template(self) -> tuple[str, dict[str, Any]]:
        """The same filter as a Milvus templated expression and its `filter_params` (servers only)."""
        if self.matches_nothing:
            return MATCH_NOTHING, {}
        parts: list[str] = []
        params: dict[str, Any] = {}
        if self.doc_ids is not None:
            parts.append("doc_id in {doc_ids}")
            params["doc_ids"] = list(self.doc_ids)
        if self.categories is not None:
            parts.append("section_category in {categories}")
            params["categories"] = [int(c) for c in self.categories]
        if self.year_min is not None:
            parts.append("conference_year >= {year_min}")
            params["year_min"] = int(self.year_min)
        if self.year_max is not None:
            parts.append("conference_year <= {year_max}")
            params["year_max"] = int(self.year_max)
        parts.append("kind in {kinds}")
        params["kinds"] = list(self.kinds)
        if self.exclude_captions:
            parts.append(_NOT_CAPTION)
        if self.chunk_indexes is not None:
            parts.append("chunk_index in {chunk_indexes}")
            params["chunk_indexes"] = list(self.chunk_indexes)
        if self.raptor_roots:
            parts.append(_RAPTOR_ROOT)
        return " and ".join(f"({p})" for p in parts), params


def and_exprs(*exprs: str) -> str:
    """Join non-empty expressions with `and`, each parenthesized."""
    kept = [e for e in exprs if e]
    if len(kept) == 1:
        return kept[0]
    return " and ".join(f"({e})" for e in kept)
