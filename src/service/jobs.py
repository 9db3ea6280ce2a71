"""Ingest jobs: queued by uploads, run one at a time by the one writer thread.

Each job ingests one uploaded file with `rag.ingest.ingest`, so it keeps the CLI's guarantees: the same bytes are
one paper (an upload of them again is `unchanged`), a paper is searchable only once all its chunks are stored,
and a file that fails takes back what it wrote and fails its own job alone. Every write of the server (ingest,
delete) holds `write_lock`, so there is one writer at a time; questions read meanwhile and see a paper once it is
ready. Jobs live in memory: a restarted server forgets them (the papers stay).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ..config import Settings
from ..errors import PaperscopeError
from ..rag.ingest import FileResult, Stage, ingest
from ..rag.store import PaperStore
from .errors import fault

log = logging.getLogger("paperscope.service")

JobState = Literal["queued", "running", "done", "failed"]
KEEP_JOBS = 1000  # finished jobs remembered, newest kept


class JobProgress(BaseModel):
    """Where a job is: its ingest stage, and chunks embedded of the total while embedding.

    A finished job (stage "done") says how much work it did: a done job `done == total` = the chunks it stored, or 1
    (its file) when it had none to store (the paper was there already: `unchanged`); a failed job where it stopped.
    """

    stage: Literal["queued", "reading", "parsing", "chunking", "enriching", "embedding", "done"] = "queued"
    done: int = 0
    total: int = 0


def finished_progress(result: FileResult | None, reached: JobProgress) -> JobProgress:
    """The progress a job reports once it ended: `reached` is the last progress it reported while it ran."""
    if result is None or result.status == "failed":
        return JobProgress(stage="done", done=reached.done, total=reached.total)
    # A client's bar ends full (not at 0 of 0): the chunks stored, else the file itself as the one thing done.
    work = result.chunks or reached.total or 1
    return JobProgress(stage="done", done=work, total=work)


class Job(BaseModel):
    """One upload's ingest, as GET /v1/jobs/{job_id} shows it."""

    job_id: str
    kb: str
    file: str = Field(description="The uploaded file's name.")
    doc_id: str = Field(description="The paper's doc_id (from the file's bytes: known before the job runs).")
    state: JobState = "queued"
    progress: JobProgress = Field(default_factory=JobProgress)
    status: str | None = Field(
        None, description="How the ingest ended: ingested, unchanged, replaced, repaired or failed."
    )
    error: str | None = Field(None, description="Why the job failed, naming the file.")
    result: FileResult | None = Field(None, description="The file's row of `paperscope ingest --json`.")
    created: float = Field(default_factory=time.time, description="Unix time the job was queued.")
    started: float | None = None
    finished: float | None = None


@dataclass
class _Task:
    job_id: str
    path: Path
    settings: Settings
    store: PaperStore
    on_failed: Callable[[], None] | None = None  # e.g. remove the uploaded file nothing else holds


class JobQueue:
    """Ingest jobs, run in order by one writer thread (see the module docstring)."""

    def __init__(self) -> None:
        self.write_lock = threading.Lock()  # held by every write of the server: one writer at a time
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Task | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the writer thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="paperscope-writer", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Let the running job finish (up to `timeout` seconds), then stop; queued jobs are not run."""
        if self._thread is None:
            return
        while True:  # queued jobs are dropped: their files stay in the uploads folder, nothing was written
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                self._finish(task, error="the server stopped before this job ran; upload the file again")
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("the ingest job still running after %.0f s was left unfinished (nothing half-visible)", timeout)
        self._thread = None

    def submit(
        self,
        job: Job,
        path: Path,
        settings: Settings,
        store: PaperStore,
        on_failed: Callable[[], None] | None = None,
    ) -> Job:
        """Queue `job`: ingest the file at `path` into `store` with `settings` (its chunking); `on_failed` runs
        after a failed job (and for a job the server stopped before running)."""
        with self._lock:
            self._jobs[job.job_id] = job
            while len(self._jobs) > KEEP_JOBS:
                oldest = next(iter(self._jobs))
                if self._jobs[oldest].state in ("queued", "running"):
                    break
                self._jobs.popitem(last=False)
        self._queue.put(_Task(job.job_id, path, settings, store, on_failed))
        return job.model_copy(deep=True)

    def get(self, job_id: str) -> Job | None:
        """A copy of the job as it is now, or None."""
        with self._lock:
            job = self._jobs.get(job_id)
            return job.model_copy(deep=True) if job is not None else None

    def recent(self, limit: int = 50) -> list[Job]:
        """The newest jobs first."""
        with self._lock:
            return [j.model_copy(deep=True) for j in list(reversed(self._jobs.values()))[:limit]]

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    # --- the writer thread -----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            with self.write_lock:
                self._run(task)

    def _update(self, job_id: str, **fields: object) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None:
                for name, value in fields.items():
                    setattr(job, name, value)

    def _finish(
        self,
        task: _Task,
        *,
        result: FileResult | None = None,
        error: str | None = None,
        reached: JobProgress | None = None,
    ) -> None:
        failed = error is not None or result is None or result.status == "failed"
        self._update(
            task.job_id,
            state="failed" if failed else "done",
            result=result,
            status=result.status if result is not None else "failed",
            error=error or (result.error if result is not None else None),
            progress=finished_progress(None if failed else result, reached or JobProgress()),
            finished=time.time(),
        )
        if failed and task.on_failed is not None:
            try:
                task.on_failed()
            except Exception as exc:  # a leftover file is no reason to lose the writer thread
                log.warning("cleaning up after job %s failed: %s", task.job_id, exc)

    def _run(self, task: _Task) -> None:
        reached = JobProgress(stage="reading")
        self._update(task.job_id, state="running", started=time.time(), progress=reached)

        def progress(path: Path, stage: Stage, done: int, total: int) -> None:
            nonlocal reached
            if stage != "done":
                reached = JobProgress(stage=stage, done=done, total=total)
                self._update(task.job_id, progress=reached)

        try:
            from ..rag.enrich import enricher_for  # on first use: the enrichers and the model client load then

            enricher = enricher_for(task.settings)
            report = ingest([task.path], task.settings, task.store, progress=progress, repair=False, enricher=enricher)
        except PaperscopeError as exc:
            self._finish(task, error=f"{task.path.name}: {exc}", reached=reached)
            return
        except Exception as exc:  # a bug must fail this job alone, not the writer thread
            _, message = fault(exc, f"ingest job {task.job_id}")
            self._finish(task, error=f"{task.path.name}: {message}", reached=reached)
            return
        result = next(iter(report.files), None)
        if result is None:
            self._finish(task, error=f"{task.path.name}: the uploaded file is gone from the server", reached=reached)
            return
        self._finish(task, result=result, reached=reached)
