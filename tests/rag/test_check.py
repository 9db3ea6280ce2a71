"""`paperscope check`: a real Milvus Lite store damaged the ways a crash or a bug can, found and repaired."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from paperscope.rag.check import check_store, last_failed, record, repair
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from paperscope.rag.store import PaperStore
from tests.damaged_stores import overwrite_vector_bytes
from tests.markdown_papers import markdown

TOPICS = {"gap": "river deltas", "orphan": "moon dust", "gone": "desert dunes", "empty": "ice cores", "fine": "kelp"}


def paper(topic: str) -> str:
    return markdown(
        f"A Study Of {topic.title()}",
        2023,
        [
            ("## Abstract", [f"We look at {topic} closely. " * 6]),
            ("## 1 Method", [f"We measured {topic} in the field for a year. " * 6]),
            ("## 2 Results", [f"The {topic} changed a lot over the seasons. " * 6]),
        ],
    )


def test_check_finds_and_repairs_what_a_crash_leaves(
    tmp_path: Path, local_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(home=tmp_path / "home", chunking={"chunk_size": 40})
    files = {}
    for name, topic in TOPICS.items():
        files[name] = tmp_path / f"{name}.md"
        files[name].write_text(paper(topic))
    with PaperStore.open(settings, local_embedder) as store:
        ids = {Path(f.path).stem: f.doc_id or "" for f in ingest(list(files.values()), settings, store).files}
        assert check_store(store).ok
        chunks = {name: store.get_chunks(doc_id) for name, doc_id in ids.items()}
        assert all(len(c) >= 3 for c in chunks.values())
        # A chunk lost in the middle; a catalogue row lost; a paper cut short whose file is gone since;
        # a paper whose chunks are all gone.
        store.client.delete(store.chunks_name, ids=[chunks["gap"][1].id])
        store.client.delete(store.papers_name, filter=f'doc_id == "{ids["orphan"]}"')
        store.set_status(ids["gone"], "ingesting")
        files["gone"].unlink()
        store.client.delete(store.chunks_name, filter=f'doc_id == "{ids["empty"]}"')

        report = check_store(store)
        found = {(p.doc_id, p.issue) for p in report.problems}
        assert found == {
            (ids["gap"], "count"),
            (ids["orphan"], "orphans"),
            (ids["gone"], "not_ready"),
            (ids["empty"], "no_chunks"),
        }
        gap = next(p for p in report.problems if p.issue == "count")
        assert gap.detail == f"listed with {len(chunks['gap'])} chunks, {len(chunks['gap']) - 1} stored"
        assert store.search_bm25("moon dust", k=5) == []  # the orphan is never shown meanwhile

        repair(store, report, settings)
        done = {p.issue: p for p in report.problems}
        assert done["count"].fixed and done["count"].repair == f"ingested again from {files['gap']}"
        assert done["no_chunks"].fixed and done["orphans"].fixed and done["orphans"].repair.startswith("deleted")
        assert not done["not_ready"].fixed and "marked broken" in done["not_ready"].repair
        assert [p.issue for p in report.remaining] == ["not_ready"]

        again = check_store(store)
        assert [(p.doc_id, p.issue) for p in again.problems] == [(ids["gone"], "broken")]
        assert len(store.get_chunks(ids["gap"])) == len(chunks["gap"])
        assert store.count_chunks(ids["orphan"], kind=None) == 0
        assert store.search_bm25("river deltas", k=1)[0].doc_id == ids["gap"]
        record(settings.home, again)
    assert last_failed(settings.home, "papers") == {"problems": 1, "at": again.at}

    # The command line: check says what is wrong, ingest warns until it is put right.
    monkeypatch.setenv("PAPERSCOPE_HOME", str(settings.home))
    runner = CliRunner()
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1 and "broken" in result.stdout and "A Study Of Desert Dunes" in result.stdout
    warned = runner.invoke(app, ["ingest", str(files["fine"]), "--json"])
    assert warned.exit_code == 0 and "the last `paperscope check`" in warned.stderr and "1 problem(s)" in warned.stderr
    assert runner.invoke(app, ["remove", ids["gone"][:8]]).exit_code == 0
    result = runner.invoke(app, ["check", "--repair"])
    assert result.exit_code == 0 and "no problems" in result.stdout
    assert last_failed(settings.home, "papers") is None
    assert "the last" not in runner.invoke(app, ["ingest", str(files["fine"])]).stderr


def test_check_finds_damaged_catalogue_vectors_and_computes_them_again(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    settings = Settings(home=tmp_path / "home", chunking={"chunk_size": 40})
    files = []
    for topic in ("river deltas", "moon dust", "kelp"):
        files.append(tmp_path / f"{topic.replace(' ', '_')}.md")
        files[-1].write_text(paper(topic))
    with PaperStore.open(settings, local_embedder) as store:
        ids = [f.doc_id or "" for f in ingest(files, settings, store).files]
        before = store.paper_vectors()
    nan, huge = ids[0], ids[1]
    overwrite_vector_bytes(tmp_path / "home" / "milvus.db", "papers", nan, b"\xff" * 16)  # four NaN
    overwrite_vector_bytes(tmp_path / "home" / "milvus.db", "papers", huge, b"\x7f\x7f\x7f\x7f" * 4)  # 4 of 3.4e38

    with PaperStore.open(settings, local_embedder) as store:
        report = check_store(store)
        assert {(p.doc_id, p.issue) for p in report.problems} == {(nan, "vector"), (huge, "vector")}
        details = {p.doc_id: p.detail for p in report.problems}
        assert details[nan] == "its catalogue vector holds 4 values that are not finite numbers (NaN or infinity)"
        assert details[huge] == "its catalogue vector has norm 6.79e+38 where the embedder gives 1"

        repair(store, report, settings)
        said = "its vector computed again from its title and abstract"
        assert all(p.fixed and p.repair == said for p in report.problems)
        assert check_store(store).ok
        after = store.paper_vectors()
        for doc_id in (nan, huge):
            assert sum(a * b for a, b in zip(before[doc_id], after[doc_id], strict=True)) == pytest.approx(1, abs=1e-5)
        assert store.search_papers("moon dust", k=1)[0].doc_id == huge
