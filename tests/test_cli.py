from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore
from tests.markdown_papers import markdown as paper_markdown

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
    assert set(data) == {
        "title",
        "authors",
        "year",
        "pages",
        "structure",
        "sections",
        "supplied_sections",
        "tables",
        "chunks",
    }
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


PAPER_KEYS = {"doc_id", "title", "year", "pages", "n_chunks", "status", "source", "authors", "aliases"}


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
    flash = next(p for p in listed if p["title"].startswith("FlashRank"))
    assert {"FlashRank", "Okafor", "Okafor et al"} <= set(flash["aliases"]) and "Mira Okafor" in flash["authors"]
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


# --- hardening ------------------------------------------------------------------------------------------


def small_paper(title: str, topic: str) -> str:
    sections = [
        ("## Abstract", [f"We study {topic} and report what we found about {topic} in three experiments."]),
        ("## 1 Method", [f"Our method for {topic} is simple: measure, compare and write the numbers down."]),
    ]
    return paper_markdown(title, 2024, sections)


def test_reading_a_knowledge_base_that_does_not_exist_says_so(
    sample_kb: PaperStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "a", "query": "what is FlashRank?"}\n')
    runner = CliRunner()
    for args in (
        ["papers"],
        ["ask", "what is FlashRank?"],
        ["chat"],
        ["eval", str(gold)],
        ["check"],
        ["remove", "abcd"],
    ):
        result = runner.invoke(app, [*args, "--kb", "typo"], input="/quit\n")
        assert result.exit_code == 1, (args, result.stdout)
        assert "knowledge base 'typo' does not exist (existing: 'papers')" in result.stderr, args
    assert sample_kb.client.list_collections() == ["papers_chunks", "papers_papers"]  # no kb was created

    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "nothing-here"))
    result = runner.invoke(app, ["papers"])
    assert result.exit_code == 1 and "there is no store at" in result.stderr and "paperscope ingest" in result.stderr
    assert not (tmp_path / "nothing-here").exists()


def test_bad_scopes_and_wordless_questions_are_refused_before_anything_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "no-store"))  # opening would fail: validation comes first
    runner = CliRunner()
    cases = {
        ("ask", "anything", "--section", "NOPE"): "unknown section category 'NOPE'",
        ("ask", "anything", "--paper", "abc"): "doc_id prefix 'abc' is too short: give at least 4 characters",
        ("ask", "anything", "--paper", 'x" or 1'): "invalid doc_id",
        ("ask", "?!..."): "the question has no words",
        ("ask", "   "): "the question is empty",
        ("remove", "abc"): "doc_id prefix 'abc' is too short: give at least 4 characters",
    }
    for args, message in cases.items():
        result = runner.invoke(app, list(args))
        assert result.exit_code == 1 and message in result.stderr, (args, result.stderr)
        assert "does not exist" not in result.stderr
    assert not (tmp_path / "no-store").exists()


def test_piped_ingest_lines_keep_every_column_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "60")  # narrow, and not a terminal
    long_name = "a-rather-long-file-name-for-a-paper-about-tidal-energy-final-v2.md"
    (tmp_path / long_name).write_text(small_paper("Tidal Energy Without Tears: A Long Title That Goes On", "tides"))
    broken = tmp_path / "broken-with-a-long-name-too.pdf"
    broken.write_bytes(b"%PDF-1.4 not really")
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / long_name), str(broken)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("ingested") and long_name in line and "A Long Title That Goes On" in line for line in lines
    )
    failed = next(line for line in lines if line.startswith("failed"))
    assert "broken-with-a-long-name-too.pdf: truncated PDF (no %%EOF marker at the end of the file)" in failed


def test_ctrl_c_during_ingest_says_what_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import paperscope.rag.ingest as ingest_module

    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    files = [tmp_path / "a.md", tmp_path / "b.md"]
    files[0].write_text(small_paper("A Paper On Owls", "owls"))
    files[1].write_text(small_paper("A Paper On Moths", "moths"))
    real_parse = ingest_module.parse_file

    def parse_then_ctrl_c(path: Path) -> object:
        if path.name == "b.md":
            raise KeyboardInterrupt  # the user presses Ctrl-C while the second file is parsed
        return real_parse(path)

    monkeypatch.setattr(ingest_module, "parse_file", parse_then_ctrl_c)
    result = CliRunner().invoke(app, ["ingest", *map(str, files)])
    assert result.exit_code == 130
    assert "interrupted: kept the 1 file(s) finished before it (1 ingested); b.md was not finished" in result.stderr
    assert "Run the same `paperscope ingest` again" in result.stderr
    monkeypatch.setattr(ingest_module, "parse_file", real_parse)
    again = CliRunner().invoke(app, ["ingest", *map(str, files), "--json"])
    assert [f["status"] for f in json.loads(again.stdout)["files"]] == ["unchanged", "ingested"]


