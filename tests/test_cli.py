from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.cli.common import NO_MODEL_NOTED
from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore
from tests.damaged_stores import interrupt_ingest
from tests.markdown_papers import markdown as paper_markdown
from tests.unprivileged import chmod_tree, obeying_permissions, permissions_not_enforced

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


PAPER_KEYS = {
    "doc_id", "title", "year", "pages", "n_chunks", "planned_chunks", "status", "source", "authors", "aliases",
    "enrichments", "venue", "doi", "arxiv_id", "citation_key", "collections", "tags", "library",
}  # fmt: skip


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


NEW_CHUNKERS = ["sentence", "token", "semantic", "code"]


def _code_paper(tmp_path: Path) -> Path:
    source = tmp_path / "coded.md"
    intro = "We cache results, e.g. in memory (see Fig. 2). It saves 93.5% of the time. Loads are rare."
    code = "```python\nclass Cache:\n    def get(self, key):\n        return key\n\n\ndef helper():\n    pass\n```"
    source.write_text(paper_markdown("A Coded Paper", 2024, [("## Abstract", [intro]), ("## 1 Method", [intro, code])]))
    return source


@pytest.mark.parametrize("strategy", NEW_CHUNKERS)
def test_parse_with_the_new_chunkers(tmp_path: Path, strategy: str) -> None:
    result = CliRunner().invoke(app, ["parse", str(_code_paper(tmp_path)), "--strategy", strategy, "--json"])
    assert result.exit_code == 0, result.stderr
    chunks = json.loads(result.stdout)["chunks"]
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks))) and len(chunks) >= 2
    assert {c["section_title"] for c in chunks} == {"Abstract", "1 Method"}
    assert any("class Cache:" in c["text"] for c in chunks)
    if strategy == "code":  # the code block is a chunk of its own
        assert chunks[-1]["text"].startswith("```python\nclass Cache:") and len(chunks) == 3


def test_unknown_strategy_lists_the_new_chunkers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    for command in (["parse", str(_code_paper(tmp_path))], ["ingest", str(tmp_path)]):
        result = runner.invoke(app, [*command, "--strategy", "nope"])
        assert result.exit_code == 1 and "unknown chunking strategy 'nope'" in result.stderr
        assert all(name in result.stderr for name in NEW_CHUNKERS), result.stderr


