"""Ingest on a real Milvus Lite file with real local embeddings and real PDFs of the sample corpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from paperscope.config import Settings
from paperscope.parser import parse_file
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.embeddings import CachedEmbedder, make_embedder
from paperscope.rag.filters import SearchFilter
from paperscope.rag.ingest import FileResult, IngestInterrupted, doc_id_for, file_sha256, ingest
from paperscope.rag.paths import unescape_path
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import load_settings
from tests.markdown_papers import markdown as paper_markdown
from tests.unprivileged import obeying_permissions, permissions_not_enforced

PAPERS = ("flashrank", "quantkv", "hydra")


@cache
def embedder() -> CachedEmbedder:
    return make_embedder("local")


@pytest.fixture
def library(tmp_path: Path, sample_pdfs: dict[str, Path]) -> Path:
    """A folder of three sample PDFs, a nested one, a bad PDF and a file type that is skipped."""
    folder = tmp_path / "library"
    (folder / "nested").mkdir(parents=True)
    for name in PAPERS[:2]:
        shutil.copy(sample_pdfs[name], folder / f"{name}.pdf")
    shutil.copy(sample_pdfs[PAPERS[2]], folder / "nested" / f"{PAPERS[2]}.pdf")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    (folder / "notes.docx").write_bytes(b"ignored: not a supported type")
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PaperStore]:
    settings = Settings(home=tmp_path / "home")
    with PaperStore.open(settings, embedder()) as s:
        yield s


def by_name(results: list[FileResult]) -> dict[str, FileResult]:
    return {Path(r.path).name: r for r in results}


def assert_consistent(store: PaperStore) -> None:
    """Every paper ready, chunk_index 0..N-1 matching its catalogue row, no orphan rows."""
    papers = store.list_papers()
    for p in papers:
        assert p.ready, p
        indexes = [c.chunk_index for c in store.get_chunks(p.doc_id)]
        assert indexes == list(range(p.n_chunks)), p.title
    assert store.count_chunks(kind=None) == sum(len(store.get_chunks(p.doc_id, kind=None)) for p in papers)


def test_a_folder_goes_in_and_a_bad_file_does_not_stop_it(store: PaperStore, library: Path) -> None:
    report = ingest([library], store.settings, store)
    results = by_name(report.files)
    assert set(results) == {"flashrank.pdf", "quantkv.pdf", "hydra.pdf", "broken.pdf"}
    assert [results[f"{n}.pdf"].status for n in PAPERS] == ["ingested"] * 3
    bad = results["broken.pdf"]
    assert bad.status == "failed" and bad.error and bad.error.startswith("broken.pdf: ")
    assert report.count("failed") == 1 and report.count("ingested") == 3
    assert report.pages == sum(results[f"{n}.pdf"].pages for n in PAPERS) > 10
    assert 0 < report.embed_seconds < report.seconds

    papers = store.list_papers()
    assert len(papers) == 3
    flash = results["flashrank.pdf"]
    assert flash.doc_id == doc_id_for(file_sha256(library / "flashrank.pdf"))
    record = store.get_paper(flash.doc_id)
    assert record is not None and record.title.startswith("FlashRank") and record.year == 2023
    assert record.source == str((library / "flashrank.pdf").resolve())
    assert record.n_chunks == flash.chunks == store.count_chunks(flash.doc_id)
    assert_consistent(store)

    # The default strategy embeds a context header before the text and keeps the text itself apart.
    first = store.get_chunks(flash.doc_id)[3]
    assert first.index_text.startswith(record.title[:30]) and first.index_text.endswith(first.text)
    assert first.text and not first.text.startswith(record.title[:30])


def test_ingesting_again_writes_nothing(store: PaperStore, library: Path) -> None:
    ingest([library], store.settings, store)
    before = {p.doc_id: p.ingested_at for p in store.list_papers()}
    rows = store.count_chunks(kind=None)
    calls = store.embedder.calls  # type: ignore[attr-defined]

    def no_writes(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an unchanged file must not be written")

    store.insert_paper_chunks = no_writes  # type: ignore[method-assign]
    report = ingest([library], store.settings, store)
    assert {r.status for r in report.files if not r.path.endswith("broken.pdf")} == {"unchanged"}
    assert report.chunks == 0
    assert store.embedder.calls == calls  # type: ignore[attr-defined]
    assert {p.doc_id: p.ingested_at for p in store.list_papers()} == before
    assert store.count_chunks(kind=None) == rows


def test_identical_content_at_two_paths_is_one_paper(store: PaperStore, library: Path, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "same-paper.pdf"
    copy.parent.mkdir()
    shutil.copy(library / "flashrank.pdf", copy)
    report = ingest([library / "flashrank.pdf", copy], store.settings, store)
    assert [r.status for r in report.files] == ["ingested", "unchanged"]
    assert report.files[0].doc_id == report.files[1].doc_id
    assert len(store.list_papers()) == 1


def test_new_content_at_a_path_replaces_the_old_paper(
    store: PaperStore, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    path = tmp_path / "draft.pdf"
    shutil.copy(sample_pdfs["flashrank"], path)
    old = ingest([path], store.settings, store).files[0]
    shutil.copy(sample_pdfs["quantkv"], path)  # the author sent a new version
    new = ingest([path], store.settings, store).files[0]
    assert new.status == "replaced" and new.replaced == [old.doc_id] and new.doc_id != old.doc_id
    assert store.get_paper(old.doc_id) is None
    assert store.count_chunks(old.doc_id, kind=None) == 0
    [paper] = store.list_papers()
    assert paper.doc_id == new.doc_id and paper.title.startswith("QuantKV")
    assert_consistent(store)
    hits = store.search_hybrid("FlashRank reranker distillation", k=20)
    assert hits and {h.doc_id for h in hits} == {new.doc_id}


def test_embedding_progress_moves_every_small_group(tmp_path: Path, store: PaperStore) -> None:
    """The bar of a paper's embedding moves every 8 chunks (the local model's groups), not once per batch of 64; what
    the progress callback raises (the caller stopping) ends the ingest as it was raised."""
    paper = tmp_path / "ferns.md"
    paragraphs = [f"Fern plot {i} grew {i} millimetres in the shade over the season. " * 12 for i in range(24)]
    paper.write_text(paper_markdown("A Paper On Ferns", 2024, [("## 1 Results", paragraphs)]))
    seen: list[tuple[int, int]] = []

    def progress(path: Path, stage: str, done: int, total: int) -> None:
        if stage == "embedding":
            seen.append((done, total))

    [result] = ingest([paper], store.settings, store, progress=progress).files
    assert result.status == "ingested" and result.chunks > 16, result
    total = result.chunks
    assert total < store.write_batch  # one batch: its progress comes from the model's groups
    assert [done for done, _ in seen] == [0, *range(8, total, 8), total] and {t for _, t in seen} == {total}

    class Stop(Exception):
        pass

    def stopping(path: Path, stage: str, done: int, total: int) -> None:
        if stage == "embedding" and done:
            raise Stop

    other = tmp_path / "moss.md"
    other.write_text(paper.read_text().replace("Fern", "Moss"))
    [stopped] = ingest([other], store.settings, store, progress=stopping).files
    assert stopped.status == "failed" and "Stop" in (stopped.error or "")  # not worded as the embedder failing
    assert "embedding chunks" not in (stopped.error or "")


class Interrupting:
    """Wraps an embedder; raises `error` on the `fail_on`-th embed_documents call."""

    def __init__(self, inner: CachedEmbedder, fail_on: int, error: BaseException) -> None:
        self.inner, self.fail_on, self.error, self.n = inner, fail_on, error, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.n += 1
        if self.n == self.fail_on:
            raise self.error
        return self.inner.embed_documents(texts)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("embedding server went away")])
def test_an_interrupted_paper_is_never_half_visible(
    tmp_path: Path, sample_pdfs: dict[str, Path], error: BaseException
) -> None:
    settings = Settings(home=tmp_path / "home", embedding={"batch_size": 8})
    path = sample_pdfs["flashrank"]
    # Call 1 embeds title + abstract, call 2 the first batch: fail on the third, mid-paper.
    with PaperStore.open(settings, Interrupting(embedder(), 3, error)) as store:  # type: ignore[arg-type]
        if isinstance(error, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                ingest([path], settings, store)
        else:
            [result] = ingest([path], settings, store).files
            assert result.status == "failed" and "embedding server went away" in (result.error or "")
            assert result.error.startswith("flashrank.pdf: ")  # type: ignore[union-attr]
        assert store.search_hybrid("FlashRank", k=5) == []
        assert store.search_papers("FlashRank", k=5) == []
        assert store.count_chunks(kind=None) == 0  # what it wrote was taken back
    with PaperStore.open(settings, embedder()) as store:
        [again] = ingest([path], settings, store).files
        assert again.status == "ingested"
        assert_consistent(store)
        assert store.search_hybrid("FlashRank", k=5)


def test_a_crash_that_left_a_paper_ingesting_is_repaired(tmp_path: Path, sample_pdfs: dict[str, Path]) -> None:
    settings = Settings(home=tmp_path / "home", embedding={"batch_size": 8})
    path = sample_pdfs["hydra"]
    with PaperStore.open(settings, embedder()) as store:
        [done] = ingest([path], settings, store).files
        # What a killed process leaves behind: the paper row still "ingesting", a chunk missing.
        row = store.client.query(store.papers_name, filter=f'doc_id == "{done.doc_id}"', output_fields=["*"])[0]
        row.pop("sparse", None)  # filled by the BM25 function, never written
        store.client.upsert(store.papers_name, [{**row, "status": "ingesting"}])
        last = store.get_chunks(done.doc_id)[-1]
        store.client.delete(store.chunks_name, ids=[last.id])
        assert store.search_hybrid("hypothetical documents", SearchFilter(doc_ids=[done.doc_id]), k=5) == []
        [repaired] = ingest([path], settings, store).files
        assert repaired.status == "ingested"
        assert_consistent(store)
        assert store.search_hybrid("hypothetical documents", SearchFilter(doc_ids=[done.doc_id]), k=5)


def test_missing_paths_and_unknown_strategies_are_clear(store: PaperStore, tmp_path: Path) -> None:
    report = ingest([tmp_path / "nope.pdf"], store.settings, store)
    assert report.files[0].status == "failed" and "nope.pdf: no such file" in (report.files[0].error or "")
    text = tmp_path / "empty.md"
    text.write_text("")
    [empty] = ingest([text], store.settings, store).files
    assert empty.status == "failed" and (empty.error or "").startswith("empty.md: ")
    assert store.list_papers() == []


def test_markdown_and_text_files_go_in(store: PaperStore, sample_sources: list[Path], tmp_path: Path) -> None:
    md = sample_sources[0]
    report = ingest([md], store.settings, store)
    assert report.files[0].status == "ingested"
    assert_consistent(store)


# --- hardening: crashes, shared paths, forced re-ingests, odd files ----------------------------------


def small_paper(title: str, topic: str) -> str:
    """A short Markdown paper (two or three chunks): cheap to embed."""
    return paper_markdown(
        title,
        2024,
        [
            ("## Abstract", [f"We study {topic} and report what we found about {topic} in several experiments."]),
            ("## 1 Method", [f"Our method for {topic} is simple: measure, compare and write down the numbers."]),
        ],
    )


def test_a_crash_between_storing_a_new_version_and_removing_the_old_one_is_repaired(
    store: PaperStore, tmp_path: Path
) -> None:
    path = tmp_path / "draft.md"
    path.write_text(small_paper("Old Draft About Glaciers", "glacier melt"))
    [old] = ingest([path], store.settings, store).files
    path.write_text(small_paper("New Draft About Volcanoes", "volcano ash"))
    # What a process killed half-way through the replace leaves: the new version stored, the old one not removed.
    paper = parse_file(path)
    chunks = chunk_paper(paper, store.embedder.token_counter)
    new_id = doc_id_for(file_sha256(path))
    store.insert_paper_chunks(paper, chunks, new_id, file_sha256(path), str(path.resolve()))
    assert {p.doc_id for p in store.list_papers()} == {old.doc_id, new_id}

    [repaired] = ingest([path], store.settings, store).files
    assert repaired.status == "replaced" and repaired.replaced == [old.doc_id] and repaired.chunks == 0
    assert [p.doc_id for p in store.list_papers()] == [new_id]
    assert store.count_chunks(old.doc_id, kind=None) == 0
    assert_consistent(store)


def test_a_paper_held_by_two_paths_stays_while_one_of_them_holds_it(store: PaperStore, tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "paper.md", tmp_path / "b" / "copy.md"
    for p in (first, second):
        p.parent.mkdir()
        p.write_text(small_paper("Shared Paper On Tides", "tidal energy"))
    report = ingest([first, second], store.settings, store)
    assert [f.status for f in report.files] == ["ingested", "unchanged"]
    shared = report.files[0].doc_id
    assert store.get_paper(shared).sources == [str(first), str(second)]  # type: ignore[union-attr]

    first.write_text(small_paper("Another Paper On Wind", "wind farms"))
    [changed] = ingest([first], store.settings, store).files
    assert changed.status == "ingested" and changed.replaced == []  # the copy still holds the shared paper
    kept = store.get_paper(shared)
    assert kept is not None and kept.ready and kept.sources == [str(second)] and kept.source == str(second)
    assert {h.doc_id for h in store.search_bm25("tidal energy", k=5)} == {shared}

    second.write_text(small_paper("A Third Paper On Rain", "rainfall"))
    [last] = ingest([second], store.settings, store).files
    assert last.status == "replaced" and last.replaced == [shared]  # no path holds it any more
    assert store.get_paper(shared) is None
    assert_consistent(store)


def test_a_failing_forced_reingest_leaves_the_old_version_visible(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", embedding={"batch_size": 2})
    path = tmp_path / "paper.md"
    path.write_text(small_paper("Forced Paper On Coral", "coral bleaching"))
    with PaperStore.open(settings, embedder()) as store:
        [done] = ingest([path], settings, store).files
        before = store.get_chunks(done.doc_id)
    # Call 1 embeds title + abstract, call 2 the first batch: fail there (an unwritable cache, a dead endpoint).
    failing = Interrupting(embedder(), 2, RuntimeError("the embedding cache is read-only"))
    with PaperStore.open(settings, failing) as store:  # type: ignore[arg-type]
        [forced] = ingest([path], settings, store, force=True).files
        assert forced.status == "failed" and "read-only" in (forced.error or "")
        paper = store.get_paper(done.doc_id)
        assert paper is not None and paper.ready
        assert [c.text for c in store.get_chunks(done.doc_id)] == [c.text for c in before]
        assert store.search_hybrid("coral bleaching", k=3)[0].doc_id == done.doc_id


def test_a_pdf_over_the_page_limit_fails_alone_and_the_batch_goes_on(store: PaperStore, tmp_path: Path) -> None:
    big = tmp_path / "big.pdf"
    doc = pymupdf.open()
    for _ in range(501):
        doc.new_page()
    doc.save(big)
    doc.close()
    good = tmp_path / "good.md"
    good.write_text(small_paper("A Good Paper On Soil", "soil carbon"))
    results = by_name(ingest([big, good], store.settings, store).files)
    assert results["big.pdf"].status == "failed"
    assert results["big.pdf"].error == "big.pdf: too many pages (501 > 500)"
    assert results["good.md"].status == "ingested"


def test_readme_and_license_files_in_a_folder_are_skipped_unless_named(store: PaperStore, tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "paper.md").write_text(small_paper("A Paper On Bees", "bee colonies"))
    for name in ("README.md", "LICENSE.txt", "CHANGELOG.md", "readme.markdown"):
        (folder / name).write_text("# Project notes\n\nThis file describes the project and is not a paper at all.\n")
    report = ingest([folder], store.settings, store)
    assert [Path(f.path).name for f in report.files] == ["paper.md"]
    assert sorted(Path(p).name for p in report.skipped) == [
        "CHANGELOG.md",
        "LICENSE.txt",
        "README.md",
        "readme.markdown",
    ]
    [named] = ingest([folder / "README.md"], store.settings, store).files
    assert named.status == "ingested"


def test_a_file_name_with_control_characters_is_stored_escaped(store: PaperStore, tmp_path: Path) -> None:
    path = tmp_path / "bad\x1b[31mname\x07.md"
    path.write_text(small_paper("A Paper With A Strange Name", "file names"))
    [result] = ingest([path], store.settings, store).files
    assert result.status == "ingested", result.error
    escaped = str(tmp_path / "bad\\x1b[31mname\\x07.md")
    assert result.path == escaped
    assert store.get_paper(result.doc_id).sources == [escaped]  # type: ignore[arg-type,union-attr]
    assert unescape_path(escaped) == path
    [again] = ingest([path], store.settings, store).files  # found again by its stored name
    assert again.status == "unchanged"


def test_ctrl_c_reports_what_was_kept(store: PaperStore, tmp_path: Path) -> None:
    files = []
    for i, topic in enumerate(["owls", "moths"]):
        files.append(tmp_path / f"{i}.md")
        files[-1].write_text(small_paper(f"A Paper On {topic.title()}", topic))
    interrupting = Interrupting(store.embedder, 3, KeyboardInterrupt())  # type: ignore[arg-type]
    # Two embed calls per small paper: the third is the second paper's title + abstract.
    store.embedder = interrupting  # type: ignore[assignment]
    with pytest.raises(IngestInterrupted) as stop:
        ingest(files, store.settings, store)
    assert [f.status for f in stop.value.report.files] == ["ingested"]
    assert stop.value.current == str(files[1])
    assert isinstance(stop.value, KeyboardInterrupt)  # callers that catch Ctrl-C still do


def test_a_title_longer_than_the_store_keeps_is_cut_with_a_warning(store: PaperStore, tmp_path: Path) -> None:
    path = tmp_path / "long-title.md"
    title = "A Very Long Title " * 150  # 2,700 bytes: over the 2,048 the catalogue keeps
    path.write_text(small_paper(title.strip(), "long titles"))
    [result] = ingest([path], store.settings, store).files
    assert result.status == "ingested"
    assert result.warnings == ["long-title.md: the title is longer than the store keeps (2,048 bytes); it was cut"]
    assert len(store.get_paper(result.doc_id).title.encode()) <= 2048  # type: ignore[arg-type,union-attr]


def test_a_text_file_over_the_size_limit_fails_alone_and_the_store_is_left_as_it_was(
    store: PaperStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ingest([write(tmp_path / "kept.md", small_paper("A Paper Kept Before", "lichen"))], store.settings, store)
    papers, chunks = len(store.list_papers()), store.count_chunks(kind=None)
    monkeypatch.setenv("PAPERSCOPE_HOME", str(store.settings.home))
    monkeypatch.setenv("PAPERSCOPE_PARSING__MAX_TEXT_BYTES", "2000")
    settings = load_settings()
    assert settings.parsing.max_text_bytes == 2000
    folder = tmp_path / "folder"
    folder.mkdir()
    big = write(folder / "big.txt", small_paper("A Paper Too Long", "tides " * 400))
    write(folder / "good.md", small_paper("A Good Paper On Soil", "soil carbon"))
    results = by_name(ingest([folder], settings, store).files)
    size = big.stat().st_size
    assert size > 2000 and results["big.txt"].status == "failed"
    assert results["big.txt"].error == (
        f"big.txt: too large for a text file ({size:,} bytes > 2,000; the limit is PAPERSCOPE_PARSING__MAX_TEXT_BYTES)"
    )
    assert results["good.md"].status == "ingested"
    assert before.files[0].status == "ingested"
    assert sorted(p.title for p in store.list_papers()) == ["A Good Paper On Soil", "A Paper Kept Before"]
    assert len(store.list_papers()) == papers + 1
    assert store.count_chunks(kind=None) == chunks + results["good.md"].chunks
    assert_consistent(store)


def test_the_parsing_limits_default_to_the_parser_s_own() -> None:
    from paperscope.config import ParsingSettings
    from paperscope.parser.markdown import MAX_TEXT_BYTES
    from paperscope.parser.pdf import MAX_PAGES

    assert (ParsingSettings().max_pages, ParsingSettings().max_text_bytes) == (MAX_PAGES, MAX_TEXT_BYTES)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def deeper_than_path_max(top: Path) -> Path:
    """Folders nested until their path is longer than PATH_MAX: listing the deepest fails, for root too."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    path = top
    try:
        while len(str(path)) <= os.pathconf(top, "PC_PATH_MAX"):
            name = f"{len(path.parts):03d}" + "x" * 200
            os.mkdir(name, dir_fd=fd)  # relative to an open folder: no long path is ever passed
            deeper = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd, path = deeper, path / name
    finally:
        os.close(fd)
    return path


