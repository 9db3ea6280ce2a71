"""Shared fixtures: the rendered sample corpus, the real papers in ../shared/papers, a Milvus server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder, make_embedder
from paperscope.rag.ingest import doc_id_for, file_sha256, ingest
from paperscope.rag.store import PaperStore
from tests.milvus_server import milvus_server
from tests.served import KEY, PRELOADED, UPLOAD_LIMIT_MB, Served, make_home, serve

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SHARED_PAPERS = ROOT.parent / "shared" / "papers"


@pytest.fixture(scope="session")
def sample_sources() -> list[Path]:
    """Markdown sources of the fictional sample papers."""
    sources = sorted((EXAMPLES / "papers").glob("*.md"))
    assert len(sources) >= 10, "examples/papers should hold the sample corpus"
    return sources


@pytest.fixture(scope="session")
def sample_pdfs(tmp_path_factory: pytest.TempPathFactory, sample_sources: list[Path]) -> dict[str, Path]:
    """The sample corpus rendered afresh by examples/render_papers.py: {slug: pdf}."""
    out = tmp_path_factory.mktemp("pdfs")
    subprocess.run(
        [sys.executable, str(EXAMPLES / "render_papers.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return {p.stem: out / f"{p.stem}.pdf" for p in sample_sources}


@pytest.fixture(scope="session")
def shared_papers() -> Path:
    """../shared/papers (real published PDFs); the tests that need it skip when it is absent."""
    if not SHARED_PAPERS.is_dir():
        pytest.skip(f"real papers folder {SHARED_PAPERS} is absent (it sits beside the repository)")
    return SHARED_PAPERS


@pytest.fixture(scope="session")
def local_embedder() -> Iterator[CachedEmbedder]:
    """The default local embedder, loaded once; its in-memory cache is shared by the session."""
    embedder = make_embedder("local")
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def sample_kb(
    tmp_path_factory: pytest.TempPathFactory, sample_pdfs: dict[str, Path], local_embedder: CachedEmbedder
) -> Iterator[PaperStore]:
    """A Milvus Lite knowledge base holding the 12 sample PDFs, ingested once per session."""
    settings = Settings(home=tmp_path_factory.mktemp("sample-kb"))
    with PaperStore.open(settings, local_embedder) as store:
        report = ingest(list(sample_pdfs.values()), settings, store)
        assert not report.failed, report.failed
        yield store


@pytest.fixture(scope="session")
def sample_doc_ids(sample_kb: PaperStore, sample_pdfs: dict[str, Path]) -> dict[str, str]:
    """{slug: doc_id} of the sample papers in `sample_kb`."""
    return {slug: doc_id_for(file_sha256(path)) for slug, path in sample_pdfs.items()}


@pytest.fixture(scope="session")
def milvus_server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Milvus server's URI for the session: MILVUS_URI if it names one, else `milvus-lite server` started
    on 127.0.0.1 (stopped at the end); TEST_MILVUS_DOCKER=1 starts Milvus standalone in Docker instead."""
    with milvus_server(tmp_path_factory.mktemp("milvus-server") / "data") as uri:
        yield uri


@pytest.fixture(scope="session")
def server(
    tmp_path_factory: pytest.TempPathFactory, sample_pdfs: dict[str, Path], local_embedder: CachedEmbedder
) -> Iterator[Served]:
    """A real `paperscope serve` (no language model, API key `KEY`, uploads up to 0.5 MB) over a home holding the
    PRELOADED sample papers; the tests upload others."""
    home = make_home(tmp_path_factory.mktemp("served-home"), [sample_pdfs[n] for n in PRELOADED], local_embedder)
    log = tmp_path_factory.mktemp("served-log") / "stderr.txt"
    with serve(home, log, {"PAPERSCOPE_SERVICE__MAX_UPLOAD_MB": str(UPLOAD_LIMIT_MB)}, key=KEY) as served:
        yield served


@pytest.fixture(scope="session")
def sample_pdf_ids(sample_pdfs: dict[str, Path]) -> dict[str, str]:
    """{slug: doc_id} of the sample PDFs (from their bytes; nothing ingested)."""
    return {slug: doc_id_for(file_sha256(path)) for slug, path in sample_pdfs.items()}