def test_ingest_with_the_semantic_chunker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    source = _code_paper(tmp_path)
    result = CliRunner().invoke(app, ["ingest", str(source), "--kb", "sem", "--strategy", "semantic", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["files"][0]["status"] == "ingested" and report["files"][0]["chunks"] == 2


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

    (sample_kb.settings.home / NO_MODEL_NOTED).unlink(missing_ok=True)  # said once per data directory
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
    import paperscope.parser.bounded as files_module  # ingest parses through here (Markdown in-process)

    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    files = [tmp_path / "a.md", tmp_path / "b.md"]
    files[0].write_text(small_paper("A Paper On Owls", "owls"))
    files[1].write_text(small_paper("A Paper On Moths", "moths"))
    real_parse = files_module.parse_file

    def parse_then_ctrl_c(path: Path, **limits: int) -> object:
        if path.name == "b.md":
            raise KeyboardInterrupt  # the user presses Ctrl-C while the second file is parsed
        return real_parse(path, **limits)

    monkeypatch.setattr(files_module, "parse_file", parse_then_ctrl_c)
    result = CliRunner().invoke(app, ["ingest", *map(str, files)])
    assert result.exit_code == 130
    assert "interrupted: kept the 1 file(s) finished before it (1 ingested); b.md was not finished" in result.stderr
    assert "Run the same `paperscope ingest` again" in result.stderr
    monkeypatch.setattr(files_module, "parse_file", real_parse)
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
    # BM25 alone never embeds the question; a hybrid search does, and answers without the cache.
    monkeypatch.setenv("PAPERSCOPE_RETRIEVAL__RETRIEVER", "hybrid")
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


@pytest.mark.integration
def test_the_cli_on_a_milvus_server(tmp_path: Path, sample_pdfs: dict[str, Path], milvus_server_uri: str) -> None:
    """ingest, papers, ask and check as a user runs them with MILVUS_URI=http://host:port (a real subprocess)."""
    from tests.milvus_server import connect

    kb = f"cli{uuid.uuid4().hex[:10]}"  # the server is shared by the session: a kb of our own, dropped after
    env = {k: v for k, v in os.environ.items() if k not in ("PAPERSCOPE_LLM_MODEL", "OPENAI_BASE_URL")}
    env |= {"MILVUS_URI": milvus_server_uri, "PAPERSCOPE_HOME": str(tmp_path / "home")}

    def paperscope(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "paperscope.cli", *args, "--kb", kb]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

    client = connect(milvus_server_uri, os.environ.get("MILVUS_TOKEN") or "")
    try:
        pdfs = [sample_pdfs["flashrank"], sample_pdfs["marten"]]
        ingested = paperscope("ingest", *map(str, pdfs), "--json")
        assert ingested.returncode == 0, ingested.stderr
        files = json.loads(ingested.stdout)["files"]
        assert [f["status"] for f in files] == ["ingested", "ingested"]
        marten = files[1]["doc_id"]
        assert {f"{kb}_chunks", f"{kb}_papers"} <= set(client.list_collections())  # on the server...
        assert not (tmp_path / "home" / "milvus.db").exists()  # ...and no Lite file beside it

        listed = paperscope("papers", "--json")
        assert listed.returncode == 0, listed.stderr
        papers = json.loads(listed.stdout)
        assert sorted(p["title"].split(":")[0] for p in papers) == ["FlashRank", "Marten-1B"]
        assert all(p["status"] == "ready" and p["n_chunks"] > 10 for p in papers)

        question = "How many GPUs were used to pretrain Marten-1B, and for how long?"
        asked = paperscope("ask", question, "--json", "--no-agent")
        assert asked.returncode == 0, asked.stderr
        answer = json.loads(asked.stdout)
        assert answer["sources"] and {s["doc_id"] for s in answer["sources"]} == {marten}
        assert "256" in answer["answer"] and "19 days" in answer["answer"]

        checked = paperscope("check", "--json")
        assert checked.returncode == 0, checked.stderr
        assert json.loads(checked.stdout)["problems"] == []
        # A chunk lost on the server is found, and --repair ingests the paper again from its file.
        chunks, n = f"{kb}_chunks", next(p["n_chunks"] for p in papers if p["doc_id"] == marten)
        client.delete(chunks, filter=f'doc_id == "{marten}" and chunk_index == 3')
        repaired = paperscope("check", "--repair", "--json")
        assert repaired.returncode == 0, repaired.stderr
        assert [(p["doc_id"], p["fixed"]) for p in json.loads(repaired.stdout)["problems"]] == [(marten, True)]
        rows = client.query(
            chunks,
            filter=f'doc_id == "{marten}" and kind == "chunk"',
            output_fields=["chunk_index"],
            consistency_level="Strong",
        )
        assert sorted(r["chunk_index"] for r in rows) == list(range(n))
    finally:
        for name in (f"{kb}_chunks", f"{kb}_papers"):
            client.drop_collection(name)
        client.close()


# Runs each command in one process (one model load), printing its exit code after it.
DRIVER = """
import sys
from paperscope.cli import app
for args in COMMANDS:
    print("<<run " + args[0] + ">>", flush=True)
    try:
        app(args)
    except SystemExit as exc:
        print("<<rc=%s>>" % (exc.code or 0), flush=True)
"""


def run_commands(commands: list[list[str]], env: dict[str, str], *, obey_permissions: bool = False) -> str:
    """stdout and stderr of `commands` run by DRIVER in a fresh process, as one text."""
    cmd = [sys.executable, "-c", f"COMMANDS = {commands!r}\n{DRIVER}"]
    result = subprocess.run(
        obeying_permissions(cmd) if obey_permissions else cmd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    return result.stdout


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERSCOPE_", "MILVUS_", "OPENAI_"))}
    return {**env, "PAPERSCOPE_HOME": str(home), "COLUMNS": "1000"}


def test_a_read_only_home_is_said_to_be_read_only_by_every_command(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    """A `chmod -R a-w` home, read by a process that obeys file permissions (as root: without CAP_DAC_*)."""
    if why := permissions_not_enforced(tmp_path):
        pytest.skip(why)
    home = tmp_path / "home"
    paper = tmp_path / "ferns.md"
    paper.write_text(small_paper("A Paper On Ferns", "ferns"))
    settings = Settings(home=home)
    with PaperStore.open(settings, local_embedder) as store:
        from paperscope.rag.ingest import ingest

        assert not ingest([paper], settings, store).failed
    chmod_tree(home, writable=False)
    try:
        commands = [["doctor"], ["papers"], ["ask", "What about ferns?"], ["check"], ["ingest", str(paper)]]
        out = run_commands([*commands, ["parse", str(paper)]], cli_env(home), obey_permissions=True)
    finally:
        chmod_tree(home, writable=True)
    assert "Traceback" not in out and "damaged" not in out, out
    assert re.findall(r"<<rc=(\d+)>>", out) == ["1", "1", "1", "1", "1", "0"], out
    said = f"{home / 'milvus.db'} is read-only (Permission denied): Milvus Lite must write to its data even to read it"
    runs = out.split("<<run ")[1:]
    for run in runs[:5]:
        lines = [line for line in run.splitlines() if said in line]
        assert len(lines) == 1 and "`paperscope parse` needs no store" in lines[0], run
    assert "A Paper On Ferns" in runs[5]  # parse needs no store


# A line of gRPC's C core (absl format): "E1125 10:09:16.486125   11474 chttp2_transport.cc:1435] ...".
GRPC_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\]", re.M)


def test_ingest_papers_and_ask_print_nothing_of_grpc(tmp_path: Path) -> None:
    """gRPC's own logging is off (see tests/test_backend_logs.py for a provoked GOAWAY); here every line is ours."""
    paper = tmp_path / "moss.md"
    paper.write_text(small_paper("A Paper On Moss", "moss"))
    env = {k: v for k, v in cli_env(tmp_path / "home").items() if not k.startswith("GRPC_")}
    out = run_commands([["ingest", str(paper)], ["papers"], ["ask", "What about moss?"]], env)
    assert re.findall(r"<<rc=(\d+)>>", out) == ["0", "0", "0"], out
    assert "A Paper On Moss" in out
    assert "GOAWAY" not in out and "too_many_pings" not in out and not GRPC_LINE.search(out), out


def test_a_text_file_over_the_size_limit_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_PARSING__MAX_TEXT_BYTES", "100")
    big = tmp_path / "big.md"
    big.write_text(small_paper("A Paper Too Long For The Limit", "limits"))
    result = CliRunner().invoke(app, ["parse", str(big)])
    assert result.exit_code == 1
    size = big.stat().st_size
    assert result.stderr == (
        f"error: big.md: too large for a text file ({size:,} bytes > 100; the limit is "
        "PAPERSCOPE_PARSING__MAX_TEXT_BYTES)\n"
    )


def test_ingest_lists_what_a_folder_walk_did_not_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "p.md").write_text(small_paper("A Paper On Kelp", "kelp"))
    (folder / "gone.pdf").symlink_to(tmp_path / "deleted.pdf")
    result = CliRunner().invoke(app, ["ingest", str(folder)])
    assert result.exit_code == 0, result.stderr
    assert f"skipped  {folder / 'gone.pdf'}: a link to nothing (what it points to does not exist)\n" in result.stdout
    report = json.loads(CliRunner().invoke(app, ["ingest", str(folder), "--json"]).stdout)
    assert report["unread"] == [
        {"path": str(folder / "gone.pdf"), "reason": "a link to nothing (what it points to does not exist)"}
    ]


def test_paths_that_cannot_be_read_fail_alone_each_in_one_line(tmp_path: Path) -> None:
    """A paper in a folder without search permission (named, or met by a walk) and a chmod 000 file, ingested and
    parsed by the `paperscope` executable in a process that obeys file permissions (as root: without CAP_DAC_*)."""
    if why := permissions_not_enforced(tmp_path):
        pytest.skip(why)
    library = tmp_path / "library"
    locked = library / "locked"
    locked.mkdir(parents=True)
    inside = locked / "inside.md"
    inside.write_text(small_paper("A Paper Locked Away", "locks"))
    secret = library / "secret.md"
    secret.write_text(small_paper("A Secret Paper", "secrets"))
    good = library / "good.md"
    good.write_text(small_paper("A Good Paper On Reeds", "reeds"))
    env = cli_env(tmp_path / "home")
    paperscope = str(Path(sys.executable).with_name("paperscope"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = obeying_permissions([paperscope, *args])
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)

    locked.chmod(0o600)  # its names can be listed, its files not reached
    secret.chmod(0)
    try:
        named = run("ingest", str(inside), str(secret), str(good))
        walked = run("ingest", str(library), "--json")
        parsed = [run("parse", str(inside)), run("parse", str(secret))]
    finally:
        locked.chmod(0o755)
        secret.chmod(0o644)
    for result in (named, walked, *parsed):
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = named.stdout.splitlines()
    denied = [line for line in lines if line.startswith("failed")]
    assert [line.split()[1] for line in denied] == ["inside.md", "secret.md"], named.stdout
    assert denied[0].endswith(f"{inside}: cannot read: Permission denied"), named.stdout
    assert denied[1].endswith("secret.md: cannot read: Permission denied"), named.stdout
    assert any(line.startswith("ingested") and "A Good Paper On Reeds" in line for line in lines), named.stdout
    report = json.loads(walked.stdout)
    statuses = {Path(f["path"]).name: (f["status"], f["error"]) for f in report["files"]}
    assert statuses == {
        "inside.md": ("failed", f"{inside}: cannot read: Permission denied"),
        "secret.md": ("failed", "secret.md: cannot read: Permission denied"),
        "good.md": ("unchanged", None),
    }
    assert report["unread"] == []
    assert [p.stderr for p in parsed] == [
        "error: inside.md: cannot read: Permission denied\n",
        "error: secret.md: cannot read: Permission denied\n",
    ]


def test_a_paper_an_interrupted_ingest_left_lists_the_chunks_it_stored(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home, chunking={"chunk_size": 40}, embedding={"batch_size": 2})
    whole, cut = tmp_path / "whole.md", tmp_path / "cut.md"
    whole.write_text(small_paper("A Paper On Ferns", "ferns"))
    long_section = ("## 2 Results", [f"Result {i}: the ferns grew {i} cm in the shade of old oaks." for i in range(40)])
    cut.write_text(paper_markdown("A Paper Cut Short", 2024, [long_section]))
    with PaperStore.open(settings, local_embedder) as store:
        from paperscope.rag.ingest import ingest

        assert not ingest([whole], settings, store).failed
        doc_id, planned = interrupt_ingest(store, cut, stored=4)
        assert store.count_chunks(doc_id) == 4 and planned > 8
    paperscope = str(Path(sys.executable).with_name("paperscope"))
    listed = subprocess.run([paperscope, "papers", "--json"], env=cli_env(home), capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {r["title"]: r for r in json.loads(listed.stdout)}
    assert rows["A Paper Cut Short"]["status"] == "ingesting"
    assert (rows["A Paper Cut Short"]["n_chunks"], rows["A Paper Cut Short"]["planned_chunks"]) == (4, planned)
    assert rows["A Paper On Ferns"]["planned_chunks"] is None and rows["A Paper On Ferns"]["n_chunks"] == 2
    table = subprocess.run([paperscope, "papers"], env=cli_env(home), capture_output=True, text=True)
    [line] = [line for line in table.stdout.splitlines() if doc_id[:8] in line]
    cells = [cell.strip() for cell in line.split("│")[1:-1]]  # doc_id, year, pages, chunks, title
    assert cells[3:] == ["4", f"(ingesting: 4 of {planned} chunks stored; ingest again to repair) A Paper Cut Short"]
