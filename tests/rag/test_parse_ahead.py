"""Reading the next PDF ahead: the unit on its own, and ingest with real PDFs and the real parsing worker."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

import paperscope.parser.bounded as bounded
from paperscope.config import Settings
from paperscope.errors import ParseError
from paperscope.parser.models import Paper
from paperscope.rag.embeddings import make_embedder
from paperscope.rag.ingest import ingest
from paperscope.rag.parse_ahead import ParseAhead
from paperscope.rag.store import PaperStore
from tests.rag.test_ingest import PAPERS, assert_consistent


def _paper(path: Path) -> Paper:
    return Paper(title=path.stem)


class _Parser:
    """Records what it parses and in which thread; fails on a file named bad.pdf."""

    def __init__(self) -> None:
        self.parsed: list[tuple[str, str]] = []

    def __call__(self, path: Path, cancel: threading.Event) -> Paper:
        self.parsed.append((path.name, threading.current_thread().name))
        if path.name == "bad.pdf":
            raise ParseError(path, "not a PDF")
        return _paper(path)


def test_the_queued_file_is_parsed_in_another_thread_and_taken() -> None:
    parse = _Parser()
    ahead = ParseAhead(parse, lambda path: True)
    try:
        ahead.queue(Path("b.pdf"))
        ahead.begin()
        assert ahead.take(Path("a.pdf")) is None  # not the file read ahead: dropped
        ahead.queue(Path("c.pdf"))
        ahead.begin()
        paper = ahead.take(Path("c.pdf"))
        assert paper is not None and paper.title == "c"
        assert ahead.take(Path("c.pdf")) is None  # taken once
        assert all(thread.startswith("paperscope-parse-ahead") for _, thread in parse.parsed)
    finally:
        ahead.close()


def test_a_file_ingest_will_not_parse_is_not_read_ahead_and_errors_reach_the_taker() -> None:
    parse = _Parser()
    ahead = ParseAhead(parse, lambda path: path.name != "stored.pdf")
    try:
        ahead.queue(Path("stored.pdf"))
        ahead.begin()
        assert ahead.take(Path("stored.pdf")) is None and parse.parsed == []
        ahead.queue(Path("bad.pdf"))
        ahead.begin()
        with pytest.raises(ParseError, match="not a PDF"):
            ahead.take(Path("bad.pdf"))
        ahead.begin()  # nothing queued: nothing started
        assert ahead.take(Path("x.pdf")) is None and [name for name, _ in parse.parsed] == ["bad.pdf"]
    finally:
        ahead.close()


def test_ingest_parses_the_next_new_pdf_ahead_and_never_an_unchanged_one(
    tmp_path: Path, sample_pdfs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    for name in PAPERS:
        shutil.copy(sample_pdfs[name], folder / f"{name}.pdf")
    parsed: list[tuple[str, str]] = []
    parse_bounded = bounded.parse_bounded

    def recording(path: str | Path, *args: object, **kwargs: object) -> Paper:
        parsed.append((Path(path).name, threading.current_thread().name))
        return parse_bounded(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bounded, "parse_bounded", recording)
    settings = Settings(home=tmp_path / "home")
    # An embedder of its own: test_ingest's shared one would have these papers' vectors cached after this test.
    with PaperStore.open(settings, make_embedder("local")) as store:
        report = ingest([folder], settings, store)
        assert report.count("ingested") == 3
        assert sorted(name for name, _ in parsed) == sorted(f"{n}.pdf" for n in PAPERS)  # each parsed once
        ahead = [name for name, thread in parsed if thread.startswith("paperscope-parse-ahead")]
        assert len(ahead) == 2  # every file after the first was read while the one before it was embedded
        assert_consistent(store)
        parsed.clear()
        again = ingest([folder], settings, store)
        assert {f.status for f in again.files} == {"unchanged"} and parsed == []
