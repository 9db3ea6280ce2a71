"""Gold queries: the JSONL (or YAML) file `paperscope eval` replays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from ..parser.models import SectionCategory


class EvalQuery(BaseModel):
    """One test question and what a good answer looks like."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Unique id, e.g. a01.")
    query: str = Field(min_length=1, description="The question as a researcher would ask it.")
    expected_track: Literal["A", "B", "NONE"] | None = Field(
        None, description="A: one paper; B: across papers; NONE: no paper of the collection (implies not_in_corpus)."
    )
    expected_doc_ids: list[str] = Field(default_factory=list, description="Papers that answer it, by doc_id.")
    expected_titles: list[str] = Field(default_factory=list, description="Papers that answer it, by title.")
    expected_sections: list[str] = Field(default_factory=list, description="Categories where the answer lives.")
    evidence: list[str] = Field(default_factory=list, description="Strings a relevant chunk contains.")
    answer_contains: list[str] = Field(default_factory=list, description="Facts a correct answer states.")
    not_in_corpus: bool = Field(False, description="The answer is not in the papers; saying so is right.")
    lang: str | None = Field(None, description="The question's language (en, zh, ...), for results per language.")
    file: list[str] = Field(default_factory=list, description="The PDF files the question is about (informational).")

    @model_validator(mode="after")
    def _none_track(self) -> EvalQuery:
        if self.expected_track == "NONE":
            self.not_in_corpus = True
        return self

    @field_validator("expected_sections")
    @classmethod
    def _categories(cls, values: list[str]) -> list[str]:
        return [SectionCategory.from_name(v).name for v in values]


def load_queries(path: str | Path) -> list[EvalQuery]:
    """Queries from a .jsonl file (one object per line) or a .yaml/.yml list; errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a UTF-8 text file (byte {exc.start} is {exc.object[exc.start]:#04x}); expected JSONL or YAML"
        ) from exc
    items: list[tuple[str, object]] = []
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text) or []
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if not isinstance(data, list):
            raise ConfigError(f"{path}: expected a list of queries")
        items = [(f"item {i + 1}", d) for i, d in enumerate(data)]
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                items.append((f"line {n}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not valid JSON: {exc.msg}") from exc
    queries: list[EvalQuery] = []
    for where, item in items:
        try:
            queries.append(EvalQuery.model_validate(item))
        except (ValidationError, ValueError) as exc:
            raise ConfigError(f"{path} {where}: {exc}".splitlines()[0] + f" ({_first_error(exc)})") from exc
    if not queries:
        raise ConfigError(f"{path}: no queries")
    ids = [q.id for q in queries]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ConfigError(f"{path}: duplicate ids {', '.join(dupes)}")
    return queries


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        e = exc.errors()[0]
        return f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
    return str(exc)
