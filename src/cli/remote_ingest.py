"""`paperscope ingest --server URL`: upload the files to the server, follow their jobs, report as a local ingest."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from ..rag.ingest import FileResult, IngestReport, discover
from ..rag.paths import escape_path
from ..terminal import markup
from .common import err_console, progress_bars
from .remote import Remote, RemoteError


def ingest_remote(
    remote: Remote,
    paths: Sequence[Path],
    kb: str | None,
    strategy: str | None,
    enrich: str | None = None,
    *,
    quiet: bool,
) -> IngestReport:
    """Upload every file the paths hold (folders searched as locally), wait for the server's jobs, and report
    each file as `paperscope ingest` does. A file the server refuses (not a PDF, too large) fails alone."""
    started = time.perf_counter()
    files, missing, skipped, unread = discover(paths)
    results: dict[Path, FileResult] = {}
    jobs: dict[str, Path] = {}
    bars = progress_bars(quiet)
    try:
        with bars:
            overall = bars.add_task("files", total=len(files))
            current = bars.add_task("", total=None, visible=False)
            for path in files:
                bars.update(current, description=f"  {markup(path.name)}: uploading", visible=True)
                try:
                    jobs[remote.upload(path, kb, strategy, enrich)["job_id"]] = path
                except RemoteError as exc:
                    if exc.status is None:
                        raise  # the server is gone: nothing more can be done
                    results[path] = _refused(path, exc.detail)
                    bars.advance(overall)
                except OSError as exc:  # unreadable here: it fails alone, as in a local ingest
                    results[path] = _refused(path, f"cannot read: {exc.strerror or exc}")
                    bars.advance(overall)

            def on_update(job: dict[str, Any]) -> None:
                progress = job.get("progress") or {}
                label = f"  {markup(job.get('file', ''))}: {progress.get('stage', job['state'])}"
                bars.update(
                    current, description=label, completed=progress.get("done", 0), total=progress.get("total") or None
                )
                if job["state"] in ("done", "failed"):
                    bars.advance(overall)

            final = remote.wait(list(jobs), on_update)
    except KeyboardInterrupt:
        err_console.print(
            f"[red]interrupted:[/red] the server goes on with the {len(jobs)} file(s) uploaded; "
            f"`paperscope papers --server {markup(remote.url)}` shows what is stored",
            soft_wrap=True,
        )
        raise typer.Exit(code=130) from None
    for job_id, path in jobs.items():
        results[path] = _result(path, final[job_id])
    return IngestReport(
        files=[*missing, *(results[p] for p in files)],
        skipped=[escape_path(p) for p in skipped],
        unread=unread,
        seconds=time.perf_counter() - started,
    )


def _refused(path: Path, detail: str) -> FileResult:
    name = escape_path(path.name)
    return FileResult(path=escape_path(path), status="failed", error=detail if name in detail else f"{name}: {detail}")


def _result(path: Path, job: dict[str, Any]) -> FileResult:
    """The file's row from its finished job (named by the local path, not the server's copy)."""
    if job.get("result"):
        return FileResult.model_validate({**job["result"], "path": escape_path(path)})
    return _refused(path, str(job.get("error") or "the server could not ingest it"))
