"""Parsing under limits: a hostile PDF fails alone, naming its page and the limit, and the asking process neither
grows nor waits for ever (the worker process does the reading; see parser/bounded.py and parser/page_cost.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.errors import ParseError
from paperscope.parser import Paper
from paperscope.parser.bounded import ParseLimits, parse_bounded
from paperscope.parser.page_cost import page_cost
from paperscope.parser.pdf import parse_pdf
from tests.hostile_pdfs import LINE, lines_bomb, plain, text_bomb
from tests.memory import peak_mb, reset_peak, rss_mb

PAPERSCOPE = Path(sys.executable).with_name("paperscope")


def all_text(paper: Paper) -> str:
    return " ".join([paper.title, paper.abstract, *(p.text for p in paper.paragraphs)])


@pytest.fixture(scope="module")
def text_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 MB of text-show operators on one page: ~3.7 million glyphs, 2.6 GB and 20 s for MuPDF to extract."""
    return text_bomb(tmp_path_factory.mktemp("bombs") / "text-bomb.pdf", 10)


@pytest.fixture(scope="module")
def lines_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lines_bomb(tmp_path_factory.mktemp("bombs") / "lines-bomb.pdf", 250_000)


def test_the_cost_of_a_page_is_counted_without_inflating_it_whole(text_page: Path, lines_page: Path) -> None:
    import pymupdf

    with pymupdf.open(text_page) as doc:
        cost = page_cost(doc, doc[0])
        assert cost.glyphs > 3_000_000 and cost.inflated > 9_000_000 and cost.complete
        assert page_cost(doc, doc[0], stop_glyphs=1000).glyphs < 2_000_000  # stops early once over
    with pymupdf.open(lines_page) as doc:
        cost = page_cost(doc, doc[0])
        assert cost.paths >= 500_000 and cost.glyphs < 1000


def test_real_pages_are_far_below_the_limits(shared_papers: Path) -> None:
    import pymupdf

    from paperscope.parser.page_cost import MAX_PAGE_GLYPHS, MAX_PAGE_PATHS

    for pdf in sorted(shared_papers.glob("*.pdf")):
        with pymupdf.open(pdf) as doc:
            for page in doc:
                cost = page_cost(doc, page)
                assert cost.glyphs < MAX_PAGE_GLYPHS / 10, (pdf.name, page.number)
                assert cost.paths < MAX_PAGE_PATHS / 2, (pdf.name, page.number)


def test_a_page_of_millions_of_glyphs_is_refused_before_it_is_read(text_page: Path) -> None:
    reset_peak()
    before = rss_mb()
    with pytest.raises(ParseError) as caught:
        parse_pdf(text_page)  # in this process: the count alone must keep it small
    assert str(caught.value) == ("text-bomb.pdf: page 1: shows over 400,000 glyphs (parsing.max_page_glyphs); not read")
    assert peak_mb() - before < 150


def test_a_page_of_a_million_paths_is_read_for_its_text(lines_page: Path) -> None:
    paper = parse_bounded(lines_page, ParseLimits())
    assert LINE in all_text(paper)


def test_memory_is_capped_in_the_worker_not_here(text_page: Path, tmp_path: Path) -> None:
    reset_peak()
    before = rss_mb()
    limits = ParseLimits(max_page_glyphs=10**9, memory_mb=450)  # past the count: the worker's cap must hold
    with pytest.raises(ParseError) as caught:
        parse_bounded(text_page, limits)
    message = (
        r"text-bomb\.pdf: page 1( \(\w+\))?: needs more than 450 MB of memory \(parsing\.max_memory_mb\); not read"
    )
    assert re.fullmatch(message, str(caught.value)), caught.value
    assert peak_mb() - before < 150, "the asking process must not hold the page"
    # The worker that failed was replaced: the next file parses.
    paper = parse_bounded(plain(tmp_path / "plain.pdf"), limits)
    assert LINE in all_text(paper)


def test_a_slow_page_fails_its_file_naming_the_page(text_page: Path) -> None:
    limits = ParseLimits(max_page_glyphs=10**9, page_seconds=1.0)
    with pytest.raises(ParseError) as caught:
        parse_bounded(text_page, limits)
    assert str(caught.value) == "text-bomb.pdf: page 1: took longer than 1 s (parsing.page_seconds); not read"


def test_the_worker_is_kept_between_files(lines_page: Path, tmp_path: Path) -> None:
    from paperscope.parser import bounded

    parse_bounded(lines_page, ParseLimits())
    pids = bounded._workers(2048).pids()
    with pytest.raises(ParseError):  # an error of the file itself does not cost the worker
        parse_bounded(text_bomb(tmp_path / "again.pdf", 2), ParseLimits(max_page_glyphs=1000))
    parse_bounded(lines_page, ParseLimits())
    assert bounded._workers(2048).pids() == pids and len(pids) == 1


def test_the_cli_says_one_line_and_ingest_goes_on(
    text_page: Path, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    env = {"PAPERSCOPE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    parsed = subprocess.run([str(PAPERSCOPE), "parse", str(text_page)], capture_output=True, text=True, env=env)
    assert parsed.returncode == 1
    assert parsed.stderr.strip() == (
        "error: text-bomb.pdf: page 1: shows over 400,000 glyphs (parsing.max_page_glyphs); not read"
    )
    good = sample_pdfs["flashrank"]
    ingested = subprocess.run(
        [str(PAPERSCOPE), "ingest", str(text_page), str(good), "--json"], capture_output=True, text=True, env=env
    )
    report = json.loads(ingested.stdout)
    status = {Path(f["path"]).name: f["status"] for f in report["files"]}
    assert status == {"text-bomb.pdf": "failed", good.name: "ingested"}
    assert ingested.returncode != 0


def test_settings_carry_the_limits() -> None:
    from paperscope.rag.ingest import parse_limits

    limits = parse_limits(Settings(parsing={"max_page_glyphs": 5000, "max_memory_mb": 512, "page_seconds": 3}))
    assert (limits.max_page_glyphs, limits.memory_mb, limits.page_seconds, limits.isolate) == (5000, 512, 3.0, True)


def test_the_worker_reads_a_paper_exactly_as_this_process_does() -> None:
    """MuPDF's settings are the parser's own, whatever else a process imported (pymupdf4llm changes them when it is
    imported, as PyMuPDF 2 does in this process and the worker does not): on this paper a heading and the
    paragraphs' line boxes differ when they do."""
    from tests.parser.test_devset import DEVSET

    pdf = DEVSET / "pdfs" / "arxiv1906.08632_sgd_teacher_student.pdf"
    if not pdf.is_file():
        pytest.skip(f"the development set {DEVSET} is absent (it sits beside the repository)")
    here = parse_bounded(pdf, ParseLimits(isolate=False))
    there = parse_bounded(pdf, ParseLimits())
    assert there.model_dump() == here.model_dump()