def test_settings_mistakes_are_one_line_errors_or_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    runner = CliRunner()

    def fails(message: str, *args: str) -> None:
        result = runner.invoke(app, list(args or ["papers"]))
        assert result.exit_code == 1, (args, result.stdout, result.exception)
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr

    monkeypatch.setenv("PAPERSCOPE_RETRIEVAL", '{"k": 3,')
    fails("PAPERSCOPE_RETRIEVAL: not valid JSON")
    fails("PAPERSCOPE_RETRIEVAL: not valid JSON", "parse", "nothing.md")
    monkeypatch.delenv("PAPERSCOPE_RETRIEVAL")
    monkeypatch.setenv("PAPERSCOPE_CHUNKING__CHUNK_SIZ", "100")
    fails("unknown setting PAPERSCOPE_CHUNKING__CHUNK_SIZ; did you mean PAPERSCOPE_CHUNKING__CHUNK_SIZE?")
    monkeypatch.delenv("PAPERSCOPE_CHUNKING__CHUNK_SIZ")
    home_file = tmp_path / "a-file"
    home_file.write_text("not a directory")
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home_file))
    fails(f"PAPERSCOPE_HOME {home_file}: is a file, not a directory")
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home_file / "sub"))
    fails(f"PAPERSCOPE_HOME {home_file / 'sub'}: cannot be created: {home_file} is a file")
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PAPERSCOPE_RETRIVAL", '{"k": 3}')
    result = runner.invoke(app, ["papers"])
    assert (
        "warning: unknown setting PAPERSCOPE_RETRIVAL is ignored; did you mean PAPERSCOPE_RETRIEVAL?" in result.stderr
    )
    monkeypatch.delenv("PAPERSCOPE_RETRIVAL")
    binary = tmp_path / "gold.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    fails("gold.jsonl: not a UTF-8 text file", "eval", str(binary))


def test_milvus_uri_may_name_a_lite_file(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    """pymilvus reads MILVUS_URI when imported and rejects a path; paperscope takes it as a Milvus Lite file."""
    db = tmp_path / "kb" / "papers.db"
    settings = Settings(home=tmp_path / "home", store={"uri": str(db)})
    with PaperStore.open(settings, local_embedder) as store:
        assert store.is_lite and store.uri == str(db.resolve())
    env = {**os.environ, "MILVUS_URI": str(db), "PAPERSCOPE_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "paperscope.cli", "papers", "--json"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stderr
    env["MILVUS_URI"] = str(tmp_path / "kbdir")
    result = subprocess.run([sys.executable, "-m", "paperscope.cli", "papers"], env=env, capture_output=True, text=True)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "MILVUS_URI" in result.stderr and "must end in .db" in result.stderr


def test_listing_papers_never_needs_the_embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    (tmp_path / "p.md").write_text(small_paper("A Paper On Lichens", "lichens"))
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(tmp_path / "p.md")]).exit_code == 0
    shutil.rmtree(home / "cache")
    (home / "cache").write_text("a file where the cache directory belongs")
    listed = runner.invoke(app, ["papers"])
    assert listed.exit_code == 0 and "Lichens" in listed.stdout and "warning" not in listed.stderr
    asked = runner.invoke(app, ["ask", "What do the authors study about lichens?"])
    assert asked.exit_code == 0 and "[1]" in asked.stdout
    assert "warning: embedding cache" in asked.stderr and "cannot be created" in asked.stderr


def test_an_empty_knowledge_base_with_a_paper_waiting_for_repair_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    (tmp_path / "p.md").write_text(small_paper("A Paper On Ferns", "ferns"))
    runner = CliRunner()
    [done] = json.loads(runner.invoke(app, ["ingest", str(tmp_path / "p.md"), "--json"]).stdout)["files"]
    with PaperStore.open(Settings(home=tmp_path / "home")) as store:
        store.set_status(done["doc_id"], "ingesting")  # what a killed ingest leaves
    result = runner.invoke(app, ["ask", "What about ferns?", "--json"])
    answer = json.loads(result.stdout)
    assert "empty" not in answer["answer"] and answer["supported"] is False
    assert "1 paper(s) of the knowledge base wait for repair" in answer["answer"]
    assert "'A Paper On Ferns'" in answer["answer"] and "paperscope check --repair" in answer["answer"]
