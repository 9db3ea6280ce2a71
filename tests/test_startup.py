"""Commands that only read start without loading what they do not use: no torch or sentence-transformers (the
embedding model) for `--help`, `papers`, `check` and a BM25 question, no agent graph, OpenAI client or PyMuPDF."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from tests.markdown_papers import markdown

HEAVY = ("torch", "sentence_transformers", "transformers", "langgraph", "langchain_openai", "openai", "pymupdf")
# Runs the CLI in a fresh interpreter and writes, at exit, which of HEAVY it had imported.
DRIVER = """
import atexit, json, runpy, sys
HEAVY, OUT = {heavy!r}, {out!r}
atexit.register(lambda: open(OUT, "w").write(json.dumps([m for m in HEAVY if m in sys.modules])))
sys.argv = ["paperscope", *{args!r}]
runpy.run_module("paperscope.cli", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, local_embedder: CachedEmbedder) -> Path:
    home = tmp_path_factory.mktemp("startup")
    source = home / "kelp.md"
    source.write_text(
        markdown(
            "Counting Sea Otters From Kelp Canopy Imagery",
            2020,
            [
                ("## Abstract", ["We count sea otters in 412 satellite images of kelp canopy with a detector."]),
                ("## 1 Method", ["The detector is trained on 9,800 labelled otter crops from aerial surveys."]),
            ],
        )
    )
    settings = Settings(home=home)
    from paperscope.rag.store import PaperStore

    with PaperStore.open(settings, local_embedder) as store:
        assert not ingest([source], settings, store).failed
    (home / "cache" / "embeddings.sqlite").unlink(missing_ok=True)  # no question's vector waits in the cache
    return home


def imported(home: Path, tmp_path: Path, *args: str) -> tuple[list[str], str]:
    """The HEAVY modules a `paperscope ARGS...` run imported, and what it printed."""
    out = tmp_path / "imported.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPERSCOPE_", "MILVUS_"))}
    env["PAPERSCOPE_HOME"] = str(home)
    code = DRIVER.format(heavy=HEAVY, out=str(out), args=list(args))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text()), result.stdout


@pytest.mark.parametrize("args", [["--help"], ["papers"], ["check"], ["papers", "--json"]])
def test_reading_commands_load_no_model(home: Path, tmp_path: Path, args: list[str]) -> None:
    loaded, printed = imported(home, tmp_path, *args)
    assert loaded == []
    assert "Otters" in printed or args == ["--help"] or args == ["check"]


def test_a_bm25_question_loads_no_embedding_model(home: Path, tmp_path: Path) -> None:
    """BM25 retrieval, MMR over the vectors the search returns, no LLM, the locator by names and BM25 alone
    (retrieval.locate_dense off): nothing needs the question's vector."""
    user_file = home / "config.toml"
    user_file.write_text("[retrieval]\nlocate_dense = false\n")
    try:
        loaded, printed = imported(home, tmp_path, "ask", "How many otter crops trained the detector?", "--json")
    finally:
        user_file.unlink()
    assert loaded == []
    answer = json.loads(printed)
    assert answer["sources"] and "9,800" in answer["answer"]


def test_a_question_embedded_by_the_onnx_model_loads_no_torch(home: Path, tmp_path: Path) -> None:
    """The default settings embed the question (the paper locator's dense search): ONNX Runtime does it, once the
    model was exported (by the first process that needed it; here, this test's)."""
    from paperscope.rag import onnx_model
    from paperscope.rag.tokens import default_model_dir

    assert onnx_model.load(default_model_dir()) is not None
    loaded, printed = imported(home, tmp_path, "ask", "Which detector counts the sea otters in kelp imagery?", "--json")
    assert loaded == []
    assert json.loads(printed)["sources"]


def test_papers_lists_a_store_unchanged_since_without_loading_milvus(home: Path, tmp_path: Path) -> None:
    """The first `papers` reads the store and keeps what it listed; the next one, with nothing written in between,
    answers from that listing without importing pymilvus (~1 s of a fresh process)."""
    heavy = (*HEAVY, "pymilvus")
    first = tmp_path / "first.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPERSCOPE_", "MILVUS_"))}
    env["PAPERSCOPE_HOME"] = str(home)

    def papers(out: Path) -> tuple[list[str], str]:
        code = DRIVER.format(heavy=heavy, out=str(out), args=["papers", "--json"])
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return json.loads(out.read_text()), result.stdout

    for listing in (home / "listings").glob("*.json"):
        listing.unlink()
    loaded, printed = papers(first)
    assert "pymilvus" in loaded
    again, printed_again = papers(tmp_path / "again.json")
    assert again == [] and printed_again == printed and "Otters" in printed


def test_a_command_answered_from_the_listing_loads_no_numpy_or_pattern_tables(home: Path, tmp_path: Path) -> None:
    """What a client of a running server imports too (`ask` through `serve` is a fresh process each time): numpy
    (the semantic chunker's), the reference-list patterns and Rich's Markdown (a model's answer only) are each tens
    of milliseconds of every command."""
    heavy = ("numpy", "paperscope.sources.references", "rich.markdown", "pymilvus")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPERSCOPE_", "MILVUS_"))}
    env["PAPERSCOPE_HOME"] = str(home)
    loaded: list[str] = []
    for run in ("first", "again"):  # the first run reads the store and writes the listing the second reads
        out = tmp_path / f"{run}.json"
        code = DRIVER.format(heavy=heavy, out=str(out), args=["papers", "--json"])
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        loaded = json.loads(out.read_text())
    assert loaded == []
