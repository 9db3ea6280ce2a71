"""The hostile-input server: `paperscope serve` as a user runs it (loopback, no key), over a library holding a page
that takes minutes to draw, with a chat model that never answers, and small limits the tests can reach."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from paperscope.rag.embeddings import CachedEmbedder
from tests.hostile_pdfs import lines_bomb
from tests.openai_server import Hang, ScriptedOpenAIServer
from tests.served import Served, make_home, serve

#: The hostile server's limits, as the tests check them.
RENDER_SECONDS = 6
QUESTION_WORKERS = 2
PARSE_MEMORY_MB = 500
BODY_MB = 1


@pytest.fixture(scope="session")
def silent_model() -> Iterator[ScriptedOpenAIServer]:
    """A chat model that reads every request and never answers (until the client goes away)."""
    with ScriptedOpenAIServer([Hang()] * 100) as model:
        yield model


@pytest.fixture(scope="session")
def lines_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A paper whose page holds 100,000 line segments: it ingests in seconds and draws in tens of seconds."""
    return lines_bomb(tmp_path_factory.mktemp("hostile-pdfs") / "lines.pdf", 100_000)


@pytest.fixture(scope="session")
def hostile(
    tmp_path_factory: pytest.TempPathFactory,
    sample_pdfs: dict[str, Path],
    local_embedder: CachedEmbedder,
    silent_model: ScriptedOpenAIServer,
    lines_pdf: Path,
) -> Iterator[Served]:
    home = make_home(tmp_path_factory.mktemp("hostile-home"), [sample_pdfs["flashrank"], lines_pdf], local_embedder)
    env = {
        "OPENAI_BASE_URL": silent_model.base_url,
        "OPENAI_API_KEY": "test",
        "PAPERSCOPE_LLM_MODEL": "scripted-model",
        "PAPERSCOPE_LLM__TIMEOUT": "120",
        "PAPERSCOPE_LLM__QUESTION_BUDGET": "240",
        "PAPERSCOPE_SERVICE__WORKERS": str(QUESTION_WORKERS),
        "PAPERSCOPE_SERVICE__READ_WORKERS": "2",
        "PAPERSCOPE_SERVICE__RENDER_SECONDS": str(RENDER_SECONDS),
        "PAPERSCOPE_SERVICE__MAX_BODY_MB": str(BODY_MB),
        # Past the page count, so that only the parsing worker's memory cap stands between a text bomb and the
        # server.
        "PAPERSCOPE_PARSING__MAX_PAGE_GLYPHS": "100000000",
        "PAPERSCOPE_PARSING__MAX_MEMORY_MB": str(PARSE_MEMORY_MB),
    }
    with serve(home, tmp_path_factory.mktemp("hostile-log") / "stderr.txt", env) as served:
        yield served


def workers_of(server: Served, pool: str) -> list[psutil.Process]:
    """The worker processes of one pool of the server ("pages", "parser"), alive now."""
    found = []
    for child in psutil.Process(server.process.pid).children(recursive=True):
        try:
            if child.cmdline()[-1:] == [f"paperscope-{pool}"] and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.Error:
            continue  # gone meanwhile
    return found
