from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from paperscope.cli import app

SECTION_KEYS = {"title", "level", "category", "page"}
CHUNK_KEYS = {
    "chunk_index",
    "section_title",
    "parent_section",
    "section_category",
    "hierarchy_level",
    "page_number",
    "text",
}


def test_parse_json_shape(sample_pdfs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["parse", str(sample_pdfs["flashrank"]), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)  # nothing but the JSON on stdout
    assert set(data) == {"title", "year", "pages", "sections", "chunks"}
    assert data["title"].startswith("FlashRank")
    assert data["year"] == 2023
    assert all(set(s) == SECTION_KEYS for s in data["sections"])
    assert all(set(c) == CHUNK_KEYS for c in data["chunks"])
    assert [c["chunk_index"] for c in data["chunks"]] == list(range(len(data["chunks"])))
    sub = next(c for c in data["chunks"] if c["hierarchy_level"] == 1)
    assert sub["parent_section"]


def test_parse_tree(sample_pdfs: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["parse", str(sample_pdfs["blendir"])])
    assert result.exit_code == 0
    assert "III. ADAPTIVE FUSION" in result.stdout and "METHOD" in result.stdout
