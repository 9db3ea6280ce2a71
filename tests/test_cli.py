from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.rag.store import PaperStore

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
    assert set(data) == {"title", "authors", "year", "pages", "structure", "sections", "supplied_sections", "chunks"}
    assert data["structure"] == "found"
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


def _flat_pdf(path: Path) -> Path:
    """A paper in which nothing stands out as a heading."""
    import pymupdf

    doc = pymupdf.open()
    sentence = "Structure-aware retrieval finds the passage that answers a question about a paper. "
    page, y = doc.new_page(), 72.0
    for text in ["Abstract: " + sentence * 4, *([sentence * 5] * 6)]:
        y += 300 - page.insert_textbox(pymupdf.Rect(72, y, 523, y + 300), text, fontsize=10) + 9
    doc.save(path)
    return path


def test_structure_none_found_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flat = _flat_pdf(tmp_path / "flat.pdf")
    runner = CliRunner()
    tree = runner.invoke(app, ["parse", str(flat)])
    assert tree.exit_code == 0 and "structure: none found" in tree.stdout and "flat.pdf" in tree.stdout
    data = json.loads(runner.invoke(app, ["parse", str(flat), "--json"]).stdout)
    assert data["structure"] == "none found" and data["sections"] == []
    assert [s["category"] for s in data["supplied_sections"]] == ["ABSTRACT", "OTHER"]

    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    result = runner.invoke(app, ["ingest", str(flat), "--kb", "flat"])
    assert result.exit_code == 0, result.stderr
    assert "structure: none found" in result.stdout
    report = json.loads(runner.invoke(app, ["ingest", str(flat), "--kb", "flat", "--force", "--json"]).stdout)
    assert report["files"][0]["structure_found"] is False


PAPER_KEYS = {"doc_id", "title", "year", "pages", "n_chunks", "status", "source"}


def test_ingest_papers_remove(tmp_path: Path, sample_pdfs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf at all")
    runner = CliRunner()
    files = [str(sample_pdfs["flashrank"]), str(sample_pdfs["marten"]), str(broken)]

    result = runner.invoke(app, ["ingest", *files, "--kb", "cli"])
    assert result.exit_code == 1  # one file failed, the others went in
    assert "broken.pdf" in result.stdout and "2 ingested" in result.stdout and "1 failed" in result.stdout

    result = runner.invoke(app, ["ingest", *files[:2], "--kb", "cli", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [f["status"] for f in report["files"]] == ["unchanged", "unchanged"]

    result = runner.invoke(app, ["papers", "--kb", "cli", "--json"])
    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)
    assert all(set(p) == PAPER_KEYS for p in listed)
    assert sorted(p["title"].split(":")[0] for p in listed) == ["FlashRank", "Marten-1B"]
    assert all(p["status"] == "ready" and p["n_chunks"] > 10 and p["pages"] >= 5 for p in listed)
    marten = next(p for p in listed if p["title"].startswith("Marten"))
    assert marten["year"] and marten["source"] == str(sample_pdfs["marten"].resolve())

    table = runner.invoke(app, ["papers", "--kb", "cli"])
    assert marten["doc_id"][:8] in table.stdout and "FlashRank" in table.stdout

    result = runner.invoke(app, ["remove", marten["doc_id"][:8], "--kb", "cli"])
    assert result.exit_code == 0, result.stderr
    assert "Marten-1B" in result.stdout
    left = json.loads(runner.invoke(app, ["papers", "--kb", "cli", "--json"]).stdout)
    assert [p["title"].split(":")[0] for p in left] == ["FlashRank"]

    result = runner.invoke(app, ["remove", marten["doc_id"], "--kb", "cli"])
    assert result.exit_code == 1 and "no paper" in result.stderr
    result = runner.invoke(app, ["remove", 'x" or doc_id != "', "--kb", "cli"])
    assert result.exit_code == 1 and "invalid doc_id" in result.stderr
    assert len(json.loads(runner.invoke(app, ["papers", "--kb", "cli", "--json"]).stdout)) == 1


def test_ingest_rejects_bad_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(tmp_path), "--strategy", "nonsense"])
    assert result.exit_code == 1 and "unknown chunking strategy 'nonsense'" in result.stderr
    result = runner.invoke(app, ["papers", "--kb", "bad name!"])
    assert result.exit_code == 1 and "invalid setting store.kb" in result.stderr


SOURCE_KEYS = {"doc_id", "title", "section_title", "section_category", "chunk_index", "chunk_range", "page", "text"}


def test_ask_json(sample_kb: PaperStore, sample_doc_ids: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["ask", "How many parameters does BlendIR's weight predictor have?", "--json"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["track"] == "A" and answer["extractive"] is True
    assert answer["sources"] and all(set(s) >= SOURCE_KEYS for s in answer["sources"])
    assert {s["doc_id"] for s in answer["sources"]} == {sample_doc_ids["blendir"]}
    assert "513" in answer["answer"]
    lo, hi = answer["sources"][0]["chunk_range"]
    assert lo <= answer["sources"][0]["chunk_index"] <= hi

    doc = sample_doc_ids["longcite"]
    result = runner.invoke(
        app, ["ask", "what data", "--paper", doc[:8], "--section", "METHOD", "--k", "2", "--json", "--no-agent"]
    )
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["track"] == "A" and 0 < len(answer["sources"]) <= 2
    assert {(s["doc_id"], s["section_category"]) for s in answer["sources"]} == {(doc, "METHOD")}

    result = runner.invoke(app, ["ask", "How does it work?"])
    assert result.exit_code == 0 and "Track" in result.stdout and "[1]" in result.stdout
    assert "No LLM configured" in result.stderr

    result = runner.invoke(app, ["ask", "anything", "--paper", "ffffffff"])
    assert result.exit_code == 1 and "--paper ffffffff is not a paper" in result.stderr
    result = runner.invoke(app, ["ask", "anything", "--section", "NOPE"])
    assert result.exit_code == 1 and "unknown section category 'NOPE'" in result.stderr


def test_chat_command_reads_stdin(sample_kb: PaperStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    result = CliRunner().invoke(app, ["chat", "--no-agent"], input="What does TokenPrune prune?\n/papers\n/quit\n")
    assert result.exit_code == 0, result.stderr
    assert "single-shot, no LLM" in result.stdout
    assert "TokenPrune" in result.stdout and "[1]" in result.stdout
    assert "FlashRank" in result.stdout  # the /papers listing
