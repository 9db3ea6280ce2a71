"""A damaged Milvus Lite store, made by editing its files as a crash or a disk fault would: a paper is never
listed as ready while its chunks are gone, reading commands say so in one line, and `ingest` repairs it."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from paperscope.rag.store import PaperStore
from tests.markdown_papers import markdown
from tests.served import PAPERSCOPE

TOPICS = ("river deltas", "moon dust")


def paper(topic: str) -> str:
    return markdown(
        f"A Study Of {topic.title()}",
        2023,
        [
            ("## Abstract", [f"We look at {topic} closely. " * 6]),
            ("## 1 Method", [f"We measured {topic} with a spectrometer for a year. " * 6]),
            ("## 2 Results", [f"The {topic} changed a lot over the seasons. " * 6]),
        ],
    )


@pytest.fixture
def home(tmp_path: Path, local_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A knowledge base of two small papers, closed (so its files can be edited), the CLI pointed at it."""
    settings = Settings(home=tmp_path / "home", chunking={"chunk_size": 40})
    files = []
    for topic in TOPICS:
        files.append(tmp_path / f"{topic.replace(' ', '_')}.md")
        files[-1].write_text(paper(topic))
    with PaperStore.open(settings, local_embedder) as store:
        assert not ingest(files, settings, store).failed
    monkeypatch.setenv("PAPERSCOPE_HOME", str(settings.home))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    for name in ("OPENAI_BASE_URL", "PAPERSCOPE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def chunks_dir(home: Path) -> Path:
    return home / "home" / "milvus.db" / "collections" / "papers_chunks"


def papers_json(runner: CliRunner) -> list[dict[str, object]]:
    result = runner.invoke(app, ["papers", "--json"])
    assert result.exit_code == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def assert_whole_again(runner: CliRunner) -> None:
    assert {r["status"] for r in papers_json(runner)} == {"ready"}
    check = runner.invoke(app, ["check"])
    assert check.exit_code == 0 and "no problems" in check.stdout
    answer = json.loads(runner.invoke(app, ["ask", "What was measured in A Study Of Moon Dust?", "--json"]).stdout)
    assert answer["sources"] and "moon dust" in answer["sources"][0]["text"]


def test_a_garbage_manifest_is_no_paper_listed_as_ready_and_ingest_repairs_it(home: Path) -> None:
    """Milvus Lite falls back to its previous manifest: chunks vanish while the catalogue lists the papers."""
    (chunks_dir(home) / "manifest.json").write_text("garbage{{ not a manifest")
    runner = CliRunner()
    rows = papers_json(runner)
    assert {r["status"] for r in rows} == {"damaged"}
    listing = runner.invoke(app, ["papers"])
    assert "missing chunks" in listing.stderr and "check --repair" in listing.stderr
    asked = runner.invoke(app, ["ask", "What was measured in A Study Of Moon Dust?"])
    assert "missing chunks" in asked.stderr

    repaired = runner.invoke(app, ["ingest", str(home / "moon_dust.md"), "--json"])
    assert repaired.exit_code == 0, repaired.stderr
    report = json.loads(repaired.stdout)
    assert sorted(f["status"] for f in report["files"]) == ["repaired", "repaired"]  # the other from its own path
    assert_whole_again(runner)


def test_a_vanished_chunks_collection_is_reported_as_such_and_ingest_repairs_it(home: Path) -> None:
    shutil.rmtree(chunks_dir(home))
    runner = CliRunner()
    listing = runner.invoke(app, ["papers"])
    assert listing.exit_code == 0
    assert "does not exist" not in listing.stderr + listing.stdout
    assert "chunks collection was missing" in listing.stderr and "2 paper(s)" in listing.stderr
    assert {r["status"] for r in papers_json(runner)} == {"damaged"}
    check = runner.invoke(app, ["check"])
    assert check.exit_code == 1 and "none stored" in check.stdout

    repaired = runner.invoke(app, ["ingest", str(home / "moon_dust.md")])
    assert repaired.exit_code == 0, repaired.stderr
    assert "2 repaired" in repaired.stdout
    assert_whole_again(runner)


def test_a_damaged_paper_no_file_holds_fails_with_the_reason(home: Path) -> None:
    (chunks_dir(home) / "manifest.json").write_text("{")
    (home / "river_deltas.md").unlink()
    result = CliRunner().invoke(app, ["ingest", str(home / "moon_dust.md"), "--json"])
    assert result.exit_code == 1
    files = {f["status"]: f for f in json.loads(result.stdout)["files"]}
    assert "repaired" in files
    assert "damaged (listed with" in files["failed"]["error"] and "no file holds it" in files["failed"]["error"]


def test_asking_about_a_paper_that_waits_for_repair_names_it(home: Path, local_embedder: CachedEmbedder) -> None:
    settings = Settings(home=home / "home")
    with PaperStore.open(settings, local_embedder) as store:
        moon = next(p for p in store.list_papers() if "Moon" in p.title)
        store.set_status(moon.doc_id, "ingesting")  # what a killed ingest leaves
    answer = json.loads(
        CliRunner().invoke(app, ["ask", "In 'A Study Of Moon Dust', what was measured?", "--json"]).stdout
    )
    assert answer["track"] == "NONE" and not answer["supported"]
    assert any("'A Study Of Moon Dust' is in the knowledge base but cannot be searched" in n for n in answer["notes"])


def paperscope(*args: str) -> subprocess.CompletedProcess[str]:
    """The `paperscope` executable over the home the `home` fixture points PAPERSCOPE_HOME at."""
    return subprocess.run([str(PAPERSCOPE), *args], capture_output=True, text=True, timeout=300)


def garble(path: Path, at: int) -> None:
    """Random bytes over 64 bytes of a file at offset `at`, as a disk fault would leave them."""
    raw = bytearray(path.read_bytes())
    raw[at : at + 64] = random.Random(7).randbytes(64)
    path.write_bytes(bytes(raw))


def test_a_garbled_chunks_data_file_is_named_with_what_to_do_and_check_repairs(home: Path) -> None:
    """Milvus Lite's own error ("Deserializing page header failed", over lines) names no file."""
    [data] = (chunks_dir(home) / "partitions" / "_default" / "data").glob("*.parquet")
    garble(data, 4)  # the first page header, behind the magic bytes
    todo = (
        f"move {chunks_dir(home)} aside, then `paperscope check --repair --kb papers` makes the collection again and "
        "ingests its papers again from their files"
    )
    for command in ("papers", "check"):
        result = paperscope(command)
        assert result.returncode == 1 and result.stdout == "", result.stderr
        [line] = result.stderr.splitlines()
        said = f"error: knowledge base 'papers': collection papers_chunks is damaged: {data} cannot be read ("
        assert line.startswith(said) and line.endswith(f"); {todo}"), line

    shutil.move(chunks_dir(home), home / "chunks-aside")
    runner = CliRunner()
    repaired = runner.invoke(app, ["check", "--repair"])
    assert repaired.exit_code == 0 and "all 2 problem(s) fixed" in repaired.stdout, repaired.stdout
    assert_whole_again(runner)


def test_a_garbled_index_file_is_named_and_deleting_it_is_enough(home: Path) -> None:
    [index] = (chunks_dir(home) / "partitions" / "_default" / "indexes").glob("*.vector.hnsw.idx")
    garble(index, 0)
    result = paperscope("papers")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: knowledge base 'papers': collection papers_chunks is damaged: {index} cannot be")
    assert line.endswith("; delete that file: Milvus Lite builds it again from the collection's data"), line
    index.unlink()
    assert_whole_again(CliRunner())
