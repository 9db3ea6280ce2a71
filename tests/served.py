"""A real `paperscope serve` process on a free 127.0.0.1 port, over a temporary home holding sample papers.

`make_home` ingests sample PDFs into a new data directory (in this process, then closed: the store's lock is
free for a server). `serve(...)` starts the `paperscope` executable's `serve --port 0` on it, waits for its
serve.json and /healthz, and stops it with SIGINT (checking that it stopped cleanly and removed serve.json);
`wait_job`, `upload` and `sse_events` are what tests of it share. tests/conftest.py holds the session's server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from paperscope.rag.store import PaperStore

PAPERSCOPE = Path(sys.executable).with_name("paperscope")
KEY = "test-key-0123456789"
UPLOAD_LIMIT_MB = 0.5  # the session server's service.max_upload_mb
START_SECONDS = 240  # loading torch and the embedder on a busy 2-core machine
#: Papers in the home before a server starts; others are uploaded by the tests.
PRELOADED = ("flashrank", "marten")
#: Variables of the outer environment that would change what the server does.
OUTER = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PAPERSCOPE_LLM_MODEL", "PAPERSCOPE_API_KEY", "PAPERSCOPE_SERVER")


@dataclass
class Served:
    """A running server: its URL, home, process and key (None: none asked)."""

    url: str
    home: Path
    process: subprocess.Popen[bytes]
    key: str | None
    log: Path

    def client(self, key: str | None = "", timeout: float = 120.0) -> httpx.Client:
        """An httpx client of the server sending `key` (default: the server's; None: no key)."""
        key = self.key if key == "" else key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in OUTER and not k.startswith("PAPERSCOPE_") and k != "MILVUS_URI"
    }
    return {**env, "PAPERSCOPE_HOME": str(home), **(extra or {})}


@contextmanager
def serve(
    home: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
    key: str | None = None,
    prefix: Sequence[str] = (),
) -> Iterator[Served]:
    """Run `paperscope serve --port 0` over `home` until the block ends; `prefix` runs it through another command
    (one that execs it, so the process is the server's)."""
    extra = {**(env or {}), **({"PAPERSCOPE_API_KEY": key} if key else {})}
    record = home / "serve.json"
    record.unlink(missing_ok=True)
    with log.open("wb") as err:
        process = subprocess.Popen(
            [*prefix, str(PAPERSCOPE), "serve", "--port", "0"],
            env=clean_env(home, extra),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        url = _wait_for_record(record, process, log)
        served = Served(url, home, process, key, log)
        with served.client() as client:
            assert client.get("/healthz").status_code == 200
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
                pytest.fail(f"paperscope serve did not stop on SIGINT:\n{log.read_text(errors='replace')}")
    assert process.returncode == 0, log.read_text(errors="replace")
    assert not record.exists(), "serve.json is removed when the server stops"


def _wait_for_record(record: Path, process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"paperscope serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            time.sleep(0.2)
            continue
        if data.get("pid") == process.pid:
            return str(data["url"])
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"paperscope serve did not start in {START_SECONDS} s:\n{log.read_text(errors='replace')}")


def make_home(home: Path, pdfs: list[Path], embedder: CachedEmbedder) -> Path:
    """`home` holding these papers (store closed again)."""
    settings = Settings(home=home)
    with PaperStore.open(settings, embedder) as store:
        report = ingest(pdfs, settings, store)
        assert not report.failed, report.failed
    return home


def upload(
    http: httpx.Client, path: Path, name: str | None = None, *, kind: str = "application/pdf", **fields: str
) -> httpx.Response:
    """POST /v1/documents with the file at `path` (under `name`, declared as `kind`) and form `fields`."""
    with path.open("rb") as fh:
        return http.post("/v1/documents", files={"file": (name or path.name, fh, kind)}, data=fields)


def wait_job(http: httpx.Client, job_id: str, timeout: float = 300.0) -> dict[str, Any]:
    """The job once it is done or failed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    pytest.fail(f"job {job_id} did not end in {timeout} s")


def sse_events(response: httpx.Response) -> list[Any]:
    """The `data:` payloads of an event stream, `[DONE]` included as a string."""
    out: list[Any] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out