def test_what_a_folder_walk_cannot_take_is_listed_with_the_reason(store: PaperStore, tmp_path: Path) -> None:
    """Conditions that stop root too: a folder path beyond PATH_MAX (ENAMETOOLONG), a broken link, a link
    loop (ELOOP), a named pipe with a paper's name (reading it would block), and a link to a folder."""
    folder = tmp_path / "library"
    folder.mkdir()
    write(folder / "good.md", small_paper("A Good Paper On Reefs", "coral reefs"))
    (folder / "gone.pdf").symlink_to(tmp_path / "deleted.pdf")
    (folder / "loop.pdf").symlink_to(folder / "loop.pdf")
    os.mkfifo(folder / "pipe.pdf")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(elsewhere / "other.md", small_paper("A Paper Elsewhere", "dunes"))
    (folder / "linked").symlink_to(elsewhere)
    deepest = deeper_than_path_max(folder / "deep")
    report = ingest([folder], store.settings, store)
    assert [(Path(f.path).name, f.status) for f in report.files] == [("good.md", "ingested")]
    unread = {u.path: u.reason for u in report.unread}
    assert unread.pop(str(folder / "gone.pdf")) == "a link to nothing (what it points to does not exist)"
    loop = "a link that leads back to itself (Too many levels of symbolic links)"
    assert unread.pop(str(folder / "loop.pdf")) == loop
    assert unread.pop(str(folder / "pipe.pdf")) == "not a regular file (a named pipe)"
    assert unread.pop(str(folder / "linked")) == "a link to a folder: not followed (name it to ingest it)"
    [(too_long, reason)] = unread.items()  # nothing else
    assert reason == "cannot read this folder: File name too long"
    assert str(deepest).startswith(too_long) and len(too_long) > os.pathconf(tmp_path, "PC_PATH_MAX")
    [pipe] = ingest([folder / "pipe.pdf"], store.settings, store).files  # named explicitly: failed, said why
    assert (pipe.status, pipe.error) == ("failed", f"{folder / 'pipe.pdf'}: not a regular file (a named pipe)")


