"""Shared fixtures: the rendered sample corpus, the real papers in ../shared/papers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
