"""Ingest jobs (src/service/jobs.py): a finished job's progress says how much work it did."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import FileResult, doc_id_for, file_sha256
from paperscope.rag.store import PaperStore
from paperscope.service.jobs import Job, JobProgress, JobQueue, finished_progress
from tests.markdown_papers import markdown


@pytest.fixture
def queue(tmp_path: Path, local_embedder: CachedEmbedder) -> Iterator[tuple[JobQueue, Settings, PaperStore]]:
    settings = Settings(home=tmp_path / "home")
    with PaperStore.open(settings, local_embedder) as store:
        jobs = JobQueue()
        jobs.start()
        try:
            yield jobs, settings, store
        finally:
            jobs.stop()


def run(queue: tuple[JobQueue, Settings, PaperStore], path: Path) -> Job:
    """Queue the ingest of `path` and wait for it to end; the job as GET /v1/jobs/{id} shows it then."""
    jobs, settings, store = queue
    job = Job(job_id=JobQueue.new_id(), kb="papers", file=path.name, doc_id=doc_id_for(file_sha256(path)))
    jobs.submit(job, path, settings, store)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = jobs.get(job.job_id)
        assert found is not None
        if found.state in ("done", "failed"):
            return found
        time.sleep(0.05)
    raise AssertionError(f"job {job.job_id} did not end")


def test_a_finished_job_reports_the_work_it_did(tmp_path: Path, queue: tuple[JobQueue, Settings, PaperStore]) -> None:
    paper = tmp_path / "ferns.md"
    sections = [
        ("## Abstract", ["We study ferns and report what we found about ferns in three experiments."]),
        ("## 1 Method", ["We measured fronds weekly. " * 40, "We compared shaded and open plots. " * 40]),
        ("## 2 Results", ["Ferns grew two millimetres a day in the shade and one in open plots. " * 30]),
    ]
    paper.write_text(markdown("A Paper On Ferns", 2024, sections))

    done = run(queue, paper)
    assert done.state == "done" and done.status == "ingested" and done.result is not None
    assert done.result.chunks > 1
    assert done.progress == JobProgress(stage="done", done=done.result.chunks, total=done.result.chunks)

    again = run(queue, paper)  # the same bytes: nothing to embed, the file itself is the work done
    assert again.status == "unchanged"
    assert again.progress == JobProgress(stage="done", done=1, total=1)

    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"not a pdf at all")
    failed = run(queue, broken)
    assert failed.state == "failed" and failed.error and "broken.pdf" in failed.error
    assert failed.progress.stage == "done" and failed.progress.done <= failed.progress.total


def test_finished_progress() -> None:
    embedding = JobProgress(stage="embedding", done=40, total=64)
    stored = FileResult(path="a.pdf", status="ingested", chunks=64)
    assert finished_progress(stored, embedding) == JobProgress(stage="done", done=64, total=64)
    unchanged = FileResult(path="a.pdf", status="unchanged")
    assert finished_progress(unchanged, JobProgress(stage="reading")) == JobProgress(stage="done", done=1, total=1)
    failed = FileResult(path="a.pdf", status="failed", error="a.pdf: embedding failed")
    assert finished_progress(failed, embedding) == JobProgress(stage="done", done=40, total=64)  # where it stopped
    assert finished_progress(None, JobProgress()) == JobProgress(stage="done")


def test_a_job_enriches_as_its_upload_asked(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    """`enrich` on an upload reaches the ingest: the server's chat model writes the questions, the job reports the
    enriching stage as it goes and ends done, and the paper is indexed with them."""
    from tests.openai_server import ScriptedOpenAIServer
    from tests.rag.test_enrich_ingest import MARK, answer, paper_source

    source = paper_source(tmp_path, "p", "lamprey")
    with ScriptedOpenAIServer([answer] * 200) as model:
        llm = {"model": "scripted-model", "base_url": model.base_url, "api_key": "test", "retries": 0, "timeout": 10}
        settings = Settings(home=tmp_path / "home", llm=llm, enrichment={"strategies": ["questions"]})
        with PaperStore.open(settings, local_embedder) as store:
            jobs = JobQueue()
            stages: list[str] = []
            real = jobs._update

            def update(job_id: str, **fields: object) -> None:
                progress = fields.get("progress")
                if isinstance(progress, JobProgress):
                    stages.append(progress.stage)
                real(job_id, **fields)

            jobs._update = update  # type: ignore[method-assign]
            jobs.start()
            try:
                done = run((jobs, settings, store), source)
            finally:
                jobs.stop()
            assert done.state == "done" and done.status == "ingested", done.error
            assert "enriching" in stages and model.requests
            [paper] = store.list_papers()
            assert paper.enrichments == ["questions"]
            assert any(MARK in row.index_text for row in store.get_chunks(paper.doc_id, kind=None))