# discover() and ingest() of a folder holding a folder and a file that may not be read, in a process that
# obeys file permissions (as root, as the tests run in CI: without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH).
UNREADABLE = """
import json, sys
from paperscope.config import Settings
from paperscope.rag.ingest import ingest
report = ingest([sys.argv[1]], Settings(home=sys.argv[2]))
print(json.dumps({"unread": [u.model_dump() for u in report.unread], "files": [f.model_dump() for f in report.files]}))
"""


def test_an_unreadable_folder_is_listed_and_an_unreadable_file_fails_with_the_reason(tmp_path: Path) -> None:
    """chmod 000 on a folder and on a file, walked by a process that obeys file permissions."""
    if why := permissions_not_enforced(tmp_path):
        pytest.skip(why)
    folder = tmp_path / "library"
    locked = folder / "locked"
    locked.mkdir(parents=True)
    write(locked / "inside.md", small_paper("A Paper Locked Away", "locks"))
    secret = write(folder / "secret.md", small_paper("A Secret Paper", "secrets"))
    locked.chmod(0)
    secret.chmod(0)
    try:
        command = [sys.executable, "-c", UNREADABLE, str(folder), str(tmp_path / "home")]
        result = subprocess.run(obeying_permissions(command), capture_output=True, text=True, timeout=300)
    finally:
        locked.chmod(0o755)
        secret.chmod(0o644)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["unread"] == [{"path": str(locked), "reason": "cannot read this folder: Permission denied"}]
    [failed] = report["files"]
    assert (failed["path"], failed["status"]) == (str(secret), "failed")
    assert failed["error"] == "secret.md: cannot read: Permission denied"
